//go:build cgo
// +build cgo

package polylimit

// Hooks for the external tests of async.go.

// QueuedWaiters is how many queued checks of c wait for their completion;
// -1 before c made its queue.
func QueuedWaiters(c *Client) int {
	cq := c.async.cq.Load()
	if cq == nil {
		return -1
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return len(cq.waiters)
}

// PollerStopped reports whether c's poller has returned (and freed the
// queue); false before c made its queue.
func PollerStopped(c *Client) bool {
	cq := c.async.cq.Load()
	if cq == nil {
		return false
	}
	select {
	case <-cq.done:
		return true
	default:
		return false
	}
}

// BatchedChecks is how many batched checks of l are queued or in a batch in
// flight (not yet delivered or dropped).
func BatchedChecks(l *Limiter) int { return int(l.batch.pending.Load()) }

// BatchQueue is how many batched checks of l wait for a batch goroutine.
func BatchQueue(l *Limiter) int {
	l.batch.mu.Lock()
	defer l.batch.mu.Unlock()
	return len(l.batch.queue)
}

// BatchGoroutines is how many batch goroutines l has.
func BatchGoroutines(l *Limiter) int {
	l.batch.mu.Lock()
	defer l.batch.mu.Unlock()
	return l.batch.running
}

// BatchesInFlight is how many batch goroutines a limiter may have.
const BatchesInFlight = batchesInFlight
