//go:build cgo
// +build cgo

package polylimit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

var algorithms = []polylimit.Algorithm{polylimit.SlidingLog, polylimit.SlidingCounter, polylimit.FixedWindow, polylimit.GCRA}

// t0 is a whole second, so fixed windows start on it.
var t0 = time.Unix(1700000000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestAlgorithms(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	for _, alg := range algorithms {
		alg := alg
		t.Run(alg.String(), func(t *testing.T) {
			l := limiter(t, c, "3/s", polylimit.WithAlgorithm(alg))
			steps := []struct {
				ms   int
				want bool
			}{{0, true}, {1, true}, {2, true}, {3, false}, {4, false}, {2500, true}}
			var first []polylimit.Result
			for _, key := range []string{"a", "b"} {
				var got []polylimit.Result
				for i, s := range steps {
					r, err := l.AllowAt(ctx, key, 1, at(s.ms))
					if err != nil || r.Allowed != s.want || r.Limit != 3 || r.Granted != map[bool]int{true: 1}[s.want] {
						t.Fatalf("%s step %d (+%dms): %+v, %v; want allowed=%v", key, i, s.ms, r, err, s.want)
					}
					if !r.Allowed && r.RetryAfter <= 0 {
						t.Fatalf("%s step %d: denied without RetryAfter: %+v", key, i, r)
					}
					got = append(got, r)
				}
				// AllowAt is deterministic: another key replays to the same Results.
				if first == nil {
					first = got
				} else if fmt.Sprint(first) != fmt.Sprint(got) {
					t.Fatalf("replay differs:\n%v\n%v", first, got)
				}
			}
			// Live calls work too (server clock).
			if r, err := l.Allow(ctx, "live"); err != nil || !r.Allowed || r.Remaining != 2 {
				t.Fatalf("live Allow: %+v, %v", r, err)
			}
		})
	}
}

func TestGCRABurst(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	l, err := c.LimiterFor(1, time.Second, polylimit.WithAlgorithm(polylimit.GCRA), polylimit.WithBurst(5),
		polylimit.WithPrefix(fmt.Sprintf("go-%d-burst", runID.Add(1))))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Limit() != 1 || l.Window() != time.Second || l.Spec() != "" {
		t.Fatalf("Limit, Window, Spec = %d, %v, %q", l.Limit(), l.Window(), l.Spec())
	}
	for i := 0; i < 6; i++ {
		r, err := l.AllowAt(ctx, "k", 1, at(i))
		if err != nil || r.Allowed != (i < 5) || r.Limit != 5 {
			t.Fatalf("call %d: %+v, %v", i, r, err)
		}
	}
	// One unit comes back per second.
	if r, err := l.AllowAt(ctx, "k", 1, at(1100)); err != nil || !r.Allowed {
		t.Fatalf("a second later: %+v, %v", r, err)
	}

	gcra, err := polylimit.ParseAlgorithm("gcra")
	if err != nil || gcra != polylimit.GCRA {
		t.Fatalf("ParseAlgorithm(gcra) = %v, %v", gcra, err)
	}
	s := limiter(t, c, "10/s burst 20", polylimit.WithAlgorithm(gcra))
	for i := 0; i < 21; i++ {
		r, err := s.AllowAt(ctx, "k", 1, at(0))
		if err != nil || r.Allowed != (i < 20) || r.Limit != 20 {
			t.Fatalf("spec burst, call %d: %+v, %v", i, r, err)
		}
	}

	_, err = c.Limiter("10/s", polylimit.WithAlgorithm(polylimit.GCRA), polylimit.WithBurst(20))
	wantCode(t, "WithBurst on a spec", err, polylimit.ErrInvalidArgument)
	_, err = c.LimiterFor(10, time.Second, polylimit.WithBurst(20))
	wantError(t, "burst with sliding_log", err, polylimit.ErrInvalidArgument, "burst = 20 is only for the gcra algorithm")
	_, err = c.LimiterFor(10, time.Second, polylimit.WithAlgorithm(polylimit.GCRA), polylimit.WithBurst(-1))
	wantError(t, "burst -1", err, polylimit.ErrInvalidArgument, "burst = -1 is out of range 0..1000000")
	// Burst 0 is the library's default: the limit.
	z, err := c.LimiterFor(3, time.Second, polylimit.WithAlgorithm(polylimit.GCRA), polylimit.WithBurst(0),
		polylimit.WithPrefix(fmt.Sprintf("go-%d-burst0", runID.Add(1))))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if r, err := z.AllowAt(ctx, "k", 1, at(0)); err != nil || r.Limit != 3 {
		t.Fatalf("burst 0: %+v, %v", r, err)
	}
}

func TestMultiLimitSpec(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "2/s; 3/minute")
	steps := []struct {
		ms    int
		want  bool
		limit int
	}{{0, true, 2}, {1, true, 2}, {2, false, 2}, {1100, true, 3}, {2200, false, 3}}
	for i, s := range steps {
		r, err := l.AllowAt(ctx, "k", 1, at(s.ms))
		if err != nil || r.Allowed != s.want || r.Limit != s.limit {
			t.Fatalf("step %d: %+v, %v; want allowed=%v limit=%d", i, r, err, s.want, s.limit)
		}
	}
}

