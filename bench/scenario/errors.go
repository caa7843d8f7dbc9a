package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
)

// Marker is the text the demonstration fail tool puts in its internal
// failure messages; a reply holding it has leaked a private detail.
const Marker = "SECRET-internal-detail"

// Probe is what came back for one bad input in the errors scenario.
type Probe struct {
	Name   string `json:"name"`
	Sent   string `json:"sent"`   // what was sent, shortened
	Expect string `json:"expect"` // what the spec asks for
	Status int    `json:"http_status,omitempty"`
	Reply  string `json:"reply"` // what came back, shortened
	Code   *int64 `json:"code,omitempty"`
	// ID is how the reply's id compares with the request's: "exact",
	// "null", "absent", "changed: <id>", or "" when there was nothing to
	// compare.
	ID string `json:"id,omitempty"`
	// IDOK is true when the id is what the spec asks for: the request's id
	// byte for byte, or null when the request's id could not be read.
	IDOK     bool    `json:"id_ok,omitempty"`
	Leak     bool    `json:"leak"`
	Survived bool    `json:"survived"`
	Detail   string  `json:"detail,omitempty"`
	Millis   float64 `json:"ms"`
}

// Summary is the probe's outcome on one line.
func (p Probe) Summary() string {
	var b strings.Builder
	b.WriteString(p.Reply)
	if p.ID != "" {
		b.WriteString("; id " + p.ID)
	}
	if p.Leak {
		b.WriteString("; LEAKS " + Marker)
	}
	if p.Survived {
		b.WriteString("; session alive")
	} else {
		b.WriteString("; SESSION LOST")
		if p.Detail != "" {
			b.WriteString(" (" + p.Detail + ")")
		}
	}
	return b.String()
}

// probeDef is one bad input.
type probeDef struct {
	name, expect string
	// body builds the bytes to send; id is a fresh integer id.
	body func(id int64) []byte
	// wantID is the id the reply should carry, as JSON; nil means there is
	// no single id to compare.
	wantID func(id int64) string
	// slow marks a probe that may take the server a while to answer.
	slow bool
}

// builder builds the probes' bodies in one era: modern requests carry the
// envelope in params._meta, and ping, which the modern era removed, becomes
// server/discover.
type builder struct {
	modern bool
}

// ping is the method of the probes that only need some request to answer.
func (b builder) ping() string {
	if b.modern {
		return "server/discover"
	}
	return "ping"
}

func (b builder) request(id string, method string, params string) []byte {
	if b.modern {
		p, err := client.WithEnvelope([]byte(params))
		if err != nil {
			panic(err) // the battery's params are objects
		}
		params = string(p)
	}
	s := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"`
	if params != "" {
		s += `,"params":` + params
	}
	return []byte(s + "}")
}

func (b builder) toolCall(id int64, tool, args string) []byte {
	p := `{"name":"` + tool + `"`
	if args != "" {
		p += `,"arguments":` + args
	}
	return b.request(strconv.FormatInt(id, 10), "tools/call", p+"}")
}

func sameID(id int64) string { return strconv.FormatInt(id, 10) }

const hugeID = "123456789012345678901234567890"

