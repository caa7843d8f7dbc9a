package main

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// Multi-process tests of a cluster: members are processes of the real server binary (built by
// the test, with -race when the test runs with it) on loopback, reached through a round-robin
// reverse proxy written here (httputil.ReverseProxy, the next live backend for every request,
// no stickiness), as behind a plain load balancer.
//
// Waits, for a 2-core machine running three race-built members: a member serves within
// clusterStartWait (protoactor's StartMember sleeps 1 s, the race build starts slowly) and the
// members see each other within the same bound (the automanaged provider polls every second).
// Everything after that is bounded far tighter, and the bounds are the point of the test.

// clusterStartWait bounds the start of the members and the forming of the cluster.
const clusterStartWait = 60 * time.Second

// member is one server process of a test cluster.
type member struct {
	i      int
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	admin  string // http://127.0.0.1:PORT of --admin-addr
	remote string // the member's remote address, the home named by its sessions' ids
	log    *syncBuffer
	exited chan struct{}
	argv   []string // the command line that starts it, again on a restart
}

// syncBuffer is the stderr of a member, readable while the process writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Len is how much has been written so far: a mark for since.
func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// since returns what was written after the mark n.
func (b *syncBuffer) since(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf.Bytes()[n:])
}

// testCluster is members behind a round-robin proxy.
type testCluster struct {
	t       testing.TB
	members []*member
	proxy   *httptest.Server
	token   string // the bearer token of every request; "" for none

	mu   sync.Mutex
	live []int // the members the proxy sends to
	next int
}

// startCluster starts n members with the given extra flags, waits until every member serves and
// sees all n, and starts the proxy.
func startCluster(t testing.TB, n int, extra ...string) *testCluster {
	t.Helper()
	return startClusterWith(t, n, func(int, []string) []string { return extra })
}

// startClusterWith is startCluster with flags per member: flags(i, remotes) are member i's, where
// remotes are the members' remote addresses.
func startClusterWith(t testing.TB, n int, flags func(i int, remotes []string) []string) *testCluster {
	t.Helper()
	return startClusterSpec(t, n, clusterSpec{flags: flags})
}

// clusterSpec says how to start the members of a test cluster.
type clusterSpec struct {
	flags  func(i int, remotes []string) []string // member i's extra flags; nil for none
	host   func(i int) string                     // the IP member i listens on; nil for 127.0.0.1
	prefix func(i int) []string                   // a command that runs member i (ip netns exec NS); nil for none
}

func startClusterSpec(t testing.TB, n int, spec clusterSpec) *testCluster {
	t.Helper()
	if spec.flags == nil {
		spec.flags = func(int, []string) []string { return nil }
	}
	if spec.host == nil {
		spec.host = func(int) string { return "127.0.0.1" }
	}
	if spec.prefix == nil {
		spec.prefix = func(int) []string { return nil }
	}
	bin := buildServer(t)
	ports := testPorts(t, 4*n)
	dir := t.TempDir()
	key := dir + "/key"
	if err := os.WriteFile(key, clusterSecret, 0o600); err != nil {
		t.Fatal(err)
	}
	var health, remotes []string
	for i := 0; i < n; i++ {
		health = append(health, net.JoinHostPort(spec.host(i), strconv.Itoa(ports[2*n+i])))
		remotes = append(remotes, net.JoinHostPort(spec.host(i), strconv.Itoa(ports[n+i])))
	}
	c := &testCluster{t: t}
	for i := 0; i < n; i++ {
		m := &member{i: i, log: &syncBuffer{}, exited: make(chan struct{}),
			base:   "http://" + net.JoinHostPort(spec.host(i), strconv.Itoa(ports[i])),
			remote: remotes[i],
			admin:  "http://" + net.JoinHostPort(spec.host(i), strconv.Itoa(ports[3*n+i]))}
		args := append([]string{"--transport", "http", "--addr", strings.TrimPrefix(m.base, "http://"),
			"--cluster-addr", m.remote, "--cluster-health-port", strconv.Itoa(ports[2*n+i]),
			"--cluster-member", strings.Join(health, ","), "--request-state-key-file", key,
			"--admin-addr", strings.TrimPrefix(m.admin, "http://"),
			"--fixtures", "conformance", "--log-level", "info"}, spec.flags(i, remotes)...)
		m.argv = append(spec.prefix(i), append([]string{bin}, args...)...)
		c.launch(m)
		t.Cleanup(func() {
			_ = m.cmd.Process.Kill()
			<-m.exited
			if r := ourRaces(m.log.String()); r != "" {
				t.Errorf("member %d: data race in Toolgrain code:\n%s", m.i, r)
			}
			if t.Failed() {
				t.Logf("member %d log:\n%s", m.i, tail(m.log.String(), 150))
			}
		})
		c.members = append(c.members, m)
		c.live = append(c.live, i)
	}
	deadline := time.Now().Add(clusterStartWait)
	for _, m := range c.members {
		c.waitLog(m, 0, deadline, `"msg":"serving"`, fmt.Sprintf(`"msg":"topology","members":%d`, n))
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i := c.pick()
			u, _ := url.Parse(c.members[i].base)
			pr.SetURL(u)
			pr.Out.Header.Set("X-Test-Backend", strconv.Itoa(i))
		},
		ModifyResponse: func(r *http.Response) error {
			r.Header.Set("X-Test-Backend", r.Request.Header.Get("X-Test-Backend"))
			return nil
		},
		FlushInterval: -1,
		ErrorLog:      nil,
	}
	c.proxy = httptest.NewServer(fullDuplex(proxy))
	t.Cleanup(c.proxy.Close)
	return c
}

