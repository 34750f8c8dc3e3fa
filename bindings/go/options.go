package redlimit

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// clientConfig mirrors rl_client_options; 0 means the library's default.
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

// limiterConfig mirrors rl_limiter_options.
type limiterConfig struct {
	prefix      string
	prefixSet   bool
	clientClock bool
	algorithm   string
	err         *Error
}

// LimiterOption configures Client.Limiter and Client.LimiterFor.
type LimiterOption func(*limiterConfig)

// WithPrefix sets the Redis key prefix (default "rl"). Limiters that share a
// prefix and a key share the count, whatever the process or language.
func WithPrefix(prefix string) LimiterOption {
	return func(c *limiterConfig) {
		if strings.IndexByte(prefix, 0) >= 0 {
			if c.err == nil {
				c.err = newError(ErrInvalidArgument, "prefix %q contains a NUL byte", prefix)
			}
			return
		}
		c.prefix, c.prefixSet = prefix, true
	}
}

// WithClientClock takes time from this process's clock instead of the Redis
// server's TIME. Only for tests and hosts with trusted clocks: skewed clients
// then disagree about the window.
func WithClientClock() LimiterOption { return func(c *limiterConfig) { c.clientClock = true } }

// WithAlgorithm picks the algorithm by name. "sliding_log" (exact
// sliding-window log, the default) is the only one today.
func WithAlgorithm(name string) LimiterOption { return func(c *limiterConfig) { c.algorithm = name } }

// algorithmID maps an algorithm name to rl_algorithm.
func algorithmID(name string) (int, *Error) {
	switch name {
	case "", "sliding_log":
		return 0, nil
	}
	return 0, newError(ErrInvalidArgument, "algorithm %q is unknown (known: sliding_log)", name)
}

var units = map[string]time.Duration{
	"ms": time.Millisecond, "msec": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// ParseSpec parses a limit such as "100/minute", "10/s", "10 per second",
// "5 per 2 seconds" or "1000/1.5h" into a limit and a window. Range checks
// (limit and window bounds) are left to the library, which knows them.
func ParseSpec(spec string) (limit int, window time.Duration, err error) {
	bad := func(why string) (int, time.Duration, error) {
		return 0, 0, newError(ErrInvalidArgument, "limit spec %q: %s (want e.g. \"100/minute\" or \"5 per 2 seconds\")", spec, why)
	}
	s := strings.ToLower(strings.TrimSpace(spec))
	var count, per string
	if i := strings.IndexByte(s, '/'); i >= 0 {
		count, per = s[:i], s[i+1:]
	} else if i := strings.Index(s, " per "); i >= 0 {
		count, per = s[:i], s[i+len(" per "):]
	} else {
		return bad("no \"/\" or \"per\"")
	}
	n, perr := strconv.Atoi(strings.TrimSpace(count))
	if perr != nil {
		return bad("the limit is not an integer")
	}
	per = strings.TrimSpace(per)
	// Split "2 seconds" / "2seconds" / "seconds" into a multiplier and a unit.
	j := strings.IndexFunc(per, func(r rune) bool { return unicode.IsLetter(r) })
	if j < 0 {
		return bad("the window has no unit")
	}
	mult := 1.0
	if num := strings.TrimSpace(per[:j]); num != "" {
		if mult, perr = strconv.ParseFloat(num, 64); perr != nil || mult <= 0 || math.IsInf(mult, 0) {
			return bad("the window length is not a positive number")
		}
	}
	unit, ok := units[per[j:]]
	if !ok {
		return bad("unknown unit " + strconv.Quote(per[j:]))
	}
	w := math.Round(mult * float64(unit)) // "0.3h" must not come out a nanosecond short
	if w >= math.MaxInt64 {
		return bad("the window is too long")
	}
	return n, time.Duration(w), nil
}
