// Package polylimit is the Go binding of polylimit, a distributed rate limiter
// on Redis: many processes, in any language that loads libpolylimit, share
// limits per key. Every decision is one atomic Lua script run inside Redis,
// so concurrent callers never over-admit. Four algorithms (WithAlgorithm):
// SlidingLog (exact, the default), SlidingCounter, FixedWindow and GCRA
// (with a burst, like redis_rate).
//
// The package calls the C library (polylimit.h) through cgo. By default cgo
// compiles the library from this module's sources into the program, as
// go-sqlite3 does with SQLite: the first build needs a C++17 compiler and the
// OpenSSL headers, and nothing of polylimit installed. The build
// tag polylimit_system links an installed libpolylimit.so.1 instead, found
// with pkg-config (package "polylimit"; the program then needs it on the
// loader's path), and polylimit_static an installed libpolylimit.a
// (pkg-config package "polylimit-static"). CGO_ENABLED=0 is a compile-time error
// ("undefined: polylimit_requires_cgo_CGO_ENABLED_1"): there is no Go
// fallback for the C library.
//
// Usage:
//
//	client, err := polylimit.Open("redis://127.0.0.1:6379",
//		polylimit.WithPoolSize(16), polylimit.WithCommandTimeout(500*time.Millisecond))
//	if err != nil {
//		return err
//	}
//	defer client.Close()
//
//	limiter, err := client.Limiter("100/minute", polylimit.WithPrefix("api"))
//	if err != nil {
//		return err
//	}
//	defer limiter.Close()
//
//	res, err := limiter.Allow(ctx, "user:42")
//	switch {
//	case errors.Is(err, polylimit.ErrTimeout), errors.Is(err, polylimit.ErrUnavailable):
//		// Redis is slow or down: fail open or closed, as the caller decides.
//	case err != nil:
//		return err
//	case !res.Allowed:
//		hs, _ := limiter.Headers(res) // Retry-After, RateLimit-*
//		for name, values := range hs {
//			w.Header()[name] = values
//		}
//		w.WriteHeader(http.StatusTooManyRequests)
//	}
//
// Specs are parsed by the library, the same for every language: "100/minute",
// "5 per 2 seconds", "10/s; 1000/hour" (every limit must admit), "10/s burst
// 20" (GCRA). Besides Allow / AllowN / Peek / Reset a Limiter has AllowMany
// (many keys, one round trip), AllowAtMost (partial grant, Result.Granted),
// Acquire (waits up to the context's deadline), AllowWithLimit (a limit for
// one call) and Refund. Options add a local deny cache (WithDenyCache,
// Result.Cached), a failure policy and circuit breaker for outages
// (WithFailurePolicy: FailOpen, FailClosed, FailLocal; Result.Degraded),
// shadow mode (WithShadow, Result.Shadowed), a punitive block (WithBlock) and
// failover-safe mode (WithDurable: admitted only once replicas acknowledged
// the write, else ErrNotDurable).
// Client.Stats and Client.StatsPrometheus report the client's counters
// (labelled client="<name>" with WithName); PrometheusText puts several
// clients on one page. Limiter.Headers gives the standard HTTP rate-limit
// headers of a Result, formatted by the library as in every language. The
// subpackage httplimit is net/http middleware; the subpackage
// github.com/polylimit/polylimit/bindings/go/promcollector is a client_golang
// collector (see docs/integrations/go.md).
//
// Open("") reads the URL from the POLYLIMIT_URL environment variable and
// fails without it: there is no silent local default (memory:// must be
// asked for).
//
// A denial is a Result with Allowed false, never an error. Errors are *Error
// values whose Code (an ErrCode) matches the sentinels with errors.Is:
// ErrInvalidArgument, ErrUnavailable, ErrTimeout, ErrAuth, ErrPermission,
// ErrScript, ErrPoolExhausted, ErrNoMemory, ErrServer, ErrClosed, ErrNotDurable,
// ErrInternal.
//
// Contexts: a context that is already done returns its error at once. A
// context that ends while the call waits for Redis makes the method return a
// *ContextError that unwraps to ctx.Err(); the call itself cannot be stopped
// inside C, so it finishes in the background and its result is dropped — an
// abandoned Allow may still have consumed a unit. The client's command,
// connect and acquire timeouts bound how long such a call lives.
//
// Threads: a blocking C call holds its OS thread until Redis answers, so only
// the first two Allow calls in flight per client (WithBlockingChecks) make
// one; the others wait on a channel while their limiter's batch goroutines
// (at most two) decide everything queued in one pipelined call each
// (WaitBatched, the default), or while they are submitted singly and one
// goroutine per client hands out their completions (WaitQueued,
// WithWaitStrategy). Thousands of concurrent Allow calls thus need a few OS
// threads, not one each.
//
// Client and Limiter are safe for concurrent use. Close them explicitly;
// finalizers are only a safety net. Closing a Client closes every Limiter
// made from it (their calls then return ErrClosed, "the client is closed"),
// as in every language polylimit binds; Limiter.Close frees a limiter's
// handle, before or after Client.Close.
//
// The options convert Go types to the C ABI's and nothing more: the library
// checks every range, with the same message in every language ("pool_size =
// 5000 is out of range 1..4096"); the bounds are the Min*, Max* and Default*
// constants. Durations are rounded up to whole milliseconds.
//
// No Go pointer is ever kept by C: keys are copied into C memory, or lent for
// the duration of one direct call; AllowMany builds its key array, key bytes,
// decisions, statuses and per-key errors in C memory.
package polylimit