// fullDuplex serves h with its request's body readable after its answer has begun, as the
// proxy needs: it streams a client's body to the member while the member's answer comes back.
// Otherwise net/http's server drains and closes a request's body when the head of its answer
// is written, and the proxy's transport, which reads the body once more after its declared
// length to see that it ends, fails its write to the member if that read comes after the close,
// and closes the connection to the member with the answer on it: under load, a member answered
// within that window and the client's stream ended with "unexpected EOF".
func fullDuplex(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		h.ServeHTTP(w, r)
	})
}

// TestProxyStreamsBothWays: the test clusters' proxy passes the head and first event of a
// member's answer to the client while the request's body is still on its way, and the rest of
// the body to the member after that, as a load balancer does. The client sends its body only
// once the head has come: a proxy that drains the body when the head is written (net/http's
// default) never passes the head. Waits: 10 s for each step, of an exchange on loopback that
// takes milliseconds; a bound that only stops a hung test.
func TestProxyStreamsBothWays(t *testing.T) {
	t.Parallel()
	// The member: its head and first event at once, then the body it was sent.
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: head\n\n")
		w.(http.Flusher).Flush()
		body, err := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "data: %s %v\n\n", body, err)
	}))
	defer member.Close()
	u, _ := url.Parse(member.URL)
	proxy := httptest.NewServer(fullDuplex(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, FlushInterval: -1}))
	defer proxy.Close()
	client := &http.Client{}
	defer client.CloseIdleConnections()

	const body = "the body"
	pr, pw := io.Pipe()
	defer pw.Close() // ends a request still waiting for its body when the test fails
	req, _ := http.NewRequest(http.MethodPost, proxy.URL+"/mcp", pr)
	req.ContentLength = int64(len(body))
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	// Owned by this test: it ends when the proxy answers, or when the deferred Close ends the body.
	go func() {
		resp, err := client.Do(req)
		answered <- answer{resp, err}
	}()
	var resp *http.Response
	select {
	case a := <-answered:
		if a.err != nil {
			t.Fatal(a.err)
		}
		resp = a.resp
	case <-time.After(10 * time.Second):
		t.Fatal("no head from the proxy within 10 s while the request's body was still to come")
	}
	defer resp.Body.Close()
	events := make(chan event, 4)
	done := make(chan struct{})
	// Owned by this test: it ends with the answer's body, which the deferred Close ends too.
	go func() { defer close(done); readEvents(resp.Body, events) }()
	defer func() { resp.Body.Close(); <-done }()
	if ev := next(t, events, 10*time.Second); ev.Data != "head" {
		t.Fatalf("first event %q, want head", ev.Data)
	}
	if _, err := io.WriteString(pw, body); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events, 10*time.Second); ev.Data != body+" <nil>" {
		t.Fatalf("second event %q, want the body the member read: %s <nil>", ev.Data, body)
	}
}

// launch starts member m's process from m.argv, its output going to m.log; m.exited closes when
// it exits.
func (c *testCluster) launch(m *member) {
	c.t.Helper()
	cmd, exited := exec.Command(m.argv[0], m.argv[1:]...), make(chan struct{})
	cmd.Stdout, cmd.Stderr = m.log, m.log
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	m.cmd, m.exited = cmd, exited
	// Owned by the test: it ends when the process exits, which the member's cleanup forces.
	go func() { _ = cmd.Wait(); close(exited) }()
}

