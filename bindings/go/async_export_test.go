//go:build cgo
// +build cgo

package polylimit

// Hooks for the external tests of async.go.

import "time"

// MayBlock reports whether a check of c that finds few checks in flight may
// make the blocking call now.
func MayBlock(c *Client) bool { return c.async.mayBlock() }

// BatchState is how many batch goroutines of c run and how long ago the
// last one ended (-1: none has).
func BatchState(c *Client) (running int32, endedAgo time.Duration) {
	end := c.async.batchEnd.Load()
	if end == 0 {
		return c.async.batching.Load(), -1
	}
	return c.async.batching.Load(), time.Duration(monoNow() - end)
}

// SetBatchState sets what BatchState reports (endedAgo < 0: none has ended).
func SetBatchState(c *Client, running int32, endedAgo time.Duration) {
	c.async.batching.Store(running)
	end := int64(0)
	if endedAgo >= 0 {
		end = monoNow() - int64(endedAgo)
	}
	c.async.batchEnd.Store(end)
}

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