func TestBadSpecs(t *testing.T) {
	c := open(t, shared.URL)
	for spec, part := range map[string]string{
		"":              "empty",
		"lots":          "lots",
		"10/fortnight":  "fortnight",
		"0/s":           "0/s",
		"1.5/s":         "1.5/s",
		"10 per":        "10 per",
		"10/s burst 20": "burst",
		"10/s burst 0":  "burst",
	} {
		l, err := c.Limiter(spec)
		if l != nil {
			t.Errorf("%q: got a limiter", spec)
		}
		wantCode(t, spec, err, polylimit.ErrInvalidArgument)
		// The message is the library's, quoting the bad part.
		if msg := err.(*polylimit.Error).Msg; !strings.Contains(msg, "rate spec") || !strings.Contains(msg, part) {
			t.Errorf("%q: message %q does not quote %q", spec, msg, part)
		}
	}
	_, err := c.Limiter("10/s\x00x")
	wantCode(t, "spec with NUL", err, polylimit.ErrInvalidArgument)
}

func TestAllowManyOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	l := limiter(t, c, "2/minute")
	if _, err := l.Allow(ctx, "warm"); err != nil { // connect and load the script
		t.Fatal(err)
	}
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i%25) // each key twice: both admitted
	}
	keys[49] = "a\x00b" // binary keys are bytes
	before, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	rs, errs := l.AllowMany(ctx, keys, 1)
	after, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if errs != nil {
		t.Fatalf("errs = %v", errs)
	}
	for i, r := range rs {
		if !r.Allowed || r.Limit != 2 || r.Granted != 1 {
			t.Fatalf("key %d: %+v", i, r)
		}
	}
	if d := after.RoundTrips - before.RoundTrips; d != 1 {
		t.Fatalf("AllowMany of %d keys took %d round trips, want 1", len(keys), d)
	}
	if d := after.Checks - before.Checks; d != uint64(len(keys)) {
		t.Fatalf("AllowMany counted %d checks, want %d", d, len(keys))
	}
	// k0 is now full; the binary key is one unit in, "a\x00c" is another key.
	cctx, cancel := context.WithCancel(ctx) // the goroutine path
	defer cancel()
	rs, errs = l.AllowMany(cctx, []string{"k0", "a\x00b", "a\x00c"}, 1)
	if errs != nil || rs[0].Allowed || !rs[1].Allowed || rs[1].Remaining != 0 || !rs[2].Allowed || rs[2].Remaining != 1 {
		t.Fatalf("second batch: %+v, %v", rs, errs)
	}
	if rs, errs := l.AllowMany(ctx, nil, 1); len(rs) != 0 || errs != nil {
		t.Fatalf("empty batch: %v, %v", rs, errs)
	}
	// Bad cost: every key fails with ErrInvalidArgument.
	_, errs = l.AllowMany(ctx, []string{"x", "y"}, 0)
	if len(errs) != 2 {
		t.Fatalf("cost 0: errs = %v", errs)
	}
	for i, err := range errs {
		wantCode(t, fmt.Sprint("cost 0, key ", i), err, polylimit.ErrInvalidArgument)
	}
	// A done context touches nothing.
	cancel()
	_, errs = l.AllowMany(cctx, []string{"x"}, 1)
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("canceled: %v", errs)
	}
	l.Close()
	_, errs = l.AllowMany(ctx, []string{"x", "y"}, 1)
	if len(errs) != 2 {
		t.Fatalf("after Close: %v", errs)
	}
	wantCode(t, "AllowMany after Close", errs[1], polylimit.ErrClosed)
}

