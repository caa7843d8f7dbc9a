package main

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/cluster"
	"github.com/toolgrain/toolgrain/tools"
)

// The demonstration of tools on other members: a member started with --cluster-worker runs the
// actor workerName, which serves the tool remote_sleep; a member started with
// --cluster-remote-tools ADDR,... serves remote_sleep by sending its calls (tools.ActorCall) to
// that actor on the members whose remote addresses are listed, round robin over those alive.

// workerName is the name of the demonstration worker actor.
const workerName = "toolgrain-worker"

// remoteSleepTool is the tool whose calls run on the worker members at workerAddrs, round robin
// over those alive.
func remoteSleepTool(node *cluster.Node, workerAddrs []string) tools.Tool {
	return tools.Tool{
		Name:        "remote_sleep",
		Description: "Waits ms milliseconds on a worker member of the cluster, honouring cancellation; text `slept remotely`.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"]}`),
		Handler:     tools.NewActorPickHandler(node.System(), node.Picker(workerName, workerAddrs...)),
		Timeout:     10 * time.Minute,
	}
}

// startWorker spawns the worker actor on the member's system; stop stops it and waits for the
// calls it runs to end.
func startWorker(node *cluster.Node, log *zap.Logger) (stop func(), err error) {
	w := &worker{log: log.Named("worker"), calls: make(map[string]context.CancelFunc), runs: &sync.WaitGroup{}}
	root := node.System().Root
	pid, err := root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return w }), workerName)
	if err != nil {
		return nil, err
	}
	return func() {
		_ = root.StopFuture(pid).Wait()
		w.runs.Wait()
	}, nil
}

// worker runs remote_sleep calls, each on a goroutine of its own, and cancels them on
// tools.ActorCancel.
type worker struct {
	log   *zap.Logger
	calls map[string]context.CancelFunc
	runs  *sync.WaitGroup
}

// runEnded: a call's goroutine -> worker, when the call ended.
type runEnded struct{ id string }

func (w *worker) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Stopping:
		for _, cancel := range w.calls {
			cancel()
		}
	case *tools.ActorCall:
		var in struct {
			MS int `json:"ms"`
		}
		_ = json.Unmarshal(m.Arguments, &in) // validated by the serving member
		ctx, cancel := context.WithCancel(context.Background())
		w.calls[m.ID] = cancel
		w.log.Info("worker call", zap.String("id", m.ID), zap.Int("ms", in.MS))
		root, self := c.ActorSystem().Root, c.Self()
		w.runs.Add(1)
		// Owned by the worker: it ends when the wait is over or the call is cancelled (an
		// ActorCancel, or the worker stopping); stop waits for it.
		go func() {
			defer w.runs.Done()
			defer root.Send(self, &runEnded{m.ID})
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				root.Send(m.ReplyTo, &tools.ActorResult{Result: tools.TextResult("slept remotely")})
			case <-ctx.Done():
			}
		}()
	case *tools.ActorCancel:
		if cancel, ok := w.calls[m.ID]; ok {
			cancel()
			w.log.Info("worker call cancelled", zap.String("id", m.ID))
		}
	case *runEnded:
		if cancel, ok := w.calls[m.id]; ok {
			cancel()
			delete(w.calls, m.id)
		}
	}
}
