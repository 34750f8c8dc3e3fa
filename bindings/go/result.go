package redlimit

import "time"

// Result is one decision. A denial is a Result with Allowed false, never an
// error.
type Result struct {
	Allowed    bool          // the cost was admitted (and consumed)
	Limit      int           // the limit that decided
	Remaining  int           // units left in the window after this decision
	RetryAfter time.Duration // 0 when allowed; else until this cost would be admitted
	ResetAfter time.Duration // until the key is back to full capacity
	Cached     bool          // answered by the local deny cache
	Degraded   bool          // answered by the failure policy, not by Redis
}
