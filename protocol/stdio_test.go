package protocol_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
)

// readAll drains r, writing lines as they are, a too-large error as
// "!too large <limit>" and the final error as "!EOF" or "!<error>".
func readAll(t testing.TB, r *protocol.LineReader) []string {
	t.Helper()
	var got []string
	for range 1000 {
		line, err := r.Next()
		var tooLarge *protocol.MessageTooLargeError
		switch {
		case err == nil:
			got = append(got, string(line))
		case errors.As(err, &tooLarge):
			got = append(got, fmt.Sprintf("!too large %d", tooLarge.Limit))
		case err == io.EOF:
			return append(got, "!EOF")
		default:
			return append(got, "!"+err.Error())
		}
	}
	t.Fatal("reader did not end")
	return nil
}

func TestLineReader(t *testing.T) {
	tests := []struct {
		name string
		give string
		max  int
		want []string
	}{
		{"empty", "", 0, []string{"!EOF"}},
		{"lines", "a\nb\n", 0, []string{"a", "b", "!EOF"}},
		{"crlf", "a\r\nb\r\n", 0, []string{"a", "b", "!EOF"}},
		{"blank_lines", "\n\r\n  \t\n{}\n\n \r\n", 0, []string{"{}", "!EOF"}},
		{"final_line_without_newline", "a\nlast", 0, []string{"a", "last", "!EOF"}},
		{"final_crlf_fragment", "a\r", 0, []string{"a\r", "!EOF"}},
		{"inner_spaces_kept", " {} \n", 0, []string{" {} ", "!EOF"}},
		{"at_limit", "0123456789\n0123456789\r\n", 10, []string{"0123456789", "0123456789", "!EOF"}},
		{"over_limit_then_next", "0123456789X\nok\n", 10, []string{"!too large 10", "ok", "!EOF"}},
		{"over_limit_crlf", "0123456789X\r\nok\r\n", 10, []string{"!too large 10", "ok", "!EOF"}},
		{"over_limit_last", "ok\n0123456789X", 10, []string{"ok", "!too large 10", "!EOF"}},
		{"two_over_limit", "0123456789X\n0123456789Y\nok", 10, []string{"!too large 10", "!too large 10", "ok", "!EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAll(t, protocol.NewLineReader(strings.NewReader(tt.give), tt.max))
			if !slices.Equal(got, tt.want) {
				t.Errorf("lines = %q, want %q", got, tt.want)
			}
			// One byte per Read makes every line span many reads.
			got = readAll(t, protocol.NewLineReader(iotest.OneByteReader(strings.NewReader(tt.give)), tt.max))
			if !slices.Equal(got, tt.want) {
				t.Errorf("lines (one byte per read) = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLineReaderLongLines(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"x","params":{"s":"` + strings.Repeat("a", 1<<20) + `"}}`
	tests := []struct {
		name string
		give string
		max  int
		want []string
	}{
		{"one_mib_default_limit", big + "\r\n" + big + "\nok\n", 0, []string{big, big, "ok", "!EOF"}},
		{"one_mib_exact_limit", big + "\n", len(big), []string{big, "!EOF"}},
		{"one_mib_over_limit", big + "\r\nok\n", len(big) - 1, []string{fmt.Sprintf("!too large %d", len(big)-1), "ok", "!EOF"}},
		{"one_mib_final_line", "ok\n" + big, 0, []string{"ok", big, "!EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAll(t, protocol.NewLineReader(iotest.HalfReader(strings.NewReader(tt.give)), tt.max))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d results, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("result %d: %d bytes %.40q, want %d bytes %.40q", i, len(got[i]), got[i], len(tt.want[i]), tt.want[i])
				}
			}
		})
	}
}

// An over-long line is discarded in chunks: the reader's buffer stays near
// the limit however long the line is.
func TestLineReaderBoundedMemory(t *testing.T) {
	const limit = 1 << 20
	huge := strings.Repeat("x", 16<<20)
	r := protocol.NewLineReader(strings.NewReader(huge+"\nok\n"), limit)
	got := readAll(t, r)
	want := []string{fmt.Sprintf("!too large %d", limit), "ok", "!EOF"}
	if !slices.Equal(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	if c := protocol.LineBufferCap(r); c > 2*limit {
		t.Errorf("line buffer grew to %d bytes for a limit of %d", c, limit)
	}
}

func TestLineReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := protocol.NewLineReader(io.MultiReader(strings.NewReader("a\npartial"), iotest.ErrReader(boom)), 0)
	got := readAll(t, r)
	want := []string{"a", "!boom"}
	if !slices.Equal(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("Next after error = %v, want %v again", err, boom)
	}
}

func TestMessageTooLargeErrorText(t *testing.T) {
	err := &protocol.MessageTooLargeError{Limit: protocol.DefaultMaxMessageSize}
	if got, want := err.Error(), "message exceeds the limit of 4194304 bytes"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// watchdog fails the test if done is not closed in time, instead of letting
// a deadlock hang the whole run.
func watchdog(t testing.TB, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10s", what)
	}
}

func TestStreamWriterConcurrentSend(t *testing.T) {
	const senders, perSender = 50, 200
	var out syncBuffer
	w := protocol.NewStreamWriter(&out, func(err error) { t.Errorf("onError: %v", err) })

	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for n := range perSender {
				// Frames of varied length, some larger than the write buffer.
				pad := strings.Repeat("p", (g*perSender+n)%97)
				if n == 0 {
					pad = strings.Repeat("P", 70<<10)
				}
				w.Send(fmt.Appendf(nil, `{"g":%d,"n":%d,"pad":%q}`, g, n, pad))
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	text := out.String()
	if !strings.HasSuffix(text, "\n") {
		t.Fatal("output does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != senders*perSender {
		t.Fatalf("got %d lines, want %d", len(lines), senders*perSender)
	}
	seen := make(map[[2]int]bool)
	next := make([]int, senders) // frames of one sender stay in order
	for _, line := range lines {
		var g, n int
		if _, err := fmt.Sscanf(line, `{"g":%d,"n":%d,`, &g, &n); err != nil || !strings.HasSuffix(line, `"}`) {
			t.Fatalf("torn line %.80q: %v", line, err)
		}
		if seen[[2]int{g, n}] || n != next[g] {
			t.Fatalf("frame g=%d n=%d out of order or repeated", g, n)
		}
		seen[[2]int{g, n}] = true
		next[g]++
	}
	if p := w.Pending(); p != 0 {
		t.Errorf("Pending after Close = %d, want 0", p)
	}
}

func TestStreamWriterCloseFlushes(t *testing.T) {
	var out syncBuffer
	w := protocol.NewStreamWriter(&out, nil)
	var want strings.Builder
	for i := range 1000 {
		frame := fmt.Sprintf(`{"i":%d}`, i)
		w.Send([]byte(frame))
		want.WriteString(frame + "\n")
	}
	w.Send(nil) // ignored: an empty frame would be a blank line
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if out.String() != want.String() {
		t.Errorf("output differs from the frames sent (%d bytes, want %d)", len(out.String()), want.Len())
	}

	// Close is idempotent and Send after Close is a no-op.
	w.Send([]byte(`{"late":true}`))
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if strings.Contains(out.String(), "late") {
		t.Error("a frame sent after Close was written")
	}
}

func TestStreamWriterConcurrentClose(t *testing.T) {
	w := protocol.NewStreamWriter(io.Discard, nil)
	w.Send([]byte(`{}`))
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { _ = w.Close() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	watchdog(t, "concurrent Close", done)
}

// failWriter accepts the first ok bytes, then fails every write.
type failWriter struct {
	mu  sync.Mutex
	ok  int
	err error
}

func (f *failWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) <= f.ok {
		f.ok -= len(p)
		return len(p), nil
	}
	return 0, f.err
}

func TestStreamWriterWriteError(t *testing.T) {
	boom := errors.New("broken pipe")
	var calls atomic.Int32
	var got atomic.Value
	w := protocol.NewStreamWriter(&failWriter{err: boom}, func(err error) {
		calls.Add(1)
		got.Store(err)
	})
	big := bytes.Repeat([]byte("x"), 100<<10) // larger than the buffer: fails at once
	w.Send(big)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10000 {
			w.Send([]byte(`{"after":"error"}`))
		}
	}()
	watchdog(t, "Send after a write error", done)

	if err := w.Close(); !errors.Is(err, boom) {
		t.Errorf("Close = %v, want %v", err, boom)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("onError called %d times, want 1", n)
	}
	if err, _ := got.Load().(error); !errors.Is(err, boom) {
		t.Errorf("onError got %v, want %v", err, boom)
	}
	if p := w.Pending(); p != 0 {
		t.Errorf("Pending after a write error = %d, want 0", p)
	}
}

// gateWriter blocks every Write until the gate is closed.
type gateWriter struct {
	gate chan struct{}
	out  syncBuffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	<-g.gate
	return g.out.Write(p)
}

// Send must not wait for a slow peer; Pending shows what is backed up.
func TestStreamWriterSendNeverBlocks(t *testing.T) {
	gw := &gateWriter{gate: make(chan struct{})}
	w := protocol.NewStreamWriter(gw, nil)
	frame := bytes.Repeat([]byte("y"), 1000)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			w.Send(frame)
		}
	}()
	watchdog(t, "Send while the writer is blocked", done)

	if p := w.Pending(); p != 1000*(len(frame)+1) {
		t.Errorf("Pending = %d, want %d", p, 1000*(len(frame)+1))
	}
	close(gw.gate)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, want := len(gw.out.String()), 1000*(len(frame)+1); got != want {
		t.Errorf("wrote %d bytes, want %d", got, want)
	}
	if p := w.Pending(); p != 0 {
		t.Errorf("Pending after Close = %d, want 0", p)
	}
}