func TestDenyCache(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	l := limiter(t, c, "1/minute", polylimit.WithDenyCache(100))
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed || r.Cached {
		t.Fatalf("first: %+v, %v", r, err)
	}
	if r, err := l.Allow(ctx, "k"); err != nil || r.Allowed || r.Cached {
		t.Fatalf("second (Redis denies): %+v, %v", r, err)
	}
	before, _ := c.Stats()
	for i := 0; i < 3; i++ {
		r, err := l.Allow(ctx, "k")
		if err != nil || r.Allowed || !r.Cached || r.RetryAfter <= 0 {
			t.Fatalf("cached denial %d: %+v, %v", i, r, err)
		}
	}
	after, _ := c.Stats()
	if after.RoundTrips != before.RoundTrips || after.CacheHits-before.CacheHits != 3 {
		t.Fatalf("cached denials: round trips %d -> %d, cache hits %d -> %d",
			before.RoundTrips, after.RoundTrips, before.CacheHits, after.CacheHits)
	}
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
		t.Fatalf("after Reset: %+v, %v", r, err)
	}
	// The bound is the library's, with the message every language shows.
	_, err := c.Limiter("1/s", polylimit.WithDenyCache(20000000))
	wantError(t, "deny cache too large", err, polylimit.ErrInvalidArgument,
		"deny_cache_size = 20000000 is out of range 0..10000000")
	_, err = c.Limiter("1/s", polylimit.WithDenyCache(-1))
	wantError(t, "deny cache -1", err, polylimit.ErrInvalidArgument, "deny_cache_size = -1 is out of range 0..10000000")
	_, err = c.Limiter("1/s", polylimit.WithDenyCache(math.MaxInt64)) // clamped to a C int the library refuses
	wantError(t, "deny cache beyond int32", err, polylimit.ErrInvalidArgument,
		"deny_cache_size = 2147483647 is out of range 0..10000000")
	// 0 is off: Redis answers every check.
	off := limiter(t, c, "1/minute", polylimit.WithDenyCache(0))
	for i, want := range []bool{true, false, false} {
		if r, err := off.Allow(ctx, "k"); err != nil || r.Allowed != want || r.Cached {
			t.Fatalf("deny cache off, call %d: %+v, %v", i, r, err)
		}
	}
}