// waitLog waits until everything of want appears in member m's log past the mark from, and
// fails once deadline passes or the member exits.
func (c *testCluster) waitLog(m *member, from int, deadline time.Time, want ...string) {
	c.t.Helper()
	for {
		log, missing := m.log.since(from), ""
		for _, w := range want {
			if !strings.Contains(log, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		select {
		case <-m.exited:
			c.t.Fatalf("member %d exited:\n%s", m.i, m.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("member %d: no %s in its log within %v:\n%s", m.i, missing, clusterStartWait, tail(m.log.String(), 150))
		}
	}
}

// restart kills member i (SIGKILL), waits until every other member's list has dropped it, starts
// it again with the same command line (the same addresses, key and files) and waits until it
// serves in a cluster of all the members and every other member has seen it join again. The
// proxy sends to it throughout, as a load balancer whose health check has not noticed. Waits:
// the others drop a killed member within about two 1 s polls of the provider, and everything
// is bounded by clusterStartWait, as a start is.
func (c *testCluster) restart(i int) {
	c.t.Helper()
	m := c.members[i]
	marks := make([]int, len(c.members))
	for k, o := range c.members {
		marks[k] = o.log.Len()
	}
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	<-m.exited
	n := len(c.members)
	deadline := time.Now().Add(clusterStartWait)
	for k, o := range c.members {
		if k != i {
			c.waitLog(o, marks[k], deadline, fmt.Sprintf(`"msg":"topology","members":%d`, n-1))
			marks[k] = o.log.Len()
		}
	}
	marks[i] = m.log.Len()
	c.launch(m)
	deadline = time.Now().Add(clusterStartWait)
	formed := fmt.Sprintf(`"msg":"topology","members":%d`, n)
	for k, o := range c.members {
		want := []string{formed}
		if k == i {
			want = append(want, `"msg":"serving"`)
		}
		c.waitLog(o, marks[k], deadline, want...)
	}
}

// ourRaces returns the race detector's reports in a member's log that involve Toolgrain's code.
// Reports of protoactor-go's own state are not this project's to fix, and are left out: those
// whose racing accesses both happen in protoactor-go's code (its remote.BlockList is read and
// written unguarded at the pinned version, even when the call that led there started in ours).
func ourRaces(log string) string {
	var out []string
	for _, block := range strings.Split(log, "==================") {
		access, _, _ := strings.Cut(block, "created at:") // the two accesses, not where goroutines began
		if !strings.Contains(block, "WARNING: DATA RACE") || !strings.Contains(access, "github.com/toolgrain/toolgrain") {
			continue
		}
		if racingFramesIn(access, "github.com/asynkron/protoactor-go/") {
			continue
		}
		out = append(out, block)
	}
	return strings.Join(out, "\n==================\n")
}

// racingFramesIn reports whether the top frame of every access in a race report (the function
// that read or wrote) is in the package path prefix.
func racingFramesIn(access, prefix string) bool {
	lines := strings.Split(access, "\n")
	seen := 0
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if !strings.HasSuffix(l, ":") || !(strings.Contains(l, "Read at") || strings.Contains(l, "Write at")) || i+1 >= len(lines) {
			continue
		}
		seen++
		if !strings.HasPrefix(strings.TrimSpace(lines[i+1]), prefix) {
			return false
		}
	}
	return seen > 0
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// pick returns the next live member, round robin.
func (c *testCluster) pick() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.live[c.next%len(c.live)]
	c.next++
	return i
}

// drop takes member i out of the proxy's rotation, as a load balancer's health check would.
func (c *testCluster) drop(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, j := range c.live {
		if j == i {
			c.live = append(c.live[:k], c.live[k+1:]...)
			return
		}
	}
}

// request is one HTTP request to the MCP endpoint at base.
type request struct {
	method  string
	session string
	modern  string // the Mcp-Method of a modern request; "" for a legacy one
	name    string // Mcp-Name
	lastID  string
	body    string
	timeout time.Duration // of the whole exchange; 0 means 20 s
}

// short is s cut to a length that a failure message can show.
func short(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

func (c *testCluster) do(ctx context.Context, base string, r request) (*http.Response, error) {
	return c.doWith(ctx, http.DefaultClient, base, r)
}

func (c *testCluster) doWith(ctx context.Context, client *http.Client, base string, r request) (*http.Response, error) {
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/mcp", strings.NewReader(r.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	if r.modern != "" {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", r.modern)
		if r.name != "" {
			req.Header.Set("Mcp-Name", r.name)
		}
	}
	if r.lastID != "" {
		req.Header.Set("Last-Event-ID", r.lastID)
	}
	return client.Do(req)
}

// call sends r to base and returns the status, the backend that served it (through the proxy)
// and the whole body.
func (c *testCluster) call(base string, r request) (int, string, string) {
	c.t.Helper()
	timeout := r.timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := c.do(ctx, base, r)
	if err != nil {
		c.t.Fatalf("%s %s: %v", base, short(r.body), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read: %v", base, short(r.body), err)
	}
	return resp.StatusCode, resp.Header.Get("X-Test-Backend"), string(data)
}

// expect sends r to base and checks the status and exact body; it returns the backend.
func (c *testCluster) expect(base string, r request, status int, body string) string {
	c.t.Helper()
	got, backend, data := c.call(base, r)
	if got != status || data != body {
		c.t.Fatalf("%s (backend %s) %s:\ngot  %d %s\nwant %d %s", base, backend, short(r.body), got, short(data), status, short(body))
	}
	return backend
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"cluster-test","version":"1"}}}`

// initialize opens a session at base and returns its id and the backend that answered.
func (c *testCluster) initialize(base string) (string, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.do(ctx, base, request{body: initializeBody})
	if err != nil {
		c.t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" || !strings.HasPrefix(string(data), `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"`) {
		c.t.Fatalf("initialize: %d %q %s", resp.StatusCode, sid, data)
	}
	c.expect(base, request{session: sid, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}, 202, "")
	return sid, resp.Header.Get("X-Test-Backend")
}

