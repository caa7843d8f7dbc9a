package mcptest_test

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// TestEventReader: events are parsed as a client parses them: fields after the first colon and
// one optional space, data lines joined with newlines, CRLF endings, comments and events with no
// data skipped, a priming event (empty data) kept, and a last event the stream's end cut short
// returned rather than lost.
func TestEventReader(t *testing.T) {
	stream := ": keep-alive\n\n" +
		"id: s-0\nretry: 1000\ndata:\n\n" +
		"event: message\r\nid:s-1\r\ndata: {\"a\":1}\r\n\r\n" +
		"id: only-an-id\n\n" +
		"data: one\ndata:two\n\n" +
		"data: cut short"
	want := []mcptest.Event{
		{ID: "s-0", Retry: "1000"},
		{Event: "message", ID: "s-1", Data: `{"a":1}`},
		{Data: "one\ntwo"},
		{Data: "cut short"},
	}
	r := mcptest.NewEventReader(strings.NewReader(stream))
	var got []mcptest.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events\n got: %+v\nwant: %+v", got, want)
	}

	var data []string
	if err := mcptest.NewEventReader(strings.NewReader(stream)).Each(func(d string) { data = append(data, d) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"a":1}`, "one\ntwo", "cut short"}; !reflect.DeepEqual(data, want) {
		t.Errorf("data %q, want %q (the priming event skipped)", data, want)
	}
}