func TestFailurePolicies(t *testing.T) {
	ctx := context.Background()
	srv := newRedis(t)
	c := open(t, srv.URL, polylimit.WithCommandTimeout(200*time.Millisecond), polylimit.WithPoolSize(16))
	mk := func(opts ...polylimit.LimiterOption) *polylimit.Limiter {
		l := limiter(t, c, "2/minute", opts...)
		if _, err := l.Allow(ctx, "warm"); err != nil { // connect and load the script
			t.Fatal(err)
		}
		return l
	}
	failErr := mk(polylimit.WithFailurePolicy(polylimit.FailError))
	failOpen := mk(polylimit.WithFailurePolicy(polylimit.FailOpen))
	failClosed := mk(polylimit.WithFailurePolicy(polylimit.FailClosed))
	failLocal := mk(polylimit.WithFailurePolicy(polylimit.FailLocal))
	breaker := mk(polylimit.WithFailurePolicy(polylimit.FailOpen), polylimit.WithCircuitBreaker(2, 10*time.Second))

	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Signal(syscall.SIGCONT)
		}
	}()

	_, err := failErr.Allow(ctx, "k")
	wantCode(t, "FailError", err, polylimit.ErrTimeout)
	for i := 0; i < 3; i++ { // more than the limit: all admitted
		if r, err := failOpen.Allow(ctx, "k"); err != nil || !r.Allowed || !r.Degraded {
			t.Fatalf("FailOpen %d: %+v, %v", i, r, err)
		}
	}
	if r, err := failClosed.Allow(ctx, "k"); err != nil || r.Allowed || !r.Degraded || r.RetryAfter <= 0 {
		t.Fatalf("FailClosed: %+v, %v", r, err)
	}
	for i, want := range []bool{true, true, false} { // the in-process limiter has the same limit
		if r, err := failLocal.Allow(ctx, "k"); err != nil || r.Allowed != want || !r.Degraded {
			t.Fatalf("FailLocal %d: %+v, %v", i, r, err)
		}
	}
	for i := 0; i < 2; i++ {
		if r, err := breaker.Allow(ctx, "k"); err != nil || !r.Allowed || !r.Degraded {
			t.Fatalf("breaker, failure %d: %+v, %v", i, r, err)
		}
	}
	start := time.Now()
	if r, err := breaker.Allow(ctx, "k"); err != nil || !r.Allowed || !r.Degraded {
		t.Fatalf("breaker open: %+v, %v", r, err)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Fatalf("open breaker took %v, want a fast failure", took)
	}
	st, err := c.Stats()
	if err != nil || st.Degraded < 9 {
		t.Fatalf("stats: %+v, %v", st, err)
	}

	srv.Signal(syscall.SIGCONT)
	resumed = true
	// The server answers again once the reconnect backoff (at most 1 s) lets
	// the next connect through.
	recovered(t, "after SIGCONT", func() (polylimit.Result, error) { return failOpen.Allow(ctx, "fresh") })

	_, err = c.Limiter("1/s", polylimit.WithFailurePolicy(polylimit.FailurePolicy(9)))
	wantError(t, "unknown policy", err, polylimit.ErrInvalidArgument, "failure_policy = 9 is unknown (0..3)")
	_, err = c.Limiter("1/s", polylimit.WithCircuitBreaker(-1, time.Second))
	wantError(t, "breaker -1", err, polylimit.ErrInvalidArgument, "breaker_failures = -1 is out of range 0..1000000")
	_, err = c.Limiter("1/s", polylimit.WithCircuitBreaker(3, 2*time.Hour))
	wantError(t, "breaker cool-down 2h", err, polylimit.ErrInvalidArgument,
		"breaker_cooldown_ms = 7200000 is out of range 1..3600000")
	if l, err := c.Limiter("1/s", polylimit.WithCircuitBreaker(0, 0)); err != nil { // 0: no breaker, default cool-down
		t.Fatalf("breaker 0: %v", err)
	} else {
		l.Close()
	}
	if polylimit.FailLocal.String() != "local" || polylimit.FailurePolicy(9).String() != "FailurePolicy(9)" {
		t.Fatal(polylimit.FailLocal.String(), polylimit.FailurePolicy(9).String())
	}
}

func TestShadow(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	l := limiter(t, c, "1/minute", polylimit.WithShadow())
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed || r.Shadowed {
		t.Fatalf("first: %+v, %v", r, err)
	}
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed || !r.Shadowed {
		t.Fatalf("second (would be denied): %+v, %v", r, err)
	}
	// Metrics count the real decision.
	if st, err := c.Stats(); err != nil || st.Admitted != 1 || st.Denied != 1 {
		t.Fatalf("stats: %+v, %v", st, err)
	}
}

func TestBlock(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "1/s", polylimit.WithBlock(3*time.Second))
	steps := []struct {
		ms   int
		want bool
	}{{0, true}, {1, false}, {1500, false}, {2500, false}, {3100, true}}
	for i, s := range steps {
		r, err := l.AllowAt(ctx, "k", 1, at(s.ms))
		if err != nil || r.Allowed != s.want {
			t.Fatalf("step %d (+%dms): %+v, %v", i, s.ms, r, err)
		}
		if i == 1 && r.RetryAfter < 2900*time.Millisecond {
			t.Fatalf("blocked, RetryAfter %v, want about 3s", r.RetryAfter)
		}
	}
	_, err := open(t, shared.URL).Limiter("1/s", polylimit.WithBlock(-time.Second))
	wantError(t, "block -1s", err, polylimit.ErrInvalidArgument, "block_ms = -1000 is out of range 0..31622400000")
}

