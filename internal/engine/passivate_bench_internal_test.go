package engine

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// typicalInitialize is what real clients declare: a few capabilities and a name.
const typicalInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
	`"capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}},"clientInfo":{"name":"claude-code","version":"2.0.1"}}}`

func benchEngine(b *testing.B) *Engine {
	b.Helper()
	set, err := tools.Compile(nil)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := Start(Config{Tools: set})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	return eng
}

func benchDeliver(b *testing.B, c *Connection, raw string, s Stream) {
	m, werr := protocol.Decode([]byte(raw))
	if werr != nil {
		b.Fatal(werr)
	}
	c.Deliver(m, s)
}

// BenchmarkPassivationCycle measures one idle session's round trip: its actor let go (the
// state kept in the record, what the client declared interned), then brought back by a ping.
func BenchmarkPassivationCycle(b *testing.B) {
	eng := benchEngine(b)
	out := make(frames, 4)
	c, err := eng.ConnectNotify("http", nil)
	if err != nil {
		b.Fatal(err)
	}
	benchDeliver(b, c, typicalInitialize, out)
	<-out
	ping, _ := protocol.Decode([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	b.ReportAllocs()
	for b.Loop() {
		c.Passivate()
		for !c.Passive() {
			runtime.Gosched()
		}
		c.Deliver(ping, out)
		<-out
	}
}

// BenchmarkIdleSessionHeap measures the Go heap an idle session costs the engine: 2,000
// connections opened passive, initialized (each from its record, as a legacy HTTP session),
// the heap after a collection before and after, divided by the connections. b.N is ignored
// beyond repeating the measure.
func BenchmarkIdleSessionHeap(b *testing.B) {
	const n = 2000
	eng := benchEngine(b)
	out := make(frames, n)
	var per float64
	for b.Loop() {
		conns := make([]*Connection, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range conns {
			c, err := eng.ConnectIdle("http", nil)
			if err != nil {
				b.Fatal(err)
			}
			benchDeliver(b, c, typicalInitialize, out)
			<-out
			conns[i] = c
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per = float64(after.HeapAlloc-before.HeapAlloc) / n
		for _, c := range conns {
			c.Close()
			<-c.Done()
		}
		runtime.KeepAlive(conns)
	}
	b.ReportMetric(per, "B/session")
}

// BenchmarkInternHit measures what each passivation pays to share what the client declared:
// the lookups of its capabilities and its client info, both interned already.
func BenchmarkInternHit(b *testing.B) {
	var t interned
	caps := protocol.ParseClientCapabilities([]byte(`{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}}`))
	info := &protocol.Implementation{Name: "claude-code", Version: "2.0.1"}
	t.caps(caps)
	t.info(info)
	b.ReportAllocs()
	for b.Loop() {
		t.caps(caps)
		t.info(info)
	}
}