// clusterSecret is the secret the test clusters share (their --request-state-key-file).
var clusterSecret = bytes.Repeat([]byte("k"), 32)

// homeOf returns the part of a session id that names its home (sealedHome): its first part.
func homeOf(sid string) string {
	first, _, _ := strings.Cut(sid, ".")
	return first
}

// sealedHome is the home part of the session ids of the member at addr: its address sealed
// with AES-256-GCM under a synthetic nonce (the test knows the derivation, and the secret its
// clusters share: clusterSecret).
func sealedHome(addr string) string {
	mac := func(key []byte, text string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(text))
		return m.Sum(nil)
	}
	key := mac(clusterSecret, "toolgrain cluster session id v1")
	block, err := aes.NewCipher(mac(key, "toolgrain cluster session home seal v1"))
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	nonce := mac(mac(key, "toolgrain cluster session home nonce v1"), addr)[:12]
	padded := make([]byte, (len(addr)+31)/32*32)
	copy(padded, addr)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, padded, []byte("toolgrain cluster session home v1")))
}

// event is one SSE event; end, set on the last value sent before the channel closes and on no
// other, says how the stream ended ("EOF" or the read error).
type event struct {
	mcptest.Event
	end string
}

// readEvents reads SSE events from body until it ends, sending each to out, then an event that
// says how it ended; it closes out.
func readEvents(body io.Reader, out chan<- event) {
	defer close(out)
	r := mcptest.NewEventReader(body)
	for {
		ev, err := r.Next()
		if err != nil {
			end := "EOF"
			if err != io.EOF {
				end = err.Error()
			}
			select {
			case out <- event{end: end}:
			default: // a reader that stopped reading wants no more
			}
			return
		}
		out <- event{Event: ev}
	}
}

// stream opens r at base as an SSE stream and returns its events; the stream is closed when
// the test ends.
func (c *testCluster) stream(base string, r request) (<-chan event, string, context.CancelFunc) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := c.do(ctx, base, r)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		c.t.Fatalf("%s: want an SSE stream, got %d %s", r.body, resp.StatusCode, data)
	}
	out := make(chan event, 64)
	done := make(chan struct{})
	// Owned by the test: it ends when the body ends, which cancel forces.
	go func() { defer close(done); readEvents(resp.Body, out); resp.Body.Close() }()
	stop := func() { cancel(); <-done }
	c.t.Cleanup(stop)
	return out, resp.Header.Get("X-Test-Backend"), stop
}

// next returns the next event of a stream within d, or fails.
func next(t *testing.T, events <-chan event, d time.Duration) event {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("stream ended")
		}
		if ev.end != "" {
			t.Fatalf("stream ended: %s", ev.end)
		}
		return ev
	case <-time.After(d):
		t.Fatalf("no event within %v", d)
	}
	return event{}
}

// nextData returns the data of the next event that carries any (the priming event carries none).
func nextData(t *testing.T, events <-chan event, d time.Duration) event {
	t.Helper()
	for {
		if ev := next(t, events, d); ev.Data != "" {
			return ev
		}
	}
}

