package toolgrain

import (
	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/internal/faults"
)

// InjectEngineFault makes the engine call fn at its fault points (FaultRequestStart,
// FaultRequestAnswer) with the tool concerned; fn may panic to simulate a bug in the engine's
// own code. The returned function removes it.
func InjectEngineFault(fn func(point, tool string)) (restore func()) { return faults.Set(fn) }

// The engine's fault points.
const (
	FaultRequestStart  = faults.RequestStart
	FaultRequestAnswer = faults.RequestAnswer
)

// EngineOccupancy returns what the server's engine holds now: connection actors, calls in
// flight and open listen streams.
func EngineOccupancy(s *Server) actors.Occupancy { return s.eng.Occupancy() }
