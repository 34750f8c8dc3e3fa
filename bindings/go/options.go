package polylimit

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The options only convert Go types to the C ABI's: every range is checked
// once, by the library, whose error (ErrInvalidArgument, "<name> = <value> is
// out of range <min>..<max>") is the same in every language. The bounds are
// the Min*/Max* constants of vocabulary_gen.go. A client option left at 0
// takes the library's default (Default*).

// clientConfig mirrors polylimit_client_options; 0 means the library's default.
type clientConfig struct {
	poolSize         int32
	connectTimeout   int32 // ms
	commandTimeout   int32 // ms
	acquireTimeout   int32 // ms
	keepalive        int32 // s
	disableKeepalive bool
	idleCheck        int32 // ms
	name             string
	tlsCAFile        string
	tlsCADir         string
	tlsCertFile      string
	tlsKeyFile       string
	tlsServerName    string
	tlsInsecure      bool
	noCoalescing     bool
	blockingChecks   int32 // WithBlockingChecks + 1; 0: unset (Go only)
	waitStrategy     int32 // WithWaitStrategy; 0: unset (Go only)
	err              *Error
}

func (c *clientConfig) fail(format string, args ...interface{}) {
	if c.err == nil {
		c.err = newError(ErrInvalidArgument, format, args...)
	}
}

// setString stores s in *dst, refusing a NUL byte: the string goes to C as a
// NUL-terminated one.
func (c *clientConfig) setString(dst *string, what, s string) {
	if strings.IndexByte(s, 0) >= 0 {
		c.fail("%s %q contains a NUL byte", what, s)
		return
	}
	*dst = s
}

// Option configures Open.
type Option func(*clientConfig)

// WithName names the client: its metrics are labelled client="name"
// (StatsPrometheus, PrometheusText, the promcollector package), so that
// several clients, in one process or many, can share one Prometheus page.
// Up to 128 letters, digits and _ - . : / (the library checks; Open fails
// with ErrInvalidArgument otherwise). "" (the default): no label.
func WithName(name string) Option {
	return func(c *clientConfig) { c.setString(&c.name, "name", name) }
}

// The TLS options apply to TLS URLs (rediss://, and the TLS forms of Cluster
// and Sentinel URLs). The library refuses them on a URL without TLS
// (ErrInvalidArgument), rather than ignoring them. Files are read by the
// library when it connects.

// WithTLSCAFile trusts the CAs of a PEM bundle instead of the system's.
func WithTLSCAFile(path string) Option {
	return func(c *clientConfig) { c.setString(&c.tlsCAFile, "TLS CA file", path) }
}

// WithTLSCADir trusts the CAs of a directory of hashed certificates (as
// made by openssl rehash / c_rehash).
func WithTLSCADir(dir string) Option {
	return func(c *clientConfig) { c.setString(&c.tlsCADir, "TLS CA directory", dir) }
}

// WithTLSClientCert presents a client certificate (PEM) and its private key
// (PEM), for servers that require mutual TLS.
func WithTLSClientCert(certFile, keyFile string) Option {
	return func(c *clientConfig) {
		c.setString(&c.tlsCertFile, "TLS certificate file", certFile)
		c.setString(&c.tlsKeyFile, "TLS key file", keyFile)
	}
}

// WithTLSServerName sets the SNI name and the name the server's certificate
// must match (default: the host in the URL).
func WithTLSServerName(name string) Option {
	return func(c *clientConfig) { c.setString(&c.tlsServerName, "TLS server name", name) }
}

// WithTLSInsecureSkipVerify turns off certificate and host name
// verification. For tests only: anyone on the path can then impersonate the
// server.
func WithTLSInsecureSkipVerify() Option {
	return func(c *clientConfig) { c.tlsInsecure = true }
}

// WithPoolSize bounds the connections per Redis node (MinPoolSize..MaxPoolSize;
// 0: DefaultPoolSize, 2). Concurrent calls share them, pipelined.
func WithPoolSize(n int) Option {
	return func(c *clientConfig) { c.poolSize = cInt(int64(n)) }
}

// WithConnectTimeout bounds a TCP or unix-socket connect (default 1 s).
// Durations are whole milliseconds, rounded up; 0 selects the default.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.connectTimeout = cInt(millis(d)) }
}

// WithCommandTimeout bounds one call from queueing to the whole reply (default 1 s).
// Rounded up to whole milliseconds; 0 selects the default.
func WithCommandTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.commandTimeout = cInt(millis(d)) }
}

// WithAcquireTimeout bounds the wait for room when a connection already has
// 4096 calls queued (default 1 s). Rounded up to whole milliseconds; 0 selects the default.
func WithAcquireTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.acquireTimeout = cInt(millis(d)) }
}

// WithKeepAlive sets the TCP keepalive interval (default 15 s), in whole
// seconds rounded up; 0 selects the default. WithoutKeepAlive turns it off.
func WithKeepAlive(d time.Duration) Option {
	return func(c *clientConfig) { c.keepalive = cInt(ceilDiv(d, time.Second)) }
}