// TestClusterLegacySessionOnEveryNode runs one 2025-11-25 session through the round-robin proxy
// so that every request lands on another member than the one before: initialize, a call,
// progress, elicitation (the request on one member's stream, the answer posted to another),
// resumption with Last-Event-ID, DELETE; then modern requests and list-change notifications.
func TestClusterLegacySessionOnEveryNode(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	p := c.proxy.URL
	sid, b0 := c.initialize(p)
	if home := homeOf(sid); home != sealedHome(c.members[atoi(b0)].remote) {
		t.Fatalf("session id names home %s; initialize was answered by member %s (%s)", home, b0, c.members[atoi(b0)].remote)
	}
	used := map[string]bool{b0: true}

	t.Run("call", func(t *testing.T) {
		b := c.expect(p, request{session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo \"there\""}}}`},
			200, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"héllo \"there\""}]}}`)
		used[b] = true
	})

	t.Run("progress", func(t *testing.T) {
		events, b, _ := c.stream(p, request{session: sid, body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":400},"_meta":{"progressToken":"tok"}}}`})
		used[b] = true
		progress := 0
		for {
			ev := nextData(t, events, 10*time.Second)
			if ev.ID == "" {
				t.Fatalf("event without id: %q", ev.Data)
			}
			if strings.HasPrefix(ev.Data, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":`) {
				progress++
				continue
			}
			if want := `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"slept"}]}}`; ev.Data != want {
				t.Fatalf("got %s, want %s", ev.Data, want)
			}
			break
		}
		if progress == 0 {
			t.Fatal("no progress notification before the result")
		}
	})

	t.Run("elicitation", func(t *testing.T) {
		events, b, _ := c.stream(p, request{session: sid, body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"Who are you?"}}}`})
		ev := nextData(t, events, 10*time.Second)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &req); err != nil || req.Method != "elicitation/create" {
			t.Fatalf("want elicitation/create, got %s", ev.Data)
		}
		answer := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"username":"ada","email":"ada@example.com"}}}`
		b2 := c.expect(p, request{session: sid, body: answer}, 202, "")
		if b2 == b {
			t.Fatalf("the answer landed on member %s, as the call did", b)
		}
		used[b], used[b2] = true, true
		got := nextData(t, events, 10*time.Second).Data
		if want := `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"User response: action=accept, content={\"username\":\"ada\",\"email\":\"ada@example.com\"}"}]}}`; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})

	t.Run("resumption", func(t *testing.T) {
		events, b, _ := c.stream(p, request{session: sid, body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}}`})
		last := ""
		for ev := range events { // the tool closes the stream mid-call
			if ev.ID != "" {
				last = ev.ID
			}
		}
		if last == "" {
			t.Fatal("no event id before the stream closed")
		}
		resumed, b2, _ := c.stream(p, request{method: http.MethodGet, session: sid, lastID: last})
		if b2 == b {
			t.Fatalf("the resuming GET landed on member %s, as the call did", b)
		}
		used[b], used[b2] = true, true
		got := nextData(t, resumed, 10*time.Second).Data
		if want := `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"Reconnection test completed successfully. If you received this result, the client properly handled the stream resumption."}]}}`; got != want && !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":5,"result":`) {
			t.Fatalf("got %s, want %s", got, want)
		}
	})

	t.Run("large", func(t *testing.T) {
		// A body near the 4 MiB message limit, and an answer as large, cross between members.
		// Race-built members beside other tests' take seconds over 3 MiB: 60 s each.
		text := strings.Repeat("a", 3<<20)
		other := c.members[(atoi(b0)+1)%3].base // not the home: the request is forwarded
		c.expect(other, request{session: sid, timeout: time.Minute, body: `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`},
			200, `{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"`+text+`"}]}}`)
		// Past the limit: the home answers 413, as one server does.
		status, _, body := c.call(other, request{session: sid, timeout: time.Minute, body: `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + text + `"}}}`})
		if status != 413 || !strings.Contains(body, "message exceeds the limit of 4194304 bytes") {
			t.Fatalf("got %d %s, want 413 and the limit", status, short(body))
		}
	})

	t.Run("forged_session", func(t *testing.T) {
		// Flip a bit of the MAC's first byte: every bit of it counts, so the id cannot verify
		// (a change to the last character could touch only its unused bits).
		dot := strings.LastIndexByte(sid, '.')
		mac, err := base64.RawURLEncoding.DecodeString(sid[dot+1:])
		if err != nil {
			t.Fatalf("session id %q: %v", sid, err)
		}
		mac[0] ^= 1
		forged := sid[:dot+1] + base64.RawURLEncoding.EncodeToString(mac)
		for _, m := range c.members {
			c.expect(m.base, request{session: forged, body: `{"jsonrpc":"2.0","id":6,"method":"ping"}`},
				404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found: session not found"}}`)
		}
	})

	t.Run("modern", func(t *testing.T) {
		const env = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
		const meta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"toolgrain-demo","version":"0.1.0"}}`
		for i, m := range c.members {
			c.expect(m.base, request{modern: "tools/call", name: "echo", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m` + strconv.Itoa(i) + `"},` + env + `}}`},
				200, `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"m`+strconv.Itoa(i)+`"}],`+meta+`}}`)
		}
		// An input_required round on one member, the retry with its requestState on the next.
		const tool = "test_input_required_result_elicitation"
		_, _, first := c.call(c.members[0].base, request{modern: "tools/call", name: tool, body: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + env + `}}`})
		var res struct {
			Result struct {
				ResultType   string `json:"resultType"`
				RequestState string `json:"requestState"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(first), &res); err != nil || res.Result.ResultType != "input_required" || res.Result.RequestState == "" {
			t.Fatalf("want input_required with a requestState, got %s", first)
		}
		c.expect(c.members[1].base, request{modern: "tools/call", name: tool, body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"` + res.Result.RequestState + `",` + env + `}}`},
			200, `{"jsonrpc":"2.0","id":9,"result":{"resultType":"complete","content":[{"type":"text","text":"Hello, Ada!"}],`+meta+`}}`)
	})

	t.Run("notifications_reach_every_member", func(t *testing.T) {
		// A GET stream for a session homed on each member, opened through the proxy, and a
		// modern listen stream on each member.
		type watched struct {
			name   string
			events <-chan event
			want   string
		}
		var streams []watched
		homes := map[string]bool{}
		for i := 0; i < 3; i++ {
			s, _ := c.initialize(c.members[i].base)
			homes[homeOf(s)] = true
			ev, _, _ := c.stream(p, request{method: http.MethodGet, session: s})
			streams = append(streams, watched{"GET of a session homed on member " + strconv.Itoa(i), ev, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`})
		}
		if len(homes) != 3 {
			t.Fatalf("sessions homed on %d members, want 3", len(homes))
		}
		const env = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		for i, m := range c.members {
			ev, _, _ := c.stream(m.base, request{modern: "subscriptions/listen", body: `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + env + `}}`})
			ack := nextData(t, ev, 10*time.Second).Data
			if !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
				t.Fatalf("listen on member %d: want the acknowledgement first, got %s", i, ack)
			}
			streams = append(streams, watched{"listen stream on member " + strconv.Itoa(i), ev, `"method":"notifications/tools/list_changed"`})
		}
		// Opening a GET stream is asynchronous on the home; give the streams a moment to attach.
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		c.expect(c.members[2].base, request{session: sid, body: `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{}}}`},
			200, `{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"tool list changed"}]}}`)
		for _, s := range streams {
			got := nextData(t, s.events, 5*time.Second).Data
			if !strings.Contains(got, s.want) {
				t.Fatalf("%s: got %s, want %s", s.name, got, s.want)
			}
		}
		t.Logf("a list change on member 2 reached %d streams on 3 members in %v", len(streams), time.Since(start))
	})

	t.Run("delete", func(t *testing.T) {
		c.expect(p, request{method: http.MethodDelete, session: sid}, 204, "")
		for _, m := range c.members {
			c.expect(m.base, request{session: sid, body: `{"jsonrpc":"2.0","id":11,"method":"ping"}`},
				404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found: session not found"}}`)
		}
	})
	if len(used) != 3 {
		t.Fatalf("the session's requests landed on %d members, want 3", len(used))
	}

	// Each member's view of the cluster: all three members, and the forwarding counted.
	var forwarded, served int64
	for i, m := range c.members {
		view := memberView(t, m)
		if view.Address != m.remote || len(view.Members) != 3 {
			t.Fatalf("member %d /cluster: %+v, want address %s and 3 members", i, view, m.remote)
		}
		t.Logf("member %d: forwarded %d, served %d for others, mean time to the answer's head %.0f µs", i, view.Forwarded, view.Served, view.MeanUS)
		forwarded += view.Forwarded
		served += view.Served
	}
	if forwarded == 0 || forwarded != served {
		t.Fatalf("forwarded %d requests, served %d forwarded ones: want equal and not 0", forwarded, served)
	}
}

