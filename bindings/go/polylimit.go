//go:build cgo
// +build cgo

package polylimit

/*
#include <stdlib.h>
#include <polylimit.h>
*/
import "C"

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// HeaderVersion is the version of polylimit.h this package was compiled
// against; Version is that of the libpolylimit loaded at run time.
const HeaderVersion = C.POLYLIMIT_VERSION_STRING

// Version returns the run-time library version, e.g. "1.0.0".
func Version() string { return C.GoString(C.polylimit_version_string()) }

// checkVersion refuses a shared library older than the header: it may lack
// symbols or option fields this package uses.
func checkVersion() error {
	if rt := int(C.polylimit_version_number()); rt < int(C.POLYLIMIT_VERSION_NUMBER) {
		return newError(ErrInternal, "libpolylimit %s is older than the polylimit.h %s this package was built with",
			Version(), HeaderVersion)
	}
	return nil
}

// statusName is the library's name of a status code, e.g. "POLYLIMIT_ETIMEOUT".
func statusName(code ErrCode) string { return C.GoString(C.polylimit_status_name(C.int(code))) }

func cError(st C.int, e *C.polylimit_error) error {
	msg := C.GoString(&e.message[0])
	if msg == "" {
		msg = statusName(ErrCode(st))
	}
	return &Error{Code: ErrCode(st), Errno: syscall.Errno(e.sys_errno), Msg: msg, OutcomeUnknown: e.outcome_unknown != 0}
}

// cString copies s into C memory; the caller frees it. Strings for C's
// NUL-terminated parameters must not contain NUL.
func cString(what, s string) (*C.char, error) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return nil, newError(ErrInvalidArgument, "%s contains a NUL byte", what)
		}
	}
	return C.CString(s), nil
}

// Client is a connection pool to one Redis deployment. It is safe for
// concurrent use. Close it when done: that closes its limiters too. A
// finalizer closes a forgotten Client (once no Limiter made from it is
// reachable either), but only as a safety net.
type Client struct {
	// mu is held shared by every call into C on the client or on any of its
	// limiters (even abandoned ones), exclusively by Close: the C ABI forbids
	// closing a client while calls are in flight on it or its limiters.
	mu   sync.RWMutex
	h    *C.polylimit_client
	name string
	// shown is the URL as String shows it: redacted by the library.
	shown string
	async asyncState // blocking or queued checks, and the queue (async.go)
}

// errClientClosed is what calls on a closed Client return, in the words of
// the library's own error for calls on its limiters.
func errClientClosed() error { return newError(ErrClosed, "the client is closed") }

// Open opens a client for a URL:
//
//	redis://[user:pass@]host:port[/db]   rediss://...   unix:///path/to.sock[?db=N]
//	redis+cluster://h1:p1,h2:p2   redis+sentinel://h1:p1,h2:p2/master   memory://
//
// An empty url means the URL in the POLYLIMIT_URL environment variable; when
// that is unset too, Open fails with ErrInvalidArgument. There is no silent
// local default: a limiter local to this process (memory://) must be asked
// for by name.
//
// Connections are made lazily, on the first decision, so Open does no I/O.
func Open(url string, opts ...Option) (*Client, error) {
	if err := checkVersion(); err != nil {
		return nil, err
	}
	var cfg clientConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	curl, err := cString("url", url)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(curl))

	var copts C.polylimit_client_options
	if st := C.polylimit_client_options_init(&copts, C.POLYLIMIT_CLIENT_OPTIONS_VERSION); st != C.POLYLIMIT_OK {
		return nil, newError(ErrInternal, "polylimit_client_options_init failed (%d)", int(st))
	}
	copts.pool_size = C.int(cfg.poolSize)
	copts.connect_timeout_ms = C.int(cfg.connectTimeout)
	copts.command_timeout_ms = C.int(cfg.commandTimeout)
	copts.acquire_timeout_ms = C.int(cfg.acquireTimeout)
	copts.keepalive_s = C.int(cfg.keepalive)
	if cfg.disableKeepalive {
		copts.disable_keepalive = 1
	}
	copts.idle_check_ms = C.int(cfg.idleCheck)
	// The library copies these strings; "" is unset, passed as NULL.
	for _, f := range []struct {
		dst **C.char
		s   string
	}{
		{&copts.name, cfg.name},
		{&copts.tls_ca_file, cfg.tlsCAFile},
		{&copts.tls_ca_dir, cfg.tlsCADir},
		{&copts.tls_cert_file, cfg.tlsCertFile},
		{&copts.tls_key_file, cfg.tlsKeyFile},
		{&copts.tls_server_name, cfg.tlsServerName},
	} {
		if f.s != "" {
			cs := C.CString(f.s)
			defer C.free(unsafe.Pointer(cs))
			*f.dst = cs
		}
	}
	if cfg.tlsInsecure {
		copts.tls_insecure = 1
	}
	if cfg.noCoalescing {
		copts.no_coalescing = 1
	}

	var h *C.polylimit_client
	var cerr C.polylimit_error
	if st := C.polylimit_client_open(curl, &copts, &h, &cerr); st != C.POLYLIMIT_OK {
		return nil, cError(st, &cerr)
	}
	shown := "$POLYLIMIT_URL"
	if url != "" {
		shown = RedactURL(url)
	}
	c := &Client{h: h, name: cfg.name, shown: shown}
	c.async.init(&cfg)
	runtime.SetFinalizer(c, (*Client).Close)
	return c, nil
}