// A duration converts to whole milliseconds rounded up, as in Python and
// Java: a block of 1.2ms is 2ms (truncating made it 1ms). The denial that
// starts the block reports it: RetryAfter is the block (the 1ms window alone
// would say 1ms).
func TestDurationsRoundUp(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	us := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Microsecond) }
	for _, tc := range []struct {
		block, retryAfter time.Duration
	}{
		{1200 * time.Microsecond, 2 * time.Millisecond},
		{1800 * time.Microsecond, 2 * time.Millisecond},
		{2001 * time.Microsecond, 3 * time.Millisecond},
		{2 * time.Millisecond, 2 * time.Millisecond},
	} {
		l, err := c.LimiterFor(1, time.Millisecond, polylimit.WithBlock(tc.block),
			polylimit.WithPrefix(fmt.Sprintf("go-%d-round", runID.Add(1))))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if r, err := l.AllowAt(ctx, "k", 1, us(0)); err != nil || !r.Allowed {
			t.Fatalf("block %v, first: %+v, %v", tc.block, r, err)
		}
		r, err := l.AllowAt(ctx, "k", 1, us(0))
		if err != nil || r.Allowed || r.RetryAfter != tc.retryAfter {
			t.Fatalf("block %v, denied: %+v, %v; want RetryAfter %v", tc.block, r, err, tc.retryAfter)
		}
	}
}

func TestAllowAtMost(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "5/minute")
	if r, err := l.AllowN(ctx, "k", 3); err != nil || !r.Allowed || r.Granted != 3 {
		t.Fatalf("AllowN 3: %+v, %v", r, err)
	}
	if r, err := l.AllowAtMost(ctx, "k", 4); err != nil || !r.Allowed || r.Granted != 2 || r.Remaining != 0 {
		t.Fatalf("AllowAtMost 4: %+v, %v", r, err)
	}
	if r, err := l.AllowAtMost(ctx, "k", 4); err != nil || r.Allowed || r.Granted != 0 || r.RetryAfter <= 0 {
		t.Fatalf("AllowAtMost when full: %+v, %v", r, err)
	}
	_, err := l.AllowAtMost(ctx, "k", 0)
	wantCode(t, "AllowAtMost 0", err, polylimit.ErrInvalidArgument)
}

