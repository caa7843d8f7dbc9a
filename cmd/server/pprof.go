package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"go.uber.org/zap"
)

// servePprof serves the runtime profiles of net/http/pprof at http://addr/debug/pprof/ on a
// listener of their own, never on the MCP endpoint. It returns the address it listens on and a
// function that closes the listener.
func servePprof(addr string, log *zap.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux}
	log.Info("pprof", zap.String("addr", ln.Addr().String()))
	served := make(chan struct{})
	// Owned by servePprof's caller: the returned function closes the server and waits for it.
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() { _ = srv.Close(); <-served }, nil
}