// Name returns the name given with WithName ("" for none): the client="..."
// label of its metrics.
func (c *Client) Name() string { return c.name }

// Close closes the client and, with it, every limiter made from it: their
// calls return ErrClosed ("the client is closed") from then on, as in every
// language polylimit binds. Each Limiter still frees its own handle with
// Limiter.Close (or its finalizer), before or after Client.Close.
//
// Close waits for calls in flight on the client and its limiters, including
// calls a context abandoned (the command, connect and acquire timeouts bound
// them; Acquire waits in slices of at most a second), and batches of Allow
// calls in flight (WaitBatched). Batched Allow calls not yet sent and queued
// ones (WaitQueued) still in flight fail at once with ErrClosed. Close is
// idempotent; calls on the Client after Close return ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h != nil {
		C.polylimit_client_close(c.h)
		c.h = nil
		c.async.stop() // after the close: every queued check has completed or fails now
		runtime.SetFinalizer(c, nil)
	}
	return nil
}

// Limiter makes a limiter from a rate spec, parsed by the library (the same
// parser for every language): "100/minute", "10/s", "5 per 2 seconds",
// several limits that must all admit ("10/s; 1000/hour"), or a GCRA burst
// ("10/s burst 20", with WithAlgorithm(GCRA)). A bad spec is
// ErrInvalidArgument with the library's message quoting the bad part.
// WithBurst does not apply here: write the burst into the spec.
func (c *Client) Limiter(spec string, opts ...LimiterOption) (*Limiter, error) {
	cfg, err := limiterOptions(opts)
	if err != nil {
		return nil, err
	}
	if cfg.burstSet {
		return nil, newError(ErrInvalidArgument, "WithBurst applies to LimiterFor; in a spec write e.g. \"10/s burst 20\"")
	}
	cspec, err := cString("spec", spec)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cspec))
	return c.newLimiter(cfg, func(lo *C.polylimit_limiter_options, out **C.polylimit_limiter, cerr *C.polylimit_error) C.int {
		return C.polylimit_limiter_new_spec(c.h, cspec, lo, out, cerr)
	}, 0, 0, spec)
}

// LimiterFor makes a limiter admitting limit units per window (GCRA: up to
// the burst at once, see WithBurst). The window must be a whole number of
// milliseconds. The library validates everything before any I/O.
func (c *Client) LimiterFor(limit int, window time.Duration, opts ...LimiterOption) (*Limiter, error) {
	cfg, err := limiterOptions(opts)
	if err != nil {
		return nil, err
	}
	windowMS, werr := exactMillis("window", window)
	if werr != nil {
		return nil, werr
	}
	return c.newLimiter(cfg, func(lo *C.polylimit_limiter_options, out **C.polylimit_limiter, cerr *C.polylimit_error) C.int {
		lo.limit = C.int64_t(limit)
		lo.window_ms = C.int64_t(windowMS)
		lo.burst = C.int64_t(cfg.burst)
		return C.polylimit_limiter_new(c.h, lo, out, cerr)
	}, limit, window, "")
}

