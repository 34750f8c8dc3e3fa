package polylimit

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// clientConfig mirrors polylimit_client_options; 0 means the library's default.
type clientConfig struct {
	poolSize         int
	connectTimeout   time.Duration
	commandTimeout   time.Duration
	acquireTimeout   time.Duration
	keepalive        time.Duration
	disableKeepalive bool
	idleCheck        time.Duration
	err              *Error // first bad option, reported by Open
}

// Option configures Open.
type Option func(*clientConfig)

func (c *clientConfig) fail(format string, args ...interface{}) {
	if c.err == nil {
		c.err = newError(ErrInvalidArgument, format, args...)
	}
}

// WithPoolSize bounds the connections open at once (default 8).
func WithPoolSize(n int) Option {
	return func(c *clientConfig) {
		if n <= 0 || n > math.MaxInt32 {
			c.fail("pool size %d is out of range (1..%d)", n, math.MaxInt32)
			return
		}
		c.poolSize = n
	}
}

// WithConnectTimeout bounds a TCP or unix-socket connect (default 1 s).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.connectTimeout = c.positive("connect timeout", d) }
}

// WithCommandTimeout bounds the send plus reply of one command (default 1 s).
func WithCommandTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.commandTimeout = c.positive("command timeout", d) }
}

// WithAcquireTimeout bounds the wait for a free pooled connection (default 1 s).
func WithAcquireTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.acquireTimeout = c.positive("acquire timeout", d) }
}

// WithKeepAlive sets the TCP keepalive interval (default 15 s); whole seconds.
func WithKeepAlive(d time.Duration) Option {
	return func(c *clientConfig) {
		if d < time.Second || d > math.MaxInt32*time.Second {
			c.fail("keepalive %v is out of range (at least 1s)", d)
			return
		}
		c.keepalive = d
	}
}

// WithoutKeepAlive turns TCP keepalive off.
func WithoutKeepAlive() Option { return func(c *clientConfig) { c.disableKeepalive = true } }

// WithIdleCheck PINGs a connection idle longer than d before reusing it
// (default 30 s).
func WithIdleCheck(d time.Duration) Option {
	return func(c *clientConfig) { c.idleCheck = c.positive("idle check", d) }
}

// positive checks a duration that goes to C as milliseconds in an int. A
// positive duration below 1 ms becomes 1 ms, since 0 would mean "default".
func (c *clientConfig) positive(what string, d time.Duration) time.Duration {
	if d <= 0 || d/time.Millisecond > math.MaxInt32 {
		c.fail("%s %v is out of range (1ms..%dms)", what, d, math.MaxInt32)
		return 0
	}
	return d
}

func millis(d time.Duration) int {
	ms := int(d / time.Millisecond)
	if d > 0 && ms == 0 {
		ms = 1
	}
	return ms
}

// limiterConfig mirrors polylimit_limiter_options.
type limiterConfig struct {
	prefix          string
	prefixSet       bool
	clientClock     bool
	algorithm       Algorithm
	burst           int64
	burstSet        bool
	denyCache       int
	failurePolicy   FailurePolicy
	breakerFailures int
	breakerCooldown time.Duration
	shadow          bool
	block           time.Duration
	err             *Error
}

func (c *limiterConfig) fail(format string, args ...interface{}) {
	if c.err == nil {
		c.err = newError(ErrInvalidArgument, format, args...)
	}
}

// LimiterOption configures Client.Limiter and Client.LimiterFor.
type LimiterOption func(*limiterConfig)

// WithPrefix sets the Redis key prefix (default "pl"). Limiters that share a
// prefix and a key share the count, whatever the process or language (with
// the same algorithm: each algorithm keeps its own kind of state).
func WithPrefix(prefix string) LimiterOption {
	return func(c *limiterConfig) {
		if strings.IndexByte(prefix, 0) >= 0 {
			c.fail("prefix %q contains a NUL byte", prefix)
			return
		}
		c.prefix, c.prefixSet = prefix, true
	}
}

// WithClientClock takes time from this process's clock instead of the Redis
// server's TIME. Only for tests and hosts with trusted clocks: skewed clients
// then disagree about the window.
func WithClientClock() LimiterOption { return func(c *limiterConfig) { c.clientClock = true } }

// Algorithm names a rate-limiting algorithm (polylimit_algorithm).
type Algorithm string

// The algorithms; see docs/limiter.md for their exactness and cost.
const (
	SlidingLog     Algorithm = "sliding_log"     // exact sliding-window log (a ZSET per key); the default
	SlidingCounter Algorithm = "sliding_counter" // two fixed windows weighted by elapsed time; O(1), approximate
	FixedWindow    Algorithm = "fixed_window"    // a counter per aligned window; O(1), up to 2x limit across an edge
	GCRA           Algorithm = "gcra"            // GCRA / token bucket: smooth, up to the burst at once; O(1)
)