// battery returns the probes, the ones that may kill a server last.
func battery(oversize int, era client.Era) []probeDef {
	b := builder{modern: era == client.Modern}
	nullID := func(int64) string { return "null" }
	ping := func(id string) func(int64) []byte {
		return func(int64) []byte { return b.request(id, b.ping(), "") }
	}
	call := func(tool, args string) func(int64) []byte {
		return func(id int64) []byte { return b.toolCall(id, tool, args) }
	}
	answer := "result {}"
	if b.modern {
		answer = "a discover result"
	}
	private := `isError result without the private text (e.g. "Tool execution failed")`
	return []probeDef{
		{name: "malformed JSON", expect: "error -32700 (parse error), id null",
			body: func(id int64) []byte {
				r := b.request(sameID(id), b.ping(), "")
				return r[:len(r)-1] // the closing brace is missing
			},
			wantID: nullID},
		{name: "no jsonrpc member", expect: "error -32600 (invalid request)",
			body: func(id int64) []byte {
				return bytes.Replace(b.request(sameID(id), b.ping(), ""), []byte(`"jsonrpc":"2.0",`), nil, 1)
			},
			wantID: sameID},
		{name: "batch array", expect: "error -32600: batches were removed in 2025-06-18",
			body: func(id int64) []byte {
				return []byte("[" + string(b.request(sameID(id), b.ping(), "")) + "," + string(b.request(sameID(id+1), b.ping(), "")) + "]")
			}},
		{name: "null id", expect: "error -32600: ids must not be null", body: ping("null"), wantID: nullID},
		{name: "string id", expect: answer + ` with the id "s-<n>" echoed`,
			body:   func(id int64) []byte { return b.request(`"s-`+sameID(id)+`"`, b.ping(), "") },
			wantID: func(id int64) string { return `"s-` + sameID(id) + `"` }},
		{name: "30-digit id", expect: answer + " with the id echoed digit for digit",
			body: ping(hugeID), wantID: func(int64) string { return hugeID }},
		{name: "unknown method", expect: "error -32601 (method not found)",
			body:   func(id int64) []byte { return b.request(sameID(id), "no/such/method", "{}") },
			wantID: sameID},
		{name: "unknown tool", expect: "error -32602 (unknown tool)", body: call("no-such-tool", "{}"), wantID: sameID},
		{name: "missing arguments", expect: "isError result with validation feedback (or -32602)",
			body: call("echo", ""), wantID: sameID},
		{name: "missing required field", expect: "isError result with validation feedback",
			body: call("echo", "{}"), wantID: sameID},
		{name: "wrong-typed argument", expect: "isError result with validation feedback",
			body: call("echo", `{"text":42}`), wantID: sameID},
		{name: "out-of-range argument", expect: "isError result with validation feedback",
			body: call("sleep", `{"ms":-1}`), wantID: sameID},
		{name: "value not in enum", expect: "isError result with validation feedback",
			body: call("fail", `{"mode":"nope"}`), wantID: sameID},
		{name: "cancel of an unknown id", expect: "no reply; the session goes on",
			body: func(int64) []byte {
				return []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":987654321}}`)
			}},
		{name: fmt.Sprintf("oversized message (%d bytes)", oversize),
			expect: "an answer or a clean rejection; the session goes on",
			body: func(id int64) []byte {
				args, _ := json.Marshal(map[string]string{"text": strings.Repeat("a", oversize)})
				return b.toolCall(id, "echo", string(args))
			},
			wantID: sameID, slow: true},
		{name: "fail result", expect: `isError result "public failure message"`,
			body: call("fail", `{"mode":"result"}`), wantID: sameID},
		{name: "fail error", expect: private, body: call("fail", `{"mode":"error"}`), wantID: sameID},
		{name: "fail provider", expect: private, body: call("fail", `{"mode":"provider"}`), wantID: sameID},
		{name: "fail bad-output", expect: private, body: call("fail", `{"mode":"bad-output"}`), wantID: sameID},
		{name: "fail panic", expect: private + "; the server survives",
			body: call("fail", `{"mode":"panic"}`), wantID: sameID},
	}
}