func limiterOptions(opts []LimiterOption) (*limiterConfig, error) {
	cfg := &limiterConfig{}
	for _, o := range opts {
		o(cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	return cfg, nil
}

// newLimiter fills polylimit_limiter_options from cfg and calls mk under the
// client's shared lock.
func (c *Client) newLimiter(cfg *limiterConfig, mk func(*C.polylimit_limiter_options, **C.polylimit_limiter, *C.polylimit_error) C.int,
	limit int, window time.Duration, spec string) (*Limiter, error) {
	var lo C.polylimit_limiter_options
	if st := C.polylimit_limiter_options_init(&lo, C.POLYLIMIT_LIMITER_OPTIONS_VERSION); st != C.POLYLIMIT_OK {
		return nil, newError(ErrInternal, "polylimit_limiter_options_init failed (%d)", int(st))
	}
	lo.algorithm = C.int(cfg.algorithm)
	lo.clock = C.int(cfg.clock)
	if cfg.prefixSet {
		// C copies the prefix, so it is freed right after the limiter is made.
		lo.prefix = C.CString(cfg.prefix)
		defer C.free(unsafe.Pointer(lo.prefix))
	}
	lo.deny_cache_size = C.int(cfg.denyCache)
	lo.failure_policy = C.int(cfg.failurePolicy)
	lo.breaker_failures = C.int(cfg.breakerFailures)
	lo.breaker_cooldown_ms = C.int(cfg.breakerCooldown)
	if cfg.shadow {
		lo.shadow = 1
	}
	lo.block_ms = C.int64_t(cfg.block)
	lo.durable_replicas = C.int(cfg.durableReplicas)
	lo.durable_timeout_ms = C.int(cfg.durableTimeout)
	if cfg.durableAOF {
		lo.durable_aof = 1
	}
	lo.lease_units = C.int64_t(cfg.leaseUnits)
	lo.lease_ms = C.int64_t(cfg.leaseMs)

	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == nil {
		return nil, errClientClosed()
	}
	var h *C.polylimit_limiter
	var cerr C.polylimit_error
	if st := mk(&lo, &h, &cerr); st != C.POLYLIMIT_OK {
		return nil, cError(st, &cerr)
	}
	l := &Limiter{client: c, h: h, limit: limit, window: window, spec: spec, hasBreaker: cfg.breakerFailures != 0}
	runtime.SetFinalizer(l, (*Limiter).Close)
	return l, nil
}

// Stats returns the client's counters (all its limiters) since Open.
func (c *Client) Stats() (Stats, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == nil {
		return Stats{}, errClientClosed()
	}
	var cs C.polylimit_stats
	cs.version = C.POLYLIMIT_STATS_VERSION
	var cerr C.polylimit_error
	if st := C.polylimit_client_stats(c.h, &cs, &cerr); st != C.POLYLIMIT_OK {
		return Stats{}, cError(st, &cerr)
	}
	s := Stats{
		Checks:          uint64(cs.checks),
		Admitted:        uint64(cs.admitted),
		Denied:          uint64(cs.denied),
		Errors:          uint64(cs.errors),
		RoundTrips:      uint64(cs.round_trips),
		NoscriptReloads: uint64(cs.noscript_reloads),
		CacheHits:       uint64(cs.cache_hits),
		Degraded:        uint64(cs.degraded),
		NearLimit:       uint64(cs.near_limit),
		LatencyCount:    uint64(cs.latency_count),
		LatencySum:      usDuration(uint64(cs.latency_sum_us)),
		EvictingNodes:   uint64(cs.evicting_nodes),
		ConnectAttempts: uint64(cs.connect_attempts),
		ScriptCalls:     uint64(cs.script_calls),
		Coalesced:       uint64(cs.coalesced),
		LeasedUnits:     uint64(cs.leased_units),
		RefundedUnits:   uint64(cs.refunded_units),
		StrandedUnits:   uint64(cs.stranded_units),
		Latency:         make([]LatencyBucket, C.POLYLIMIT_STATS_LATENCY_BUCKETS),
	}
	for i := range s.Latency {
		s.Latency[i] = LatencyBucket{UpperBound: usDuration(uint64(cs.latency_le_us[i])), Count: uint64(cs.latency_buckets[i])}
	}
	return s, nil
}

// usDuration converts microseconds, saturating at math.MaxInt64 (+Inf).
func usDuration(us uint64) time.Duration {
	if us >= math.MaxInt64/uint64(time.Microsecond) {
		return math.MaxInt64
	}
	return time.Duration(us) * time.Microsecond
}

// StatsPrometheus returns the client's counters in the Prometheus text
// exposition format (metric names start with "polylimit_"), each sample
// labelled client="<name>" when the client has a name (WithName). To put
// several clients on one page use PrometheusText: concatenating their
// StatsPrometheus pages is not valid exposition (each metric's HELP and TYPE
// would repeat).
func (c *Client) StatsPrometheus() (string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == nil {
		return "", errClientClosed()
	}
	var out *C.char
	var n C.size_t
	var cerr C.polylimit_error
	if st := C.polylimit_client_stats_prometheus(c.h, &out, &n, &cerr); st != C.POLYLIMIT_OK {
		return "", cError(st, &cerr)
	}
	defer C.polylimit_free(unsafe.Pointer(out))
	return C.GoStringN(out, C.int(n)), nil
}

// Limiter decides for keys under one limit. It is safe for concurrent use.
//
// Every method that talks to Redis takes a context. A context that is already
// done returns its error without touching Redis. A context that can end
// (ctx.Done() != nil) is honoured even when it is shorter than the command
// timeout: if it ends first, the method returns a *ContextError wrapping
// ctx.Err(). The abandoned call still finishes in the background and its
// result is dropped, so the decision may have consumed units nobody was told
// of (an Allow still waiting for its batch is never sent). Allow, AllowN and
// AllowBytes make a blocking C call while at most WithBlockingChecks checks
// of the client are in flight; past that they are batched or queued
// (WithWaitStrategy) and wait on a channel, so that calls in flight do not
// each hold an OS thread. A blocking Allow whose context can end runs on a
// goroutine of its own. Peek, Reset, Refund, AllowAtMost and AllowWithLimit
// with a context that can end, and Acquire always, are queued (AllowAt,
// which has no non-blocking form, runs on a goroutine of its own). With
// context.Background() the blocking call is made directly, a little cheaper.
//
// A Limiter belongs to the Client it was made from: Client.Close closes it
// too (its calls then return ErrClosed), and it keeps that Client reachable.
type Limiter struct {
	client *Client      // its shared lock is held around every C call, before mu
	mu     sync.RWMutex // held shared by every C call (even abandoned ones), exclusively by Close
	h      *C.polylimit_limiter
	limit  int
	window time.Duration
	spec   string
	// hasBreaker: a circuit breaker, which batched checks would not feed
	// check by check (batch.go).
	hasBreaker bool
	batch      batcher // batched checks (WaitBatched)
}

// Limit returns the limit given to LimiterFor; 0 for a limiter made from a
// spec (the library parses specs; Result.Limit reports the deciding limit).
func (l *Limiter) Limit() int { return l.limit }

// Window returns the window given to LimiterFor; 0 for a limiter made from
// a spec.
func (l *Limiter) Window() time.Duration { return l.window }

// Spec returns the spec given to Client.Limiter; "" for LimiterFor.
func (l *Limiter) Spec() string { return l.spec }

// Close frees the limiter. It waits for calls in flight, including abandoned
// ones and batches of Allow calls, which the command and acquire timeouts
// bound; queued Allow calls (WaitQueued) go on and complete after it, and
// batched ones not yet sent fail with ErrClosed, as calls made after Close
// do. Idempotent; calls after
// Close return ErrClosed. Closing the Client first is fine: the limiter is
// then closed already, and Close only frees its handle.
func (l *Limiter) Close() error {
	l.client.mu.RLock() // the C ABI: no free while the client closes
	defer l.client.mu.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.h != nil {
		C.polylimit_limiter_free(l.h)
		l.h = nil
		runtime.SetFinalizer(l, nil)
	}
	return nil
}

type opKind int

const (
	opCheck opKind = iota
	opCheckAt
	opPeek
	opReset
	opCheckAtMost
	opAcquire
	opCheckLimit
	opRefund
)

var opNames = [...]string{"allow", "allow", "peek", "reset", "allow at most", "acquire", "allow with limit", "refund"}

// call holds everything one C call reads or writes. On the goroutine path it
// is owned by that goroutine, so it stays valid even after the caller gave up.
type call struct {
	op     opKind
	cost   int64
	nowUS  int64
	limit  int64 // opCheckLimit
	window int64 // opCheckLimit: ms; opAcquire: the timeout in ms
	key    unsafe.Pointer
	klen   C.size_t
	closed bool
	st     C.int
	dec    C.polylimit_decision
	cerr   C.polylimit_error
	// inflight, for a blocking check, is the client's count of checks in
	// flight (async.go), dropped when C returns.
	inflight *atomic.Int32
}

// invoke makes the C call under the shared locks of the client and the
// limiter. A closed client is not checked here: the library answers
// ErrClosed itself.
func (l *Limiter) invoke(c *call) {
	if c.inflight != nil {
		defer c.inflight.Add(-1)
	}
	l.client.mu.RLock()
	defer l.client.mu.RUnlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		c.closed = true
		return
	}
	switch c.op {
	case opCheck:
		c.st = C.polylimit_limiter_check(l.h, c.key, c.klen, C.int64_t(c.cost), &c.dec, &c.cerr)
	case opCheckAt:
		c.st = C.polylimit_limiter_check_at(l.h, c.key, c.klen, C.int64_t(c.cost), C.int64_t(c.nowUS), &c.dec, &c.cerr)
	case opPeek:
		c.st = C.polylimit_limiter_peek(l.h, c.key, c.klen, &c.dec, &c.cerr)
	case opReset:
		c.st = C.polylimit_limiter_reset(l.h, c.key, c.klen, &c.cerr)
	case opCheckAtMost:
		c.st = C.polylimit_limiter_check_at_most(l.h, c.key, c.klen, C.int64_t(c.cost), &c.dec, &c.cerr)
	case opAcquire:
		c.st = C.polylimit_limiter_acquire(l.h, c.key, c.klen, C.int64_t(c.cost), C.int64_t(c.window), &c.dec, &c.cerr)
	case opCheckLimit:
		c.st = C.polylimit_limiter_check_limit(l.h, c.key, c.klen, C.int64_t(c.cost), C.int64_t(c.limit), C.int64_t(c.window),
			&c.dec, &c.cerr)
	case opRefund:
		c.st = C.polylimit_limiter_refund(l.h, c.key, c.klen, C.int64_t(c.cost), &c.dec, &c.cerr)
	}
}

// do runs one call for a key given as a string or as bytes (exactly one of
// skey / bkey is used, per isBytes).
func (l *Limiter) do(ctx context.Context, c *call, skey string, bkey []byte, isBytes bool) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	n := len(skey)
	if isBytes {
		n = len(bkey)
	}
	c.klen = C.size_t(n)

	if c.op == opCheck && !l.client.async.enter(c) {
		defer l.client.async.leave()
		if l.client.async.batched {
			if l.batchable(c) {
				return l.doBatched(ctx, c, skey, bkey, isBytes)
			}
			if !l.hasBreaker {
				// A key or cost the library refuses before any I/O.
				return l.doBlocking(ctx, c, skey, bkey, isBytes)
			}
		}
		return l.doQueued(ctx, c, skey, bkey, isBytes)
	}
	// The other calls have non-blocking forms too (all but AllowAt): when
	// ctx can end they go through the queue rather than park a goroutine on
	// an OS thread for the round trip, and Acquire always does (its library
	// call may wait up to a slice for admission).
	if c.op != opCheck && c.op != opCheckAt && (ctx.Done() != nil || c.op == opAcquire) {
		return l.doQueued(ctx, c, skey, bkey, isBytes)
	}
	return l.doBlocking(ctx, c, skey, bkey, isBytes)
}

