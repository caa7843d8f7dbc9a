package engine

import (
	"context"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// JSON-RPC batches, which a 2025-03-26 session must accept: the transport delivers the batch as
// one message, each element wrapped as an inbound of its own whose answers go to the batch's
// stream; the connection actor decides from the session's revision whether to serve it (as if
// its elements had come one by one) or to refuse it whole, as every other revision does. The
// responses are gathered and sent as one array once every request of the batch has answered;
// what a handler sends before its response (progress, log messages, requests to the client)
// goes out at once. A cancelled request has no place in the array, and a batch whose requests
// were all cancelled sends nothing.

// inboundBatch: transport → connection. A JSON-RPC batch: its elements (decoded, each with the
// stream of its answers), the errors of those that could not be, and the stream its array of
// responses goes to.
type inboundBatch struct {
	ctx     context.Context // the transport's, for the elements' spans
	items   []*inbound
	errs    []protocol.BatchItem // encoded only once the batch is accepted
	tooLong bool                 // more than protocol.MaxBatchLength elements
	out     *batchStream
}

// DeliverBatch hands the connection one JSON-RPC batch, read by [protocol.DecodeInput]; the
// array of its responses, or the error that refuses it, goes to s. The elements that could not
// be decoded are answered in the array with their error. It never blocks, as
// [Connection.DeliverWith] does not, and id and ctx are as there.
func (c *Connection) DeliverBatch(ctx context.Context, items []protocol.BatchItem, s Stream, id *tools.Identity) {
	b := &inboundBatch{ctx: ctx, out: &batchStream{dst: s}, tooLong: len(items) > protocol.MaxBatchLength}
	if b.tooLong {
		items = nil // refused whole: nothing of it is served
	}
	toolsets := ToolsetsFromContext(ctx)
	c.noteViewer(id, toolsets)
	for _, it := range items {
		if it.Err != nil {
			b.errs = append(b.errs, it)
			continue
		}
		in := newInbound(it.Msg, &batchItem{b: b.out}, id)
		in.toolsets = toolsets
		in.cost = inboundCost(it.Msg)
		c.inbox.add(in.cost)
		b.items = append(b.items, in)
	}
	b.out.pending = len(b.items)
	c.send(b)
}

// receiveBatch serves a batch in a session whose revision has them, and refuses it whole
// otherwise: -32600 with id null, as a batch always was before it.
func (c *connectionActor) receiveBatch(ctx actor.Context, b *inboundBatch) {
	var refusal *protocol.WireError
	switch {
	case !c.initialized || !protocol.RevisionOf(c.version).Has(protocol.FeatureBatches):
		refusal = protocol.ErrBatchUnsupported()
	case b.tooLong:
		refusal = protocol.ErrBatchTooLong()
	case len(b.items) == 0 && len(b.errs) == 0:
		refusal = protocol.ErrEmptyBatch()
	}
	if refusal != nil {
		for _, in := range b.items {
			c.conn.inbox.done(in.cost)
		}
		reply(b.out.dst, protocol.EncodeError(protocol.ID{}, refusal))
		return
	}
	for _, it := range b.errs {
		var mid protocol.ID
		if it.Msg != nil {
			mid = it.Msg.ID
		}
		b.out.frames = append(b.out.frames, protocol.EncodeError(mid, it.Err))
	}
	if len(b.items) == 0 {
		b.out.flush() // nothing but elements that could not be decoded
		return
	}
	for _, in := range b.items {
		if in.modern {
			// The modern revision has no batches: its request is answered alone, in place.
			c.conn.inbox.done(in.cost)
			reply(in.stream, protocol.EncodeError(in.msg.ID, protocol.ErrInvalidRequest(
				"a %s request cannot be part of a batch", protocol.LatestModernVersion)))
			continue
		}
		if t := c.eng.tel; t != nil && !in.msg.IsResponse() {
			in.rec = t.receive(b.ctx, c.conn, in)
		}
		c.receiveInbound(ctx, in)
	}
}

// batchStream gathers the responses to the requests of one batch and sends them as one array
// on dst once every element's stream has closed; messages that are not responses go to dst at
// once. Its methods are safe for concurrent use.
type batchStream struct {
	dst Stream

	mu      sync.Mutex
	pending int      // elements whose stream has not closed
	frames  [][]byte // the responses gathered so far
}

func (b *batchStream) send(frame []byte) {
	if !protocol.KindOf(frame).IsResponse() {
		b.dst.Send(frame)
		return
	}
	b.mu.Lock()
	b.frames = append(b.frames, frame)
	b.mu.Unlock()
}

// done counts one element's stream closed; the last one flushes the batch.
func (b *batchStream) done() {
	b.mu.Lock()
	b.pending--
	last := b.pending == 0
	b.mu.Unlock()
	if last {
		b.flush()
	}
}

// flush sends the responses gathered, if any, as one array, and ends dst.
func (b *batchStream) flush() {
	b.mu.Lock()
	frames := b.frames
	b.frames = nil
	b.mu.Unlock()
	if len(frames) > 0 {
		b.dst.Send(protocol.EncodeBatch(frames))
	}
	b.dst.Close()
}

// batchItem is the stream of one element of a batch.
type batchItem struct {
	b      *batchStream
	closed sync.Once
}

func (s *batchItem) Send(frame []byte) { s.b.send(frame) }

// Close counts the element done, once.
func (s *batchItem) Close() { s.closed.Do(s.b.done) }

// Streaming reports whether the batch's stream can carry messages before the responses.
func (s *batchItem) Streaming() bool {
	st, ok := s.b.dst.(Streamer)
	return !ok || st.Streaming()
}

// Disconnect passes client.CloseStream on to the batch's stream.
func (s *batchItem) Disconnect() bool {
	d, ok := s.b.dst.(Disconnecter)
	return ok && d.Disconnect()
}
