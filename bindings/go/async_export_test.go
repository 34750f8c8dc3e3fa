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
