package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// The service's own actors. inventory belongs to the host: it is spawned on the host's actor
// system, serves the host's HTTP routes and backs the "stock" and "reserve" tools. supplier is
// spawned by the MCP server from Props and backs the "restock" tool; the server supervises it
// and stops it on Close.

type (
	// getStock: HTTP route → inventory (RequestFuture). The reply is a stockLevels.
	getStock struct{}
	// stockLevels: inventory → requester. A copy of every item's quantity.
	stockLevels map[string]int
	// addStock: supplier → inventory. An order was delivered. No reply.
	addStock struct {
		item string
		qty  int
	}
	// orderDelivered: timer → supplier. The order of call id has arrived.
	orderDelivered struct{ id string }
)

// inventory keeps the stock. It answers the tools' calls directly: each is a map lookup, so
// there is nothing to hand off.
type inventory struct{ stock map[string]int }

func newInventory(initial map[string]int) func() actor.Actor {
	return func() actor.Actor { return &inventory{stock: maps.Clone(initial)} }
}

func (a *inventory) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *getStock:
		ctx.Respond(stockLevels(maps.Clone(a.stock)))
	case *addStock:
		a.stock[m.item] += m.qty
	case *tools.ActorCall:
		ctx.Respond(a.call(m))
	case *tools.ActorCancel:
		// Calls are answered at once; there is never work left to stop.
	}
}

// call answers one tool call. Unknown items and short stock are the client's to fix, so they
// are public error results.
func (a *inventory) call(c *tools.ActorCall) any {
	var in reserveIn // stock's arguments are its item alone
	if err := json.Unmarshal(c.Arguments, &in); err != nil {
		return &tools.ActorError{Err: fmt.Errorf("inventory: arguments: %w", err)}
	}
	have, known := a.stock[in.Item]
	if !known {
		return &tools.ActorResult{Result: tools.ErrorResult(fmt.Sprintf("unknown item %q", in.Item))}
	}
	switch c.Tool {
	case "stock":
		return &tools.ActorResult{Result: &tools.Result{
			Content:           []protocol.Content{protocol.TextContent(fmt.Sprintf("%d %s in stock", have, in.Item))},
			StructuredContent: stockOut{Item: in.Item, Qty: have},
		}}
	case "reserve":
		if in.Qty > have {
			return &tools.ActorResult{Result: tools.ErrorResult(fmt.Sprintf("only %d %s in stock", have, in.Item))}
		}
		a.stock[in.Item] = have - in.Qty
		return &tools.ActorResult{Result: tools.TextResult(fmt.Sprintf("reserved %d %s, %d left", in.Qty, in.Item, have-in.Qty))}
	}
	return &tools.ActorError{Err: fmt.Errorf("inventory: no tool %q", c.Tool)}
}

// suppliers are the simulated suppliers the "restock" tool orders from, each standing for one
// way an integration behaves: by name, how long a delivery takes, or how the order fails.
var suppliers = map[string]struct {
	delay time.Duration
	fails string // "", "outage" or "bug"
}{
	"acme":     {delay: 20 * time.Millisecond},
	"slowpoke": {delay: 10 * time.Minute}, // answers long after any timeout
	"offline":  {fails: "outage"},
	"glitchy":  {fails: "bug"},
}

// errSupplierOutage is the private detail of a failing supplier: the client never sees it.
var errSupplierOutage = errors.New("supplier api: dial tcp 192.0.2.10:443: i/o timeout")

// order is a restock in progress.
type order struct {
	call  *tools.ActorCall
	item  string
	qty   int
	timer *time.Timer
}

// supplier places restock orders. An order takes time, so the actor never waits for it: a
// timer sends it orderDelivered, and in between the actor keeps serving other calls and
// cancellations.
type supplier struct {
	inventory *actor.PID
	cancelled *atomic.Int64 // orders dropped after an ActorCancel, for the service's status
	orders    map[string]*order
}

func newSupplier(inventory *actor.PID, cancelled *atomic.Int64) func() actor.Actor {
	return func() actor.Actor {
		return &supplier{inventory: inventory, cancelled: cancelled, orders: make(map[string]*order)}
	}
}

func (s *supplier) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Stopping, *actor.Restarting:
		for _, o := range s.orders {
			o.timer.Stop()
		}
	case *tools.ActorCall:
		s.place(ctx, m)
	case *orderDelivered:
		o, ok := s.orders[m.id]
		if !ok {
			return // cancelled meanwhile
		}
		delete(s.orders, m.id)
		ctx.Send(s.inventory, &addStock{item: o.item, qty: o.qty})
		ctx.Send(o.call.ReplyTo, &tools.ActorResult{Result: tools.TextResult(fmt.Sprintf("restocked %d %s", o.qty, o.item))})
	case *tools.ActorCancel:
		if o, ok := s.orders[m.ID]; ok {
			o.timer.Stop()
			delete(s.orders, m.ID)
			s.cancelled.Add(1)
		}
	}
}

func (s *supplier) place(ctx actor.Context, c *tools.ActorCall) {
	var in restockIn
	if err := json.Unmarshal(c.Arguments, &in); err != nil {
		ctx.Respond(&tools.ActorError{Err: fmt.Errorf("supplier: arguments: %w", err)})
		return
	}
	sup, ok := suppliers[in.Supplier]
	switch {
	case !ok:
		ctx.Respond(&tools.ActorResult{Result: tools.ErrorResult(fmt.Sprintf("no supplier named %q", in.Supplier))})
		return
	case sup.fails == "outage":
		ctx.Respond(&tools.ActorError{Err: fmt.Errorf("order %d %s from %s: %w", in.Qty, in.Item, in.Supplier, errSupplierOutage)})
		return
	case sup.fails == "bug":
		var byItem map[string]int
		//lint:ignore SA5000 the supplier's deliberate bug
		byItem[in.Item] = in.Qty // a nil-map write: the kind of bug that makes an actor panic
	}
	self, root, id := ctx.Self(), ctx.ActorSystem().Root, c.ID
	s.orders[id] = &order{call: c, item: in.Item, qty: in.Qty,
		timer: time.AfterFunc(sup.delay, func() { root.Send(self, &orderDelivered{id: id}) })}
}