// doBlocking makes the C call on this goroutine, or on a goroutine of its
// own when ctx can end first.
func (l *Limiter) doBlocking(ctx context.Context, c *call, skey string, bkey []byte, isBytes bool) (Result, error) {
	n := int(c.klen)
	if ctx.Done() == nil {
		// Direct path: Go memory may be lent to C for the call's duration.
		if isBytes {
			if n > 0 {
				c.key = unsafe.Pointer(&bkey[0])
			}
		} else if n > 0 {
			ck := C.CString(skey) // copy: a Go string's bytes are not ours to lend
			defer C.free(unsafe.Pointer(ck))
			c.key = unsafe.Pointer(ck)
		}
		l.invoke(c)
		runtime.KeepAlive(bkey)
		return c.result()
	}

	// Goroutine path: the call may outlive this function, so the key is
	// copied into C memory that the goroutine frees when C returns.
	if n > 0 {
		if isBytes {
			c.key = C.CBytes(bkey)
		} else {
			c.key = unsafe.Pointer(C.CString(skey))
		}
	}
	done := make(chan struct{})
	go func() {
		l.invoke(c)
		C.free(c.key) // free(NULL) is a no-op
		close(done)
	}()
	select {
	case <-done:
		return c.result()
	case <-ctx.Done():
		select { // both ready: a finished decision beats a dropped one
		case <-done:
			return c.result()
		default:
		}
		return Result{}, &ContextError{Op: opNames[c.op], Err: ctx.Err(), abandoned: true}
	}
}

