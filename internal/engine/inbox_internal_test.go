package engine

import (
	"testing"
	"time"
)

// WaitForRoom waits while the inbox is over its budget, returns once the actor has handled
// enough, and gives up on stop or when the connection has stopped.
func TestWaitForRoom(t *testing.T) {
	c := &Connection{done: make(chan struct{}), stateless: true}
	if !c.WaitForRoom(nil) {
		t.Fatal("WaitForRoom = false on an empty inbox")
	}
	c.inbox.add(InboxBytes + 1)
	stop := make(chan struct{})
	close(stop)
	if c.WaitForRoom(stop) {
		t.Fatal("WaitForRoom = true over the budget")
	}
	got := make(chan bool, 1)
	go func() { got <- c.WaitForRoom(nil) }()
	c.inbox.done(InboxBytes + 1)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("WaitForRoom = false once the actor caught up")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForRoom still waiting after the actor caught up")
	}
	c.inbox.add(InboxBytes + 1)
	go func() { got <- c.WaitForRoom(nil) }()
	close(c.done)
	select {
	case ok := <-got:
		if ok {
			t.Fatal("WaitForRoom = true after the connection stopped")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForRoom still waiting after the connection stopped")
	}
}
