package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"go.uber.org/zap"
)

// handlePprof mounts the runtime profiles of net/http/pprof at /debug/pprof/ on mux.
func handlePprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// servePprof serves the runtime profiles of net/http/pprof at http://addr/debug/pprof/ on a
// listener of their own, never on the MCP endpoint. It returns the address it listens on and a
// function that closes the listener.
func servePprof(addr string, log *zap.Logger) (string, func(), error) {
	mux := http.NewServeMux()
	handlePprof(mux)
	return serveSide("pprof", addr, mux, log)
}

// serveSide serves h on a listener of its own at addr, for a side channel of the server
// (profiles, health, metrics). It returns the address it listens on and a function that closes
// the listener and waits for the server's goroutine.
func serveSide(name, addr string, h http.Handler, log *zap.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	// Bounded as the MCP endpoint's listener is: a side channel is no reason to take a 1 MiB
	// header, or to wait forever for one.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: zap.NewStdLog(log.Named(name))}
	log.Info(name, zap.String("addr", ln.Addr().String()))
	served := make(chan struct{})
	// Owned by serveSide's caller: the returned function closes the server and waits for it.
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() { _ = srv.Close(); <-served }, nil
}