// errLimiterClosed is what calls on a Limiter return after its own Close.
func errLimiterClosed() error { return newError(ErrClosed, "the limiter is closed") }

func (c *call) result() (Result, error) {
	if c.closed {
		return Result{}, errLimiterClosed()
	}
	if c.st != C.POLYLIMIT_OK {
		return Result{}, cError(c.st, &c.cerr)
	}
	return decision(&c.dec), nil
}

func decision(d *C.polylimit_decision) Result {
	return Result{
		Allowed:    d.allowed != 0,
		Limit:      int(d.limit),
		Remaining:  int(d.remaining),
		RetryAfter: time.Duration(d.retry_after_ms) * time.Millisecond,
		ResetAfter: time.Duration(d.reset_after_ms) * time.Millisecond,
		Granted:    int(d.granted),
		Cached:     d.cached != 0,
		Degraded:   d.degraded != 0,
		Shadowed:   d.shadowed != 0,
	}
}

// Allow admits one unit for key.
func (l *Limiter) Allow(ctx context.Context, key string) (Result, error) {
	return l.do(ctx, &call{op: opCheck, cost: 1}, key, nil, false)
}

// AllowN admits n units for key, all or nothing, atomically.
func (l *Limiter) AllowN(ctx context.Context, key string, n int) (Result, error) {
	return l.do(ctx, &call{op: opCheck, cost: int64(n)}, key, nil, false)
}

