package protocol

// WaitPending blocks until [StreamWriter.Pending] is at most max, and reports whether it is.
// It returns false, without waiting further, when stop is closed first. A writer that failed
// has nothing pending; one that was closed has written everything it could, so neither keeps
// WaitPending waiting. It is how a reader applies backpressure to a peer that does not read
// its answers: stop taking new messages until the backlog has drained below a mark.
func (w *StreamWriter) WaitPending(max int, stop <-chan struct{}) bool {
	for {
		w.mu.Lock()
		if w.pending <= max || w.failed {
			w.mu.Unlock()
			return true
		}
		if w.drained == nil {
			w.drained = make(chan struct{})
		}
		drained := w.drained
		w.mu.Unlock()
		select {
		case <-drained:
		case <-w.done:
			return w.Pending() <= max
		case <-stop:
			return false
		}
	}
}

// wakeWaiters tells every WaitPending that pending changed. The caller holds w.mu.
func (w *StreamWriter) wakeWaiters() {
	if w.drained != nil {
		close(w.drained)
		w.drained = nil
	}
}