// view is a member's /cluster.
type view struct {
	Address   string   `json:"address"`
	Members   []string `json:"members"`
	Forwarded int64    `json:"forwarded"`
	Served    int64    `json:"served"`
	Streams   int64    `json:"forwarding_now"`
	Homes     int64    `json:"serving_forwarded_now"`
	MeanUS    float64  `json:"forward_mean_us"`
}

// memberView reads a member's /cluster.
func memberView(t *testing.T, m *member) view {
	t.Helper()
	resp, err := http.Get(m.admin + "/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v view
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("member %d /cluster: %v", m.i, err)
	}
	return v
}

func atoi(s string) int {
	i, _ := strconv.Atoi(s)
	return i
}

// goroutines returns the number of a member's goroutines that run Toolgrain code (a frame of
// this module in their stack), from its /debug/pprof/goroutine, with no idle HTTP connection of
// this test process open to it. Goroutines wholly inside protoactor-go, gRPC or net/http (a
// gRPC connection to a hung peer that takes its time to close) are not counted.
func goroutines(t *testing.T, m *member) int {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	resp, err := http.Get(m.admin + "/debug/pprof/goroutine?debug=2")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	n := 0
	for _, g := range strings.Split(string(data), "\n\n") {
		if strings.Contains(g, "github.com/toolgrain/toolgrain") && !strings.Contains(g, "runtime/pprof.writeGoroutineStacks") {
			n++
		}
	}
	return n
}