// WithoutKeepAlive turns TCP keepalive off.
func WithoutKeepAlive() Option { return func(c *clientConfig) { c.disableKeepalive = true } }

// WithIdleCheck PINGs a connection idle longer than d before reusing it
// (default 30 s). Rounded up to whole milliseconds; 0 selects the default.
func WithIdleCheck(d time.Duration) Option {
	return func(c *clientConfig) { c.idleCheck = cInt(millis(d)) }
}

// WithoutCoalescing makes every check its own script call. By default
// checks of one key that arrive while a call of that key is in flight (from
// any goroutine, blocking or async) wait in the client and go out together
// as one call, decided exactly as separate calls would be (docs/limiter.md,
// "Hot keys: coalescing"), and checks of one limit on different keys go
// together as keys calls ("Many keys of one limit"); Stats().RoundTrips
// counts the calls.
func WithoutCoalescing() Option { return func(c *clientConfig) { c.noCoalescing = true } }

// millis converts a duration to whole milliseconds, rounded up (as the
// Python and Java bindings do): a positive duration below 1 ms is 1 ms, never
// 0 (which the C ABI reads as "default"). A negative duration is rounded
// away from zero, so it stays negative and the library rejects it.
func millis(d time.Duration) int64 { return ceilDiv(d, time.Millisecond) }

// ceilDiv divides d by unit, rounding away from zero.
func ceilDiv(d, unit time.Duration) int64 {
	q, r := d/unit, d%unit
	switch {
	case r > 0:
		q++
	case r < 0:
		q--
	}
	return int64(q)
}

// cInt converts to a C int field. A value beyond the int32 range is clamped
// to math.MaxInt32 / math.MinInt32 rather than wrapped: every bound of an int
// field is far inside the int32 range (a test checks it), so the library
// still rejects the clamped value with its own message ("pool_size =
// 2147483647 is out of range 1..4096"); only the value it quotes differs from
// the caller's. Wrapping instead could turn a huge value into a valid one.
func cInt(v int64) int32 {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}

// limiterConfig mirrors polylimit_limiter_options.
type limiterConfig struct {
	prefix          string
	prefixSet       bool
	clock           int32
	algorithm       int32
	burst           int64
	burstSet        bool
	denyCache       int32
	failurePolicy   int32
	breakerFailures int32
	breakerCooldown int32 // ms
	shadow          bool
	block           int64 // ms
	durableReplicas int32
	durableTimeout  int32 // ms
	durableAOF      bool
	leaseUnits      int64
	leaseMs         int64
	err             *Error
}

func (c *limiterConfig) fail(format string, args ...interface{}) {
	if c.err == nil {
		c.err = newError(ErrInvalidArgument, format, args...)
	}
}

// LimiterOption configures Client.Limiter and Client.LimiterFor.
type LimiterOption func(*limiterConfig)

// WithPrefix sets the Redis key prefix (default "pl"; 1..MaxPrefixLen bytes).
// Limiters that share a prefix and a key share the count, whatever the
// process or language (with the same algorithm: each algorithm keeps its own
// kind of state). A prefix goes to C as a NUL-terminated string, so it cannot
// contain a NUL byte.
func WithPrefix(prefix string) LimiterOption {
	return func(c *limiterConfig) {
		if strings.IndexByte(prefix, 0) >= 0 {
			c.fail("prefix %q contains a NUL byte", prefix)
			return
		}
		c.prefix, c.prefixSet = prefix, true
	}
}

// Clock says where a limiter's time comes from (polylimit_clock): ClockServer
// (the Redis server's TIME, the default) or ClockClient.
type Clock int

// String returns the clock's name, e.g. "server".
func (c Clock) String() string { return enumName(int(c), clockNames[:], "Clock") }

// WithClock sets where time comes from: ClockServer (the default) or
// ClockClient.
func WithClock(clock Clock) LimiterOption {
	return func(c *limiterConfig) { c.clock = cInt(int64(clock)) }
}

// WithClientClock takes time from this process's clock instead of the Redis
// server's TIME: WithClock(ClockClient). Only for tests and hosts with
// trusted clocks: skewed clients then disagree about the window.
func WithClientClock() LimiterOption { return WithClock(ClockClient) }

// Algorithm is a rate-limiting algorithm (polylimit_algorithm): SlidingLog,
// SlidingCounter, FixedWindow or GCRA; see docs/limiter.md for their
// exactness and cost.
type Algorithm int

// String returns the algorithm's name, e.g. "gcra".
func (a Algorithm) String() string { return enumName(int(a), algorithmNames[:], "Algorithm") }

// ParseAlgorithm returns the algorithm of a name ("sliding_log",
// "sliding_counter", "fixed_window", "gcra"), as configuration files and
// the other bindings spell it.
func ParseAlgorithm(name string) (Algorithm, error) {
	for i, n := range algorithmNames {
		if n == name {
			return Algorithm(i), nil
		}
	}
	return 0, newError(ErrInvalidArgument, "algorithm %q is unknown (%s)", name, strings.Join(algorithmNames[:], ", "))
}

