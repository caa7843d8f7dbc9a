package toolgrain

import "github.com/toolgrain/toolgrain/internal/enginehook"

func init() {
	enginehook.Register(func(v any) (enginehook.Server, bool) {
		s, ok := v.(*Server)
		if !ok || s == nil {
			return enginehook.Server{}, false
		}
		return enginehook.Server{Engine: s.eng, Logger: s.cfg.Logger, Name: s.cfg.Name, Version: s.cfg.Version,
			TracerProvider: s.cfg.Telemetry.TracerProvider, MeterProvider: s.cfg.Telemetry.MeterProvider, Propagator: s.cfg.Telemetry.Propagator}, true
	})
}