// outcome is how one call in flight ended.
type outcome struct {
	home, entry int
	id          int
	status      int
	body        string
	err         error
	at          time.Time
}

// TestClusterMemberKilled runs calls on sessions homed on every member, entering through every
// member, then kills one member with SIGKILL while they run. Calls homed and entering on the
// survivors are answered exactly once, unaffected; calls on sessions homed on the dead member end
// with 404 (the session is gone; the client initializes again) and calls that entered through it
// with a transport error, both within a bound; its sessions answer 404 on every survivor at once
// afterwards; the survivors keep serving through the proxy, and their goroutines return to what
// they were before the calls.
func TestClusterMemberKilled(t *testing.T) {
	t.Parallel()
	testMemberLost(t, clusterSpec{}, bySignal(syscall.SIGKILL), false, 6*time.Second)
}

// bySignal returns a way to lose member 2: send it sig.
func bySignal(sig syscall.Signal) func(t *testing.T, c *testCluster) {
	return func(t *testing.T, c *testCluster) {
		if err := c.members[2].cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if sig == syscall.SIGSTOP {
			t.Cleanup(func() { _ = c.members[2].cmd.Process.Signal(syscall.SIGCONT) })
		}
	}
}

// TestClusterMemberHung is TestClusterMemberKilled with SIGSTOP: the member's TCP connections stay
// open, so its loss is seen by the automanaged health check (a 2 s HTTP timeout after a 1 s
// poll) rather than by the broken connection.
func TestClusterMemberHung(t *testing.T) {
	t.Parallel()
	testMemberLost(t, clusterSpec{}, bySignal(syscall.SIGSTOP), true, 12*time.Second)
}