func TestAcquire(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "2/s")
	for i := 0; i < 2; i++ {
		if r, err := l.Acquire(ctx, "k", 1); err != nil || !r.Allowed {
			t.Fatalf("Acquire %d: %+v, %v", i, r, err)
		}
	}
	// Admission would come after the deadline: denied at once, no error.
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := l.Acquire(dctx, "k", 1)
	if err != nil || r.Allowed || r.RetryAfter <= 0 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("Acquire with a short deadline: %+v, %v after %v", r, err, time.Since(start))
	}
	// A deadline long enough: it waits, then admits.
	dctx, cancel = context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start = time.Now()
	if r, err := l.Acquire(dctx, "k", 1); err != nil || !r.Allowed {
		t.Fatalf("Acquire with a 3s deadline: %+v, %v", r, err)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("Acquire took %v, want up to a second", took)
	}
	// A deadline farther off than the library's longest timeout is fine.
	lctx, lcancel := context.WithTimeout(ctx, 400*24*time.Hour)
	defer lcancel()
	if r, err := l.Acquire(lctx, "other", 2); err != nil || !r.Allowed {
		t.Fatalf("Acquire with a 400-day deadline: %+v, %v", r, err)
	}
	_, err = l.Acquire(ctx, "other", 3)
	wantCode(t, "Acquire above the limit", err, polylimit.ErrInvalidArgument)
	// No deadline: it waits as long as it takes, here longer than one slice.
	slow := limiter(t, open(t, shared.URL), "1 per 2 seconds")
	if r, err := slow.Allow(ctx, "k"); err != nil || !r.Allowed {
		t.Fatalf("slow Allow: %+v, %v", r, err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	start = time.Now()
	if r, err := slow.Acquire(cctx, "k", 1); err != nil || !r.Allowed {
		t.Fatalf("Acquire without deadline: %+v, %v", r, err)
	}
	if took := time.Since(start); took < time.Second || took > 4*time.Second {
		t.Fatalf("Acquire without deadline took %v, want about 2s", took)
	}
	// Canceled while waiting: a ContextError, promptly.
	time.AfterFunc(100*time.Millisecond, ccancel)
	start = time.Now()
	_, err = slow.Acquire(cctx, "k", 1)
	var ce *polylimit.ContextError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ce) || ce.Op != "acquire" {
		t.Fatalf("canceled Acquire: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("canceled Acquire returned after %v", took)
	}
}

func TestRefund(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	for _, alg := range algorithms {
		l := limiter(t, c, "3/minute", polylimit.WithAlgorithm(alg), polylimit.WithDenyCache(10))
		if r, err := l.AllowN(ctx, "k", 3); err != nil || !r.Allowed {
			t.Fatalf("%s AllowN: %+v, %v", alg, r, err)
		}
		if r, err := l.Allow(ctx, "k"); err != nil || r.Allowed {
			t.Fatalf("%s full: %+v, %v", alg, r, err)
		}
		r, err := l.Refund(ctx, "k", 2)
		if err != nil || !r.Allowed || r.Remaining != 2 {
			t.Fatalf("%s Refund 2: %+v, %v", alg, r, err)
		}
		// The refund cleared the deny cache: Redis admits again.
		for i := 0; i < 2; i++ {
			if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed || r.Cached {
				t.Fatalf("%s after Refund %d: %+v, %v", alg, i, r, err)
			}
		}
		_, err = l.Refund(ctx, "k", 0)
		wantCode(t, alg.String()+" Refund 0", err, polylimit.ErrInvalidArgument)
	}
}

func TestAllowWithLimit(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "1/minute")
	for i := 0; i < 6; i++ {
		r, err := l.AllowWithLimit(ctx, "k", 1, 5, time.Minute)
		if err != nil || r.Allowed != (i < 5) || r.Limit != 5 {
			t.Fatalf("call %d: %+v, %v", i, r, err)
		}
	}
	// Another call with a larger limit sees the same key.
	if r, err := l.AllowWithLimit(ctx, "k", 1, 10, time.Minute); err != nil || !r.Allowed || r.Remaining != 4 {
		t.Fatalf("limit 10: %+v, %v", r, err)
	}
	_, err := l.AllowWithLimit(ctx, "k", 1, 0, time.Minute)
	wantCode(t, "limit 0", err, polylimit.ErrInvalidArgument)
	_, err = l.AllowWithLimit(ctx, "k", 1, 5, 1500*time.Microsecond)
	wantCode(t, "window 1.5ms", err, polylimit.ErrInvalidArgument)
}

func TestStats(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	l := limiter(t, c, "1/minute")
	l.Allow(ctx, "k")
	l.Allow(ctx, "k")
	st, err := c.Stats()
	if err != nil || st.Checks != 2 || st.Admitted != 1 || st.Denied != 1 || st.Errors != 0 || st.RoundTrips < 2 {
		t.Fatalf("Stats: %+v, %v", st, err)
	}
	var n uint64
	for _, b := range st.Latency {
		n += b.Count
	}
	if len(st.Latency) != 16 || n != st.LatencyCount || st.LatencyCount == 0 || st.LatencySum <= 0 ||
		st.Latency[15].UpperBound != math.MaxInt64 || st.Latency[0].UpperBound <= 0 {
		t.Fatalf("latency histogram: %+v", st)
	}
	text, err := c.StatsPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"polylimit_checks_total 2\n", "polylimit_admitted_total 1\n", "polylimit_denied_total 1\n",
		"# TYPE polylimit_check_latency_seconds histogram", `polylimit_check_latency_seconds_bucket{le="+Inf"}`} {
		if !strings.Contains(text, want) {
			t.Fatalf("Prometheus text lacks %q:\n%s", want, text)
		}
	}
	c.Close()
	_, err = c.Stats()
	wantCode(t, "Stats after Close", err, polylimit.ErrClosed)
	_, err = c.StatsPrometheus()
	wantCode(t, "StatsPrometheus after Close", err, polylimit.ErrClosed)
}
