package mcptest

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// Event is one server-sent event. A priming event (an id and a retry, sent before anything
// else so that a client can resume) has empty Data.
type Event struct {
	Event, ID, Retry, Data string
}

// EventReader parses a text/event-stream, event by event, as a client does: data lines joined
// with newlines, comments skipped.
type EventReader struct {
	br *bufio.Reader
}

// NewEventReader reads the events of body.
func NewEventReader(body io.Reader) *EventReader { return &EventReader{br: bufio.NewReader(body)} }

// Next returns the next event, priming events included, and io.EOF at the end of the stream (or
// the error that ended it). An event not ended by a blank line before the stream's end is
// returned, as a browser does not, because a test wants to see what was sent.
func (r *EventReader) Next() (Event, error) {
	var ev Event
	var data []string
	for {
		line, err := r.br.ReadString('\n')
		if err != nil && line == "" {
			if data != nil {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
			return Event{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if data != nil {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
			ev = Event{} // an event with no data is not dispatched
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			data = append(data, value)
		case "id":
			ev.ID = value
		case "retry":
			ev.Retry = value
		case "event":
			ev.Event = value
		}
	}
}

// ReadString reads the stream's bytes up to and including delim, as bufio.Reader's does, for a
// test that looks at the framing itself (comments, keep-alives) between events.
func (r *EventReader) ReadString(delim byte) (string, error) { return r.br.ReadString(delim) }

// Read reads the stream's bytes that no event was parsed from yet.
func (r *EventReader) Read(p []byte) (int, error) { return r.br.Read(p) }

// NextData returns the data of the next event that carries a message, skipping priming
// events, and io.EOF at the end of the stream.
func (r *EventReader) NextData() (string, error) {
	for {
		ev, err := r.Next()
		if err != nil {
			return "", err
		}
		if ev.Data != "" {
			return ev.Data, nil
		}
	}
}

// RequireData is NextData for a stream that must go on: it fails t if the stream ends first.
// It reads without a bound of its own; the stream's connection or the test binary bounds it.
func (r *EventReader) RequireData(t testing.TB) string {
	t.Helper()
	data, err := r.NextData()
	if err != nil {
		t.Fatalf("the stream ended: %v", err)
	}
	return data
}

// Each calls fn with the data of every message event left in the stream, and returns the error
// that ended it other than io.EOF.
func (r *EventReader) Each(fn func(data string)) error {
	for {
		data, err := r.NextData()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		fn(data)
	}
}

// ReadEvents reads the events of body as they arrive, priming events included, onto the
// returned channel, which is closed at the end of the stream. The goroutine ends with the body,
// which its caller closes; the channel holds more events than any test produces, so an unread
// stream never blocks it.
func ReadEvents(body io.Reader) <-chan Event {
	ch := make(chan Event, 4096)
	go func() {
		defer close(ch)
		r := NewEventReader(body)
		for {
			ev, err := r.Next()
			if err != nil {
				return
			}
			ch <- ev
		}
	}()
	return ch
}

// ReadData is ReadEvents for the data of the events that carry a message (priming events
// skipped).
func ReadData(body io.Reader) <-chan string {
	ch := make(chan string, 4096)
	go func() {
		defer close(ch)
		r := NewEventReader(body)
		for {
			data, err := r.NextData()
			if err != nil {
				return
			}
			ch <- data
		}
	}()
	return ch
}