// testMemberLost loses member 2 with lose while calls run; hang says that what entered through
// it hangs (the client gives up) rather than failing at once. bound is how long after the loss a
// call homed on the lost member may take to end: it separates a loss the survivors noticed from
// one they did not (such a call would wait for the client's 20 s timeout), with room for a
// loaded machine; the time measured is logged (on an idle machine: milliseconds for a kill,
// 2-3 s for a hung or cut-off member).
func testMemberLost(t *testing.T, spec clusterSpec, lose func(*testing.T, *testCluster), hang bool, bound time.Duration) {
	c := startClusterSpec(t, 3, spec)
	const victim = 2
	sessions := make([]string, 3)
	for i, m := range c.members {
		sessions[i], _ = c.initialize(m.base)
		if homeOf(sessions[i]) != sealedHome(m.remote) {
			t.Fatalf("session initialized on member %d is homed on %s", i, homeOf(sessions[i]))
		}
	}
	// Warm the paths between every pair, then take the survivors' goroutine baseline.
	for h := range c.members {
		for _, m := range c.members {
			c.expect(m.base, request{session: sessions[h], body: `{"jsonrpc":"2.0","id":0,"method":"ping"}`}, 200, `{"jsonrpc":"2.0","id":0,"result":{}}`)
		}
	}
	baseline := map[int]int{0: goroutines(t, c.members[0]), 1: goroutines(t, c.members[1])}

	const perPair = 8 // 72 calls in flight when the member is lost
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
		id       atomic.Int64
	)
	for h := range c.members {
		for e, m := range c.members {
			for k := 0; k < perPair; k++ {
				n := int(id.Add(1))
				body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1500}}}`
				wg.Add(1)
				// Owned by the test, which waits for it; the client's timeout bounds it.
				go func(h, e int, base string) {
					defer wg.Done()
					o := outcome{home: h, entry: e, id: n}
					// A hung member never answers what entered through it: the client gives up.
					limit := 20 * time.Second
					if e == victim && hang {
						limit = 5 * time.Second
					}
					ctx, cancel := context.WithTimeout(context.Background(), limit)
					defer cancel()
					resp, err := c.do(ctx, base, request{session: sessions[h], body: body})
					if err == nil {
						var data []byte
						data, err = io.ReadAll(resp.Body)
						resp.Body.Close()
						o.status, o.body = resp.StatusCode, string(data)
					}
					o.err, o.at = err, time.Now()
					mu.Lock()
					outcomes = append(outcomes, o)
					mu.Unlock()
				}(h, e, m.base)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // the calls are running on their homes
	lost := time.Now()
	lose(t, c)
	c.drop(victim)
	wg.Wait()

	if len(outcomes) != 9*perPair {
		t.Fatalf("%d outcomes, want %d", len(outcomes), 9*perPair)
	}
	var worstGone time.Duration
	for _, o := range outcomes {
		switch {
		case o.entry == victim:
			if !hang && o.err == nil {
				t.Errorf("call %d entered through the killed member: got %d %s, want a transport error", o.id, o.status, o.body)
			}
			if hang && o.err == nil && o.status == 200 {
				// A hung member may have answered before it stopped; the call then ran once.
				if want := `{"jsonrpc":"2.0","id":` + strconv.Itoa(o.id) + `,"result":{"content":[{"type":"text","text":"slept"}]}}`; o.body != want {
					t.Errorf("call %d: got %s, want %s", o.id, o.body, want)
				}
			}
		case o.home == victim:
			want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found: session not found"}}`
			if o.err != nil || o.status != 404 || o.body != want {
				t.Errorf("call %d homed on the lost member, entering member %d: got %d %q %v, want 404 %s", o.id, o.entry, o.status, o.body, o.err, want)
			}
			if d := o.at.Sub(lost); d > worstGone {
				worstGone = d
			}
		default:
			want := `{"jsonrpc":"2.0","id":` + strconv.Itoa(o.id) + `,"result":{"content":[{"type":"text","text":"slept"}]}}`
			if o.err != nil || o.status != 200 || o.body != want {
				t.Errorf("call %d on the survivors (home %d, entry %d): got %d %q %v, want 200 %s", o.id, o.home, o.entry, o.status, o.body, o.err, want)
			}
		}
	}
	t.Logf("calls homed on the lost member ended with 404 at most %v after the signal (bound %v)", worstGone, bound)
	if worstGone > bound {
		t.Errorf("a call homed on the lost member took %v after the signal to end, bound %v", worstGone, bound)
	}

	// Its sessions answer 404 at once on every survivor.
	for _, e := range []int{0, 1} {
		start := time.Now()
		c.expect(c.members[e].base, request{session: sessions[victim], body: `{"jsonrpc":"2.0","id":99,"method":"ping"}`},
			404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found: session not found"}}`)
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("the 404 for a session of the lost member took %v on member %d", d, e)
		}
	}
	// The survivors keep serving their sessions through the proxy, each call answered once.
	for k := 0; k < 20; k++ {
		h := k % 2
		n := 1000 + k
		c.expect(c.proxy.URL, request{session: sessions[h], body: `{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`},
			200, `{"jsonrpc":"2.0","id":`+strconv.Itoa(n)+`,"result":{"content":[{"type":"text","text":"after"}]}}`)
	}
	// Nothing is left running on the survivors for the calls, streams and forwards that ended:
	// no stream or home actor, and no more goroutines in Toolgrain's code than before.
	for _, e := range []int{0, 1} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			g := goroutines(t, c.members[e])
			v := memberView(t, c.members[e])
			if g <= baseline[e] && v.Streams == 0 && v.Homes == 0 {
				t.Logf("member %d: %d goroutines, %d before the calls", e, g, baseline[e])
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("member %d: %d goroutines 10 s after the calls, %d before; %d stream and %d home actors", e, g, baseline[e], v.Streams, v.Homes)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