// WithAlgorithm picks the algorithm: SlidingLog (the default),
// SlidingCounter, FixedWindow or GCRA (or their names, e.g. "gcra").
func WithAlgorithm(a Algorithm) LimiterOption { return func(c *limiterConfig) { c.algorithm = a } }

// algorithmID maps an algorithm name to polylimit_algorithm.
func algorithmID(a Algorithm) (int, *Error) {
	switch a {
	case "", SlidingLog:
		return 0, nil
	case SlidingCounter:
		return 1, nil
	case FixedWindow:
		return 2, nil
	case GCRA:
		return 3, nil
	}
	return 0, newError(ErrInvalidArgument, "algorithm %q is unknown (known: sliding_log, sliding_counter, fixed_window, gcra)", string(a))
}

// WithBurst sets how many units GCRA admits at once (default: the limit).
// Only for LimiterFor with GCRA; in a spec write "10/s burst 20".
func WithBurst(n int) LimiterOption {
	return func(c *limiterConfig) {
		if n <= 0 {
			c.fail("burst %d is out of range (at least 1)", n)
			return
		}
		c.burst, c.burstSet = int64(n), true
	}
}

// WithDenyCache turns on the local deny cache, remembering up to size keys
// (LRU): after Redis denies a key, later checks of it in this process are
// denied locally (Result.Cached) without a round trip until RetryAfter has
// passed. Reset and Refund clear a key's entry.
func WithDenyCache(size int) LimiterOption {
	return func(c *limiterConfig) {
		if size <= 0 || size > math.MaxInt32 {
			c.fail("deny cache size %d is out of range (1..10000000)", size)
			return
		}
		c.denyCache = size
	}
}

// FailurePolicy says what a check answers when Redis cannot (timeout,
// refused or broken connection, pool exhausted, circuit breaker open).
// Error replies (script, ACL, auth) are never hidden.
type FailurePolicy int

// The policies, with the values of polylimit_failure_policy.
const (
	FailError  FailurePolicy = 0 // return the error (the default)
	FailOpen   FailurePolicy = 1 // admit, with Result.Degraded
	FailClosed FailurePolicy = 2 // deny, with Result.Degraded; RetryAfter is the breaker cool-down (or 1s)
	FailLocal  FailurePolicy = 3 // decide with an in-process limiter (same algorithm and limits); Result.Degraded
)

// String returns the policy's name, e.g. "FailOpen".
func (p FailurePolicy) String() string {
	switch p {
	case FailError:
		return "FailError"
	case FailOpen:
		return "FailOpen"
	case FailClosed:
		return "FailClosed"
	case FailLocal:
		return "FailLocal"
	}
	return "FailurePolicy(" + strconv.Itoa(int(p)) + ")"
}

// WithFailurePolicy sets what checks answer while Redis is unreachable.
func WithFailurePolicy(p FailurePolicy) LimiterOption {
	return func(c *limiterConfig) {
		if p < FailError || p > FailLocal {
			c.fail("failure policy %d is unknown", int(p))
			return
		}
		c.failurePolicy = p
	}
}

// WithCircuitBreaker opens a circuit breaker after failures consecutive
// outages: calls then fail fast (and the failure policy answers) for
// cooldown (0: 1s, at most 1h), after which one probe goes through.
func WithCircuitBreaker(failures int, cooldown time.Duration) LimiterOption {
	return func(c *limiterConfig) {
		if failures <= 0 || failures > math.MaxInt32 {
			c.fail("circuit breaker failures %d is out of range (at least 1)", failures)
			return
		}
		if cooldown < 0 || cooldown > time.Hour {
			c.fail("circuit breaker cool-down %v is out of range (0..1h)", cooldown)
			return
		}
		c.breakerFailures, c.breakerCooldown = failures, cooldown
	}
}

// WithShadow turns on shadow (dry-run) mode: checks decide, consume and count
// as usual but always admit; a would-be denial comes back Allowed with
// Result.Shadowed set.
func WithShadow() LimiterOption { return func(c *limiterConfig) { c.shadow = true } }

// WithBlock turns on the punitive block: a key denied by a check stays
// denied for d (RetryAfter says so), even once the limit would admit it.
func WithBlock(d time.Duration) LimiterOption {
	return func(c *limiterConfig) {
		if d <= 0 {
			c.fail("block %v is out of range (positive, whole milliseconds)", d)
			return
		}
		if d%time.Millisecond != 0 {
			c.fail("block %v is not a whole number of milliseconds", d)
			return
		}
		c.block = d
	}
}
