package engine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// initializeWith is an initialize declaring an experimental capability of about size bytes
// and a client name, both distinct for each tag.
func initializeWith(tag string, size int) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{"experimental":{"` + tag + `":"` + strings.Repeat("x", size) + `"}},"clientInfo":{"name":"c-` + tag + `","version":"1"}}}`
}

// internedLen returns the entries of the engine's two intern tables.
func (e *Engine) internedLen() (caps, info int) {
	return e.interned.capsT.len(), e.interned.infoT.len()
}

// TestInternedValuesGo: the intern tables share what clients declare among their connections
// while any holds it, take nothing large, and let a value go once the last connection that
// declared it has ended (after a collection and the cleanup it runs).
func TestInternedValuesGo(t *testing.T) {
	e := passivationEngine(t)
	open := func(raw string) *Connection {
		t.Helper()
		out := make(frames, 1)
		c, err := e.ConnectIdle("http", nil)
		if err != nil {
			t.Fatal(err)
		}
		deliver(t, c, raw, out)
		if got := out.next(t); !strings.Contains(got, `"result"`) {
			t.Fatalf("initialize: %s", got)
		}
		return c
	}
	// Equal declarations share one copy; a large one is the connection's own.
	a, b := open(initializeWith("same", 10)), open(initializeWith("same", 10))
	if a.snap.caps != b.snap.caps || a.snap.info != b.snap.info {
		t.Error("two connections that declared the same hold two copies")
	}
	large := open(initializeWith("large", maxInternedSize))
	if caps, info := e.internedLen(); caps != 1 || info != 2 {
		t.Errorf("intern tables: %d capabilities, %d client infos; want 1 and 2 (the large capabilities not taken)", caps, info)
	}
	var conns []*Connection
	for i := range 300 {
		conns = append(conns, open(initializeWith(fmt.Sprintf("t%d", i), 100)))
	}
	if caps, info := e.internedLen(); caps != 301 || info != 302 {
		t.Errorf("intern tables: %d, %d; want 301 and 302", caps, info)
	}
	for _, c := range append(conns, a, large) {
		c.Close()
		<-c.Done()
	}
	conns, a, large = nil, nil, nil
	// The cleanups run on the runtime's goroutine after the collection that found the values
	// unreachable: wait for them (at most 10 s, a loaded machine's worth of margin).
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		caps, info := e.internedLen()
		if caps == 1 && info == 1 {
			break // b's, which it still holds
		}
		if time.Now().After(deadline) {
			t.Fatalf("intern tables after the connections ended: %d capabilities, %d client infos; want 1 and 1", caps, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close()
	<-b.Done()
}

// TestInternTableBounded: a table holds at most maxInterned values; past it, a new value is not
// interned (the connection keeps its own), and an equal one already interned is still shared.
func TestInternTableBounded(t *testing.T) {
	var tab internTable[string, int]
	vals := make([]*int, maxInterned+10)
	for i := range vals {
		v := i
		vals[i] = &v
		if got := tab.intern(fmt.Sprint(i), vals[i]); got != vals[i] {
			t.Fatalf("value %d: got another copy", i)
		}
	}
	if n := tab.len(); n != maxInterned {
		t.Errorf("%d entries, want %d", n, maxInterned)
	}
	again := 0
	if got := tab.intern("0", &again); got != vals[0] {
		t.Error("an interned value is not shared once the table is full")
	}
	runtime.KeepAlive(vals)
}