// Errors sends a battery of bad inputs one by one, recording for each what
// came back, whether the id was echoed exactly, whether the reply leaked the
// private marker, and whether the session still answered a ping afterwards
// (if not, it reconnects for the next probe). Then it runs the error path
// under load: fail calls with mode "error" at cfg.Concurrency for
// cfg.Duration, counting calls per second and replies that leak the marker.
func Errors(ctx context.Context, t Target, cfg Config) (*Result, error) {
	r := newResult("errors", t, map[string]any{
		"concurrency": cfg.Concurrency, "duration_sec": cfg.Duration.Seconds(),
		"warmup_sec": cfg.Warmup.Seconds(), "reply_wait_sec": cfg.ReplyWait.Seconds(),
		"oversize_bytes": cfg.Oversize,
	})
	c, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	r.connected(c)

	probes := battery(cfg.Oversize, t.era())
	var survived, idsOK, checked, leaks int
	prog := startProgress(cfg.Progress, func() string {
		return fmt.Sprintf("errors: %d/%d probes", len(r.Probes), len(probes))
	})
	for i, def := range probes {
		if c == nil {
			r.Probes = append(r.Probes, Probe{Name: def.name, Expect: def.expect, Reply: "not run: no connection"})
			continue
		}
		p := runProbe(ctx, c, def, probeID(i), cfg)
		if p.ID != "" {
			checked++
			if p.IDOK {
				idsOK++
			}
		}
		if p.Leak {
			leaks++
		}
		if p.Survived {
			survived++
		} else {
			c.Close()
			c = nil
			if nc, err := t.Dial(ctx); err == nil {
				c = nc
			} else {
				r.note("could not reconnect after %q: %v", def.name, err)
			}
		}
		r.Probes = append(r.Probes, p)
	}
	prog.Stop()
	r.set("probes", float64(len(probes)))
	r.set("probes_survived", float64(survived))
	r.set("ids_ok", float64(idsOK))
	r.set("ids_checked", float64(checked))
	r.set("battery_leaks", float64(leaks))

	if c == nil {
		r.note("no connection left for the error path under load")
		return r.finish(), nil
	}
	params := toolParams("fail", map[string]any{"mode": "error"})
	pid := t.pid(c)
	cpu := newWindow(t, pid)
	start, end := cpu.hooks()
	sum, lost := runLoad(ctx, cfg, cfg.Concurrency, func(ctx context.Context, w *worker) error {
		begin := time.Now()
		msg, err := callOnce(ctx, c, cfg.Timeout, "tools/call", params)
		done := time.Now()
		if err != nil {
			w.fail(begin, done, msg, err)
			return c.Lost()
		}
		if mentions(msg, Marker) {
			w.t.leaks++
		}
		if msg.Error != nil {
			w.t.rpcErrors++
		}
		w.record(outOK, begin, done)
		return nil
	}, loadHooks{windowStart: start, windowEnd: end, progress: loadLine("errors: fail load", cfg)})
	if lost != nil {
		r.note("connection lost during the fail load: %v", lost)
	}
	r.set("fail_calls_per_sec", float64(sum.ok)/cfg.Duration.Seconds())
	r.set("calls_total", float64(sum.all))
	r.set("errors", float64(sum.errors))
	noteErrors(r, sum)
	r.set("fail_leaks", float64(sum.leaks))
	r.set("fail_rpc_errors", float64(sum.rpcErrors))
	latencyMetrics(r, "", sum.lat)
	cpu.perCall(r, sum.ok)
	endSample(r, pid)
	return r.finish(), nil
}

// mentions reports whether the message's result or error contains s, as
// received (a marker spelled with JSON escapes would slip through; the
// battery's probes check the raw bytes the same way).
func mentions(msg *client.Message, s string) bool {
	if bytes.Contains(msg.Result, []byte(s)) {
		return true
	}
	e := msg.Error
	return e != nil && (strings.Contains(e.Message, s) || bytes.Contains(e.Data, []byte(s)))
}

// Probe ids: probe i sends id probeBase+i*probeStride (and the next ids,
// for a batch), so a late reply to one probe is not taken for another's.
const (
	probeBase   = 1_000_000
	probeStride = 10
)

func probeID(i int) int64 { return probeBase + int64(i)*probeStride }

// foreign reports whether m is a reply to another probe than the one whose
// id is own.
func foreign(m client.RawMessage, own int64) bool {
	if m.Msg == nil {
		return false
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(m.Msg.ID)), 10, 64)
	return err == nil && id >= probeBase && (id-probeBase)/probeStride != (own-probeBase)/probeStride
}

