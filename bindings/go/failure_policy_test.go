//go:build cgo
// +build cgo

// Failure policies (error, open, closed, local) and the circuit breaker, on
// a server frozen with SIGSTOP.

package polylimit_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

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
