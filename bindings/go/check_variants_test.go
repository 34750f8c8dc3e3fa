//go:build cgo
// +build cgo

// Variants of a check: shadow mode, punitive blocks, partial grants
// (AllowAtMost), Acquire, refunds and per-call limits.

package polylimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

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

// Leases: one round trip takes 10 units; closing the limiter gives back
// what was not used.
func TestLease(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	prefix := polylimit.WithPrefix(fmt.Sprintf("go-lease-%d", time.Now().UnixNano()))
	l, err := c.Limiter("100/minute", prefix, polylimit.WithLease(10, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
			t.Fatalf("check %d: %+v, %v", i, r, err)
		}
	}
	if r, err := l.Peek(ctx, "k"); err != nil || r.Remaining != 90 {
		t.Fatalf("peek with a lease held: %+v, %v; want 90 remaining", r, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Stats(); err != nil || st.LeasedUnits != 10 || st.RefundedUnits != 7 || st.StrandedUnits != 0 {
		t.Fatalf("stats: %+v, %v; want 10 leased, 7 refunded", st, err)
	}
	plain, err := c.Limiter("100/minute", prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if r, err := plain.Peek(ctx, "k"); err != nil || r.Remaining != 97 {
		t.Fatalf("peek after close: %+v, %v; want 97 remaining", r, err)
	}
	_, err = c.Limiter("10/s", polylimit.WithLease(11, 0))
	wantError(t, "lease 11 of 10", err, polylimit.ErrInvalidArgument, "lease_units = 11 exceeds limit = 10")
}

// The queued (non-blocking) checks take and renew leases too: 30 goroutines
// at once, one round trip per 10 units.
func TestLeaseQueued(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL, allQueued...)
	prefix := polylimit.WithPrefix(fmt.Sprintf("go-lease-q-%d", time.Now().UnixNano()))
	l, err := c.Limiter("100/minute", prefix, polylimit.WithLease(10, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
		t.Fatalf("first check: %+v, %v", r, err)
	}
	before, _ := c.Stats()
	var wg sync.WaitGroup
	var denied atomic.Int64
	for i := 0; i < 29; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
				denied.Add(1)
			}
		}()
	}
	wg.Wait()
	st, err := c.Stats()
	if err != nil || denied.Load() != 0 || st.LeasedUnits != 30 || st.RoundTrips-before.RoundTrips != 2 {
		t.Fatalf("29 queued checks: %d denied, stats %+v, %v; want 0 denied, 30 leased in 2 round trips", denied.Load(), st, err)
	}
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
		// Redis expires the state of a 1 ms window in real time, about 1 ms
		// after it was written: when the second call comes later than that
		// (a loaded machine, -race), it finds nothing and is admitted. That
		// says nothing about rounding: try again on a fresh key.
		for attempt := 0; ; attempt++ {
			key := fmt.Sprint("k", attempt)
			if r, err := l.AllowAt(ctx, key, 1, us(0)); err != nil || !r.Allowed {
				t.Fatalf("block %v, first: %+v, %v", tc.block, r, err)
			}
			r, err := l.AllowAt(ctx, key, 1, us(0))
			if err == nil && r.Allowed && r.Remaining == 0 && attempt < 50 {
				continue // the state expired in between
			}
			if err != nil || r.Allowed || r.RetryAfter != tc.retryAfter {
				t.Fatalf("block %v, denied: %+v, %v; want RetryAfter %v", tc.block, r, err, tc.retryAfter)
			}
			break
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
