package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/tools"
)

// loadMounts reads the --mount files: a bad file is an error at start that names the file and
// the key.
func loadMounts(files []string) ([]gateway.Mount, error) {
	var all []gateway.Mount
	seen := map[string]string{}
	for _, f := range files {
		mounts, err := gateway.LoadConfig(f)
		if err != nil {
			return nil, fmt.Errorf("--mount: %w", err)
		}
		for _, m := range mounts {
			if other, dup := seen[m.Name]; dup {
				return nil, fmt.Errorf("--mount: %s: mcpServers.%q: already mounted from %s", f, m.Name, other)
			}
			seen[m.Name] = f
		}
		all = append(all, mounts...)
	}
	return all, nil
}

// startGateway mounts the upstreams on srv. Their components appear once each answers; one that
// cannot be reached does not stop the server (the log and /readyz say so).
func startGateway(srv *toolgrain.Server, mounts []gateway.Mount, scopes map[string][]string, log *zap.Logger) (*gateway.Gateway, error) {
	if len(mounts) == 0 {
		return nil, nil
	}
	gw, err := gateway.New(srv, gateway.Options{Logger: log, ToolScopes: scopes})
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		if err := gw.Mount(m); err != nil {
			_ = gw.Close()
			return nil, err
		}
		log.Info("mounted", zap.String("upstream", m.Name))
	}
	return gw, nil
}

// readiness is /readyz: the server below its limits, and every mounted upstream served.
func readiness(srv *toolgrain.Server, gw *gateway.Gateway) func() error {
	return func() error {
		if err := srv.Ready(); err != nil {
			return err
		}
		if gw != nil {
			return gw.Ready()
		}
		return nil
	}
}

// mountedScopes takes out of the --tool-scope values those naming no tool of the server's own,
// when upstreams are mounted: they name mounted tools (as served), whose scopes the gateway sets
// when it lists them.
func mountedScopes(specs []string, local []tools.Tool, mounting bool) ([]string, map[string][]string, error) {
	if !mounting {
		return specs, nil, nil
	}
	var keep []string
	mounted := map[string][]string{}
	for _, v := range specs {
		name, scopes, err := parseToolScope(v)
		if err != nil {
			return nil, nil, err
		}
		if slices.ContainsFunc(local, func(t tools.Tool) bool { return t.Name == name }) {
			keep = append(keep, v)
			continue
		}
		mounted[name] = append(mounted[name], scopes...)
	}
	return keep, mounted, nil
}

// waitMounts waits, at most d, for the mounted upstreams to be listed before the server serves,
// so that a client connecting at once sees their tools; one still not listed is served once it
// answers, and the log says which.
func waitMounts(gw *gateway.Gateway, d time.Duration, log *zap.Logger) {
	if gw == nil || d <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := gw.WaitReady(ctx); err != nil {
		log.Warn("serving before every mounted upstream is listed", zap.Error(err))
	}
}
