// Package enginehook lets packages of the module reach the engine of a *toolgrain.Server
// without the root package exporting it: the root package registers the accessor when it is
// initialised, and package gateway calls it.
package enginehook

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/engine"
)

// Server is what a mounted source needs of the server it is mounted on.
type Server struct {
	Engine *engine.Engine
	Logger *zap.Logger
	// Name and Version are the server's serverInfo.
	Name, Version string
	// The server's OpenTelemetry providers (nil when it records nothing), and the
	// propagation format of its trace context.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
}

var of func(srv any) (Server, bool)

// Register sets the accessor; package toolgrain calls it from an init function.
func Register(f func(srv any) (Server, bool)) { of = f }

// Of returns the engine side of srv, a *toolgrain.Server, and false for anything else.
func Of(srv any) (Server, bool) {
	if of == nil || srv == nil {
		return Server{}, false
	}
	return of(srv)
}