func runProbe(ctx context.Context, c *client.Client, def probeDef, id int64, cfg Config) Probe {
	body := def.body(id)
	p := Probe{Name: def.name, Expect: def.expect, Sent: shorten(string(body), 90)}
	wait := cfg.ReplyWait
	if def.slow {
		wait = max(wait, 10*time.Second)
	}
	reply, err := c.Raw(ctx, body, wait)
	if reply != nil {
		reply.Messages = slices.DeleteFunc(reply.Messages, func(m client.RawMessage) bool { return foreign(m, id) })
		p.Millis = ms(reply.Elapsed)
		p.Status = reply.Status
	}
	switch {
	case err != nil && (reply == nil || len(reply.Messages) == 0):
		p.Reply = "send failed: " + shorten(err.Error(), 100)
	default:
		p.Reply, p.Code = describeReply(reply)
		for _, m := range reply.Messages {
			if bytes.Contains(m.Raw, []byte(Marker)) {
				p.Leak = true
			}
		}
		if bytes.Contains(reply.Body, []byte(Marker)) {
			p.Leak = true
		}
		if def.wantID != nil {
			if resp := firstResponse(reply); resp != nil {
				p.ID, p.IDOK = compareID(resp.ID, def.wantID(id))
			}
		}
	}
	// Did the session survive?
	pctx, cancel := context.WithTimeout(ctx, max(cfg.ReplyWait, 2*time.Second))
	defer cancel()
	_, perr := c.Call(pctx, c.PingMethod(), nil)
	if perr == nil {
		perr = c.Alive()
	}
	if perr != nil {
		if alive := c.Alive(); alive != nil {
			perr = alive
		}
		p.Detail = shorten(perr.Error(), 100)
	}
	p.Survived = perr == nil
	return p
}

func firstResponse(reply *client.RawReply) *client.Message {
	for _, m := range reply.Messages {
		if m.Msg != nil && m.Msg.IsResponse() {
			return m.Msg
		}
	}
	return nil
}

// compareID describes the reply's id against the wanted one (JSON text).
func compareID(got json.RawMessage, want string) (string, bool) {
	g := strings.TrimSpace(string(got))
	switch {
	case got == nil:
		return "absent", false
	case g == "null":
		return "null", want == "null"
	case g == want:
		return "exact", true
	}
	return "changed: " + shorten(g, 40), false
}

// describeReply turns a probe's reply into one short line.
func describeReply(reply *client.RawReply) (string, *int64) {
	prefix := ""
	if reply.Status != 0 && reply.Status != 200 {
		prefix = fmt.Sprintf("HTTP %d: ", reply.Status)
	}
	if len(reply.Messages) == 0 {
		switch {
		case len(bytes.TrimSpace(reply.Body)) > 0:
			return prefix + "body " + shorten(string(bytes.TrimSpace(reply.Body)), 80), nil
		case prefix != "":
			return strings.TrimSuffix(prefix, ": ") + ", no body", nil
		}
		return "no reply", nil
	}
	first := reply.Messages[0]
	if first.Batch {
		prefix += fmt.Sprintf("batch of %d: ", len(reply.Messages))
	} else if len(reply.Messages) > 1 {
		prefix += fmt.Sprintf("%d messages, first: ", len(reply.Messages))
	}
	if first.Msg == nil {
		return prefix + "non-JSON output " + shorten(string(first.Raw), 60), nil
	}
	s, code := describeMessage(first.Msg)
	return prefix + s, code
}

func describeMessage(m *client.Message) (string, *int64) {
	switch {
	case m.Error != nil:
		code := m.Error.Code
		return fmt.Sprintf("error %d %q", code, shorten(m.Error.Message, 80)), &code
	case m.Result != nil:
		var tr client.ToolResult
		if json.Unmarshal(m.Result, &tr) == nil && (tr.IsError || len(tr.Content) > 0) {
			kind := "result"
			if tr.IsError {
				kind = "isError"
			}
			s := fmt.Sprintf("%s %q", kind, shorten(tr.Text(), 80))
			if len(tr.StructuredContent) > 0 {
				s += " +structuredContent"
			}
			return s, nil
		}
		return "result " + shorten(string(m.Result), 60), nil
	case m.Method != "":
		return "message " + m.Method, nil
	}
	return "empty message", nil
}

// describe explains a call's reply or error in one line.
func describe(msg *client.Message, err error) string {
	if err != nil {
		var se *client.StatusError
		if errors.As(err, &se) {
			return shorten(se.Error(), 120)
		}
		return err.Error()
	}
	if msg == nil {
		return "no reply"
	}
	s, _ := describeMessage(msg)
	return s
}

// shorten cuts s to n runes, marking the cut with its full length.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("…(%d bytes)", len(s))
}
