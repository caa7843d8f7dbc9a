package fakemcp

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

func TestServeAnswersInOrder(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{not json`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"nope"}`,
	}, "\n") + "\n"
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(strings.NewReader(in), pw); pw.Close() }()
	var got []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{`"id":0,"result"`, `"id":null,"error":{"code":-32700`, `"text":"hi"`, `"code":-32601`}
	if len(got) != len(want) {
		t.Fatalf("got %d replies, want %d: %q", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("reply %d = %s, want it to contain %s", i, got[i], w)
		}
	}
	if n := len(s.Received()); n != 4 {
		t.Errorf("received %d messages, want 4 (the malformed one is not recorded)", n)
	}
}
