package main

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
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
func startGateway(srv *toolgrain.Server, mounts []gateway.Mount, log *zap.Logger) (*gateway.Gateway, error) {
	if len(mounts) == 0 {
		return nil, nil
	}
	gw, err := gateway.New(srv, gateway.Options{Logger: log})
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
