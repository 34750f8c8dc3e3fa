package polylimit

import "time"

// Result is one decision. A denial is a Result with Allowed false, never an
// error.
type Result struct {
	Allowed    bool          // the cost was admitted (and consumed)
	Limit      int           // the limit that decided (GCRA: the burst)
	Remaining  int           // units left in the window after this decision
	RetryAfter time.Duration // 0 when allowed; else until this cost would be admitted
	ResetAfter time.Duration // until the key is back to full capacity
	Granted    int           // units admitted: the cost or 0; AllowAtMost: how many
	Cached     bool          // answered by the local deny cache (WithDenyCache)
	Degraded   bool          // answered by the failure policy, not by Redis
	Shadowed   bool          // denied, but admitted because of WithShadow
}

// Stats are the counters of one Client (all its limiters) since Open.
type Stats struct {
	Checks          uint64 // checks decided or failed (each key of AllowMany counts)
	Admitted        uint64
	Denied          uint64
	Errors          uint64 // checks that returned an error
	RoundTrips      uint64 // to Redis; a pipelined batch (AllowMany) is one
	NoscriptReloads uint64 // SCRIPT LOADs after a NOSCRIPT reply
	CacheHits       uint64 // answered by the local deny cache
	Degraded        uint64 // answered by the failure policy
	NearLimit       uint64 // admitted with less than 10% of the limit left
	LatencyCount    uint64 // checks in the latency histogram
	LatencySum      time.Duration
	EvictingNodes   uint64          // Redis nodes whose maxmemory policy can evict limiter keys (a gauge; docs/deployments.md)
	ConnectAttempts uint64          // connects tried to Redis data nodes, made or failed (bounded by the reconnect backoff)
	ScriptCalls     uint64          // script calls sent to Redis; a coalesced call (several checks of one key) counts once
	Coalesced       uint64          // checks decided in one script call with others of their key (docs/limiter.md, "Hot keys")
	LeasedUnits     uint64          // units taken from Redis by leases (WithLease; docs/limiter.md, "Leases")
	RefundedUnits   uint64          // unused leased units given back
	StrandedUnits   uint64          // unused leased units that could not be given back (Redis frees them with the window)
	Latency         []LatencyBucket // the histogram, by increasing UpperBound
}

// LatencyBucket is one bucket of the latency histogram (not cumulative).
type LatencyBucket struct {
	UpperBound time.Duration // the last bucket's is math.MaxInt64: +Inf
	Count      uint64
}
