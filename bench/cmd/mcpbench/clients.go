package main

import (
	"flag"
	"strings"

	"github.com/toolgrain/toolgrain/bench/scenario"
)

// The clients scenario: N connected clients of one kind, what they cost the server and how fast
// a change reaches them (bench/scenario/clients.go).
func init() {
	scenarios["clients"] = scenarioSpec{"clients",
		"N connected clients of one kind held open (HTTP): server memory per client, time to open, idle CPU, fan-out of a change",
		scenario.Clients, clientsFlags}
}

func clientsFlags(fs *flag.FlagSet, cfg *scenario.Config) {
	cfg.N = 1000
	cc := &cfg.Clients
	fs.StringVar(&cc.Kind, "kind", scenario.KindListen, "the clients: "+strings.Join(scenario.ClientKinds, ", ")+
		" (session: a legacy session, its connection closed; get: a legacy session with its GET stream open; listen: an open subscriptions/listen; mixed: get and listen alternately)")
	fs.IntVar(&cfg.N, "n", cfg.N, "clients to open")
	fs.IntVar(&cc.Parallel, "parallel", 32, "clients opened at once")
	fs.Var(seconds{&cc.Settle}, "settle", "wait after the last client opened, before the memory sample, for the steady cost (default 10s)")
	fs.Var(seconds{&cc.Idle}, "idle", "window over which the server's CPU is measured with every client open and idle (default 30s; negative: skip)")
	fs.StringVar(&cc.Trigger, "trigger", "", `server tool that changes a list when called with {"list":"tools"} and announces an update of resource U with {"uri":U}: the fan-out is measured with it`)
	fs.StringVar(&cc.Subscribe, "subscribe", "", "resource URI every stream subscribes to, whose update the trigger announces")
	fs.IntVar(&cc.Rounds, "rounds", 3, "changes of each sort measured")
	fs.Var(seconds{&cc.FanoutWait}, "fanout-wait", "how long one change may take to reach every stream (default 5s)")
	fs.Var(seconds{&cfg.Timeout}, "timeout", "limit for each HTTP exchange while opening, and for each trigger call")
}