// WithAlgorithm picks the algorithm: SlidingLog (the default),
// SlidingCounter, FixedWindow or GCRA.
func WithAlgorithm(a Algorithm) LimiterOption {
	return func(c *limiterConfig) { c.algorithm = cInt(int64(a)) }
}

// WithBurst sets how many units GCRA admits at once (0..MaxBurst; 0: the
// limit). Only for LimiterFor; in a spec write "10/s burst 20".
func WithBurst(n int) LimiterOption {
	return func(c *limiterConfig) { c.burst, c.burstSet = int64(n), true }
}

// WithDenyCache turns on the local deny cache, remembering up to size keys
// (LRU; 0: off, at most MaxDenyCacheSize): after Redis denies a key, later
// checks of it in this process are denied locally (Result.Cached) without a
// round trip until RetryAfter has passed. Reset and Refund clear a key's
// entry.
func WithDenyCache(size int) LimiterOption {
	return func(c *limiterConfig) { c.denyCache = cInt(int64(size)) }
}

// FailurePolicy says what a check answers when Redis cannot (timeout,
// refused or broken connection, pool exhausted, circuit breaker open):
// FailError, FailOpen, FailClosed or FailLocal (polylimit_failure_policy).
// Error replies (script, ACL, auth) are never hidden.
type FailurePolicy int

// String returns the policy's name, e.g. "open".
func (p FailurePolicy) String() string {
	return enumName(int(p), failurePolicyNames[:], "FailurePolicy")
}

// WithFailurePolicy sets what checks answer while Redis is unreachable.
func WithFailurePolicy(p FailurePolicy) LimiterOption {
	return func(c *limiterConfig) { c.failurePolicy = cInt(int64(p)) }
}

// WithCircuitBreaker opens a circuit breaker after failures consecutive
// outages (0: no breaker): calls then fail fast (and the failure policy
// answers) for cooldown (rounded up to whole milliseconds; 0: the default,
// 1s; at most MaxBreakerCooldownMs), after which one probe goes through.
func WithCircuitBreaker(failures int, cooldown time.Duration) LimiterOption {
	return func(c *limiterConfig) {
		c.breakerFailures, c.breakerCooldown = cInt(int64(failures)), cInt(millis(cooldown))
	}
}

// WithShadow turns on shadow (dry-run) mode: checks decide, consume and count
// as usual but always admit; a would-be denial comes back Allowed with
// Result.Shadowed set.
func WithShadow() LimiterOption { return func(c *limiterConfig) { c.shadow = true } }

// WithBlock turns on the punitive block: a key denied by a check stays
// denied for d (RetryAfter says so), even once the limit would admit it.
// Rounded up to whole milliseconds; 0: off.
func WithBlock(d time.Duration) LimiterOption {
	return func(c *limiterConfig) { c.block = millis(d) }
}

// WithDurable turns on failover-safe mode: a check is admitted only once its
// write is acknowledged by replicas replicas (WAIT, sent with the script in
// one round trip) within timeout (rounded up to whole milliseconds; 0: the
// default, DefaultDurableTimeoutMs ms; it must be below the client's command
// timeout). An admitted check whose write is not acknowledged in time fails
// with ErrNotDurable (its units stay consumed on the master), which the
// failure policy handles like an outage. replicas 0: off.
func WithDurable(replicas int, timeout time.Duration) LimiterOption {
	return func(c *limiterConfig) {
		c.durableReplicas, c.durableTimeout = cInt(int64(replicas)), cInt(millis(timeout))
	}
}

// WithDurableAOF adds to failover-safe mode (or turns it on, with 0
// replicas) that the write must be fsynced to the master's append-only file
// (WAITAOF: Redis 7.2 or later, appendonly yes); the replicas of WithDurable
// must then have fsynced it too.
func WithDurableAOF() LimiterOption { return func(c *limiterConfig) { c.durableAOF = true } }

// WithLease turns on leases: a check takes units units of the key from Redis
// in one round trip and hands them out in this process without one, for d
// (rounded up to whole milliseconds; 0: the default, DefaultLeaseMs ms; at
// most the window). Unused units go back when the lease ends, the limiter is
// closed or the client closes. Admissions can exceed the limit in a window by
// at most units per limiter holding leases on the key (docs/limiter.md,
// "Leases"). units 0: off; not with WithBlock.
func WithLease(units int, d time.Duration) LimiterOption {
	return func(c *limiterConfig) { c.leaseUnits, c.leaseMs = int64(units), millis(d) }
}

// exactMillis converts a window, which sets the rate, to milliseconds. It is
// not rounded: a window that is not a whole number of milliseconds is
// refused (as in the Python and Java bindings) rather than silently made
// slower. Its range is the library's to check.
func exactMillis(what string, d time.Duration) (int64, *Error) {
	if d%time.Millisecond != 0 {
		return 0, newError(ErrInvalidArgument, "%s %v is not a whole number of milliseconds", what, d)
	}
	return int64(d / time.Millisecond), nil
}

// enumName is the vocabulary name of value, or "Type(value)" for a value the
// table lacks.
func enumName(value int, names []string, typ string) string {
	if value >= 0 && value < len(names) {
		return names[value]
	}
	return typ + "(" + strconv.Itoa(value) + ")"
}