// AllowBytes admits n units for a binary key (NUL bytes allowed). The slice is
// only read during the call; it may be reused when AllowBytes returns.
func (l *Limiter) AllowBytes(ctx context.Context, key []byte, n int) (Result, error) {
	return l.do(ctx, &call{op: opCheck, cost: int64(n)}, "", key, true)
}

// AllowAt admits n units for key as if the time were t, whatever the
// limiter's clock: for replays and tests.
func (l *Limiter) AllowAt(ctx context.Context, key string, n int, t time.Time) (Result, error) {
	return l.do(ctx, &call{op: opCheckAt, cost: int64(n), nowUS: t.UnixMicro()}, key, nil, false)
}

// Peek reports what Allow would answer now, without consuming anything.
func (l *Limiter) Peek(ctx context.Context, key string) (Result, error) {
	return l.do(ctx, &call{op: opPeek}, key, nil, false)
}

// PeekBytes is Peek for a binary key.
func (l *Limiter) PeekBytes(ctx context.Context, key []byte) (Result, error) {
	return l.do(ctx, &call{op: opPeek}, "", key, true)
}

// Reset clears key's state: it is back to full capacity.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	_, err := l.do(ctx, &call{op: opReset}, key, nil, false)
	return err
}

// ResetBytes is Reset for a binary key.
func (l *Limiter) ResetBytes(ctx context.Context, key []byte) error {
	_, err := l.do(ctx, &call{op: opReset}, "", key, true)
	return err
}
