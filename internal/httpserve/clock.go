package httpserve

import (
	"container/heap"
	"sync"
	"time"
)

// clockTick is the resolution of the sessions' timers: a passivation or an idle expiry happens
// at most this much after it is due.
const clockTick = 50 * time.Millisecond

// clock runs the legacy sessions' timers (passivation, idle expiry) on one goroutine, instead
// of a runtime timer per session: a session due at tick t is filed under t, and the goroutine
// sleeps until the earliest tick that has sessions filed, then has each of them look at itself
// (legacySession.fire), which files it again if it has something due later. A session is filed
// under at most one tick at a time, its earliest; a deadline that moves later leaves it filed
// early, and it files itself again when it looks. The goroutine runs while sessions are filed:
// the first filing starts it, and it ends when nothing is filed, or at stop.
type clock struct {
	mu      sync.Mutex
	slots   map[int64][]*legacySession // by tick
	order   ticks                      // the ticks of slots, earliest first
	wake    chan struct{}              // size 1: an earlier tick was filed, or stop
	live    int                        // sessions filed and not ended (filings of ended ones stay until they fire)
	running bool
	stopped bool
	done    chan struct{} // closed when the goroutine ends
}

// tickOf is the first tick at or after t.
func tickOf(t time.Time) int64 {
	n := t.UnixNano()
	return (n + int64(clockTick) - 1) / int64(clockTick)
}

// file files s under tick; it reports false when the clock has stopped. The caller holds s.mu;
// s was not filed (s.filed is 0), or is filed later than tick.
func (c *clock) file(s *legacySession, tick int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	if s.filed == 0 {
		c.live++
	}
	if c.slots == nil {
		c.slots = make(map[int64][]*legacySession)
		c.wake = make(chan struct{}, 1)
	}
	list, ok := c.slots[tick]
	c.slots[tick] = append(list, s)
	if !ok {
		heap.Push(&c.order, tick)
		if c.order[0] == tick {
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
	}
	if !c.running {
		c.running = true
		c.done = make(chan struct{})
		// Owned by the clock: it ends when nothing is filed, or at stop, which waits for it.
		go c.run()
	}
	return true
}

// unfiled says that a session filed is filed no more: it ended, or its tick fired. The caller
// holds s.mu.
func (c *clock) unfiled() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live--
	if c.live == 0 && c.running {
		select { // the goroutine ends now rather than at its next tick
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// firedSlot is a tick that came due, and the sessions filed under it.
type firedSlot struct {
	tick     int64
	sessions []*legacySession
}

// run fires the ticks as they come due, until nothing is filed or stop.
func (c *clock) run() {
	defer close(c.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var fired []firedSlot
	for {
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return
		}
		now := tickOf(time.Now())
		for len(c.order) > 0 && c.order[0] <= now {
			tick := heap.Pop(&c.order).(int64)
			fired = append(fired, firedSlot{tick, c.slots[tick]})
			delete(c.slots, tick)
		}
		if len(fired) > 0 {
			c.mu.Unlock()
			for i, f := range fired {
				for _, s := range f.sessions {
					s.fire(f.tick)
				}
				fired[i] = firedSlot{}
			}
			fired = fired[:0]
			continue
		}
		if c.live == 0 {
			// Nothing filed but the filings of sessions that ended: file starts another
			// goroutine when there is.
			c.slots, c.order = nil, nil
			c.running = false
			c.mu.Unlock()
			return
		}
		wait := time.Until(time.Unix(0, c.order[0]*int64(clockTick)))
		c.mu.Unlock()
		t.Reset(max(wait, 0))
		select {
		case <-t.C:
		case <-c.wake:
		}
	}
}

// stop ends the goroutine and drops what is filed; later filings fail.
func (c *clock) stop() {
	c.mu.Lock()
	c.stopped = true
	running, done := c.running, c.done
	c.slots, c.order = nil, nil
	if c.wake != nil {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
	if running {
		<-done
	}
}

// ticks is a min-heap of ticks.
type ticks []int64

func (h ticks) Len() int           { return len(h) }
func (h ticks) Less(i, j int) bool { return h[i] < h[j] }
func (h ticks) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *ticks) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *ticks) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
