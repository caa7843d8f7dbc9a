package cluster

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
)

// TestForwardCutBeforeItsEnd: the edge's connection to the home is reported terminated while a
// forwarded JSON answer is on its way, its head and part of its body already at the edge. That
// is what protoactor-go does at a member's restart: an endpoint writer that failed to dial the
// earlier process reports the end of the address 2 s later, which tears down the connection to
// the new process and every watch over it (and the writer it stops reports it once more). The
// client gets a whole answer to act on, never a cut one: a tasks/get is refused as one to send
// again (503, Retry-After, -31000 task-home), and sent again it is answered; a legacy session's
// request answers 404, as for a home gone. An event stream goes to its client as it comes, and
// a cut one is cut for its client too (it resumes with Last-Event-ID).
func TestForwardCutBeforeItsEnd(t *testing.T) {
	a, b := startPair(t)
	// The home's handler answers whole, except when cutNext is set: then it writes a head
	// that announces the whole body's length and half of the body, flushed (HEAD and a BODY
	// go to the edge), tells the test, and holds the rest until the edge ends the request (its
	// stream actor gone: the context is cancelled) or the test ends.
	const answer = `{"jsonrpc":"2.0","id":1,"result":{"answered":"by the home"}}`
	var cutNext atomic.Bool
	flushed, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	b.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == protocol.MediaTypeEventStream {
			w.Header().Set("Content-Type", protocol.MediaTypeEventStream)
		} else {
			w.Header().Set("Content-Type", protocol.MediaTypeJSON)
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		}
		if !cutNext.CompareAndSwap(true, false) {
			_, _ = io.WriteString(w, answer)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, answer[:len(answer)/2])
		w.(http.Flusher).Flush()
		flushed <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
		_, _ = io.WriteString(w, answer[len(answer)/2:])
	}), 0)
	edge := httptest.NewServer(a.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the edge served a request homed on the other member")
		w.WriteHeader(http.StatusTeapot)
	}), 0))
	defer edge.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	// send sends a request through the edge and returns the client's view.
	send := func(req *http.Request) (int, http.Header, string, error) {
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body), err
	}
	// cut sends req through the edge with cutNext set and, once the edge has the head of the
	// home's answer (a JSON one: the edge counted it; an event stream: its client read the
	// half the home sent), reports the home's address terminated on the edge. It returns the
	// client's view. The hop takes milliseconds: the 10 s bounds only stop a hung test.
	cut := func(req *http.Request) (status int, hdr http.Header, body string, err error) {
		t.Helper()
		sse := req.Header.Get("Accept") == protocol.MediaTypeEventStream
		type answered struct {
			resp *http.Response
			err  error
		}
		var done chan answered
		var headed int64
		// The edge may still take the home for unreachable (a terminated report of a writer
		// protoactor-go stopped can come after the last request was answered): then it answers
		// at once, without the home, and the request is sent again, every 50 ms for at most
		// 10 s (deadHold and some), a bound that only stops a hung test.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			headed = a.stats.headed.Load()
			cutNext.Store(true)
			done = make(chan answered, 1)
			body, _ := req.GetBody()
			again := req.Clone(req.Context())
			again.Body = body
			// Owned by this test: it ends when the edge answers, which its handler always does.
			go func() {
				resp, err := hc.Do(again)
				done <- answered{resp, err}
			}()
			var early answered
			select {
			case <-flushed:
			case early = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the home did not get the request")
			}
			if early.resp == nil && early.err == nil {
				break // the home has it, and holds the rest of its answer
			}
			cutNext.Store(false)
			if early.err != nil {
				return 0, nil, "", early.err
			}
			_, _ = io.Copy(io.Discard, early.resp.Body)
			_ = early.resp.Body.Close()
			if time.Now().After(deadline) {
				t.Fatalf("the edge answered %d without the home for 10 s", early.resp.StatusCode)
			}
		}
		var got answered
		var read []byte
		if sse {
			if got = <-done; got.err != nil {
				return 0, nil, "", got.err
			}
			defer got.resp.Body.Close()
			read = make([]byte, len(answer)/2)
			if _, err := io.ReadFull(got.resp.Body, read); err != nil {
				return 0, nil, "", err
			}
		} else {
			for deadline := time.Now().Add(10 * time.Second); a.stats.headed.Load() == headed; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the home's head did not reach the edge")
				}
			}
		}
		a.system.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: b.addr})
		if !sse {
			if got = <-done; got.err != nil {
				return 0, nil, "", got.err
			}
			defer got.resp.Body.Close()
		}
		rest, err := io.ReadAll(got.resp.Body)
		return got.resp.StatusCode, got.resp.Header, string(read) + string(rest), err
	}

	id, err := taskstore.NewID(b.ownTaskHome())
	if err != nil {
		t.Fatal(err)
	}
	task := func() *http.Request {
		body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + id + `"}}`
		req, _ := http.NewRequest(http.MethodPost, edge.URL+"/mcp", strings.NewReader(body))
		req.Header.Set(protocol.HeaderProtocolVersion, protocol.LatestModernVersion)
		req.Header.Set(protocol.HeaderMethod, protocol.MethodTasksGet)
		req.Header.Set("Accept", protocol.MediaTypeJSON)
		return req
	}
	// sendAgain sends the tasks/get again, as a client does after a 503, until it is answered:
	// the edge takes the home for unreachable until a new connection to it is up (for at most
	// deadHold), and the writers protoactor-go stops report the address's end again, which
	// may end a connection made meanwhile. Polled every 50 ms for at most 10 s (deadHold and
	// some), a bound that only stops a hung test.
	sendAgain := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			status, _, body, err := send(task())
			if err == nil && status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
				continue
			}
			if err != nil || status != http.StatusOK || body != answer {
				t.Fatalf("tasks/get sent again: %d %q %v, want 200 %s", status, body, err, answer)
			}
			return
		}
	}

	status, hdr, body, err := cut(task())
	const busy = `{"jsonrpc":"2.0","id":null,"error":{"code":-31000,"message":"Server busy: the cluster member holding this task cannot be reached now","data":{"scope":"task-home"}}}`
	if err != nil || status != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "1" || body != busy {
		t.Fatalf("tasks/get whose answer was cut: %d, Retry-After %q, %q, %v\nwant 503, 1, %s", status, hdr.Get("Retry-After"), body, err, busy)
	}
	sendAgain()

	session := func(accept string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, edge.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set(protocol.HeaderSessionID, b.newSessionID())
		req.Header.Set("Accept", accept)
		return req
	}
	status, _, body, err = cut(session(protocol.MediaTypeJSON))
	const notFound = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found: session not found"}}`
	if err != nil || status != http.StatusNotFound || body != notFound {
		t.Fatalf("a session's request whose answer was cut: %d, %q, %v\nwant 404 %s", status, body, err, notFound)
	}
	sendAgain()

	status, hdr, body, err = cut(session(protocol.MediaTypeEventStream))
	if err != nil || status != http.StatusOK || hdr.Get("Content-Type") != protocol.MediaTypeEventStream || body != answer[:len(answer)/2] {
		t.Fatalf("an event stream cut: %d, %q, %q, %v; want 200, %s and the half the home sent", status, hdr.Get("Content-Type"), body, err, protocol.MediaTypeEventStream)
	}
}
