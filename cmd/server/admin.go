package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/cluster"
)

// The admin listener (--admin-addr): what an orchestrator and a metrics scraper ask of the
// server, on a listener apart from the MCP endpoint.
//
//	/healthz       200 while the server's actors answer (Server.Live), 503 otherwise
//	/readyz        200 while it serves below its limits (Server.Ready) and every --mount upstream
//	               is served (gateway.Gateway.Ready), 503 with the reason otherwise
//	/metrics       Prometheus: the metrics/prom collector, the Go runtime and the process, and
//	               OpenTelemetry's metrics when OTEL_METRICS_EXPORTER lists prometheus
//	/debug/pprof/  the runtime profiles, as --pprof serves them
//	/tags/...      POST: enable, disable or reset tags while the server runs (visibility.go)

// liveTimeout bounds one liveness probe.
const liveTimeout = time.Second

// serveAdmin serves the admin endpoints of srv, with its readiness from ready and the metrics
// gathered from reg, at addr.
// It returns the address it listens on and a function that closes the listener.
func serveAdmin(addr string, srv *toolgrain.Server, ready func() error, node *cluster.Node, reg prometheus.Gatherer, log *zap.Logger) (string, func(), error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), liveTimeout)
		defer cancel()
		probe(w, srv.Live(ctx))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { probe(w, ready()) })
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: zap.NewStdLog(log.Named("metrics"))}))
	if node != nil {
		mux.HandleFunc("/cluster", func(w http.ResponseWriter, _ *http.Request) { clusterView(w, srv, node) })
	}
	mux.HandleFunc("/tags/", func(w http.ResponseWriter, r *http.Request) { changeTags(w, r, srv) })
	handlePprof(mux)
	return serveSide("admin", addr, mux, log)
}

// clusterView answers /cluster: this member's view of the cluster, as JSON.
func clusterView(w http.ResponseWriter, srv *toolgrain.Server, node *cluster.Node) {
	st := node.Stats()
	members := node.Members()
	sort.Strings(members)
	view := struct {
		Address   string   `json:"address"`
		Members   []string `json:"members"`
		Sessions  int      `json:"sessions"`
		Forwarded int64    `json:"forwarded"`
		Served    int64    `json:"served"`
		Streams   int64    `json:"forwarding_now"`
		Homes     int64    `json:"serving_forwarded_now"`
		HopMeanUS float64  `json:"forward_mean_us"`
	}{node.Address(), members, srv.Sessions(), st.Forwarded, st.Served, st.Streams, st.Homes, st.ForwardMean.Seconds() * 1e6}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(view)
}

// probe answers a health probe: 200 "ok", or 503 with the reason.
func probe(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
