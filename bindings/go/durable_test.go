//go:build cgo
// +build cgo

// Failover-safe mode (WithDurable): a check is admitted only once a replica
// acknowledged its write. The shared server has no replica, so every admitted
// check is "not durable": ErrNotDurable, or the failure policy's answer.

package polylimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

func TestDurableWithoutAReplica(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "5/minute", polylimit.WithDurable(1, 50*time.Millisecond))
	t0 := time.Now()
	_, err := l.Allow(ctx, "k")
	took := time.Since(t0)
	wantError(t, "not durable", err, polylimit.ErrNotDurable, "0 of 1 replicas within 50 ms (WAIT)")
	if !polylimit.OutcomeUnknown(err) {
		t.Error("the units were consumed on the master: the outcome is unknown")
	}
	if !polylimit.ErrNotDurable.Temporary() || !errors.Is(err, polylimit.ErrNotDurable) {
		t.Errorf("ErrNotDurable: %v", err)
	}
	if took < 45*time.Millisecond || took > 300*time.Millisecond {
		t.Errorf("took %v, want about the 50ms timeout", took)
	}
	// The units stay consumed on the master.
	if r, err := l.Peek(ctx, "k"); err != nil || r.Remaining != 4 {
		t.Fatalf("peek: %+v, %v", r, err)
	}
}

func TestDurableFailurePolicies(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	for _, tc := range []struct {
		policy  polylimit.FailurePolicy
		allowed bool
	}{{polylimit.FailOpen, true}, {polylimit.FailClosed, false}, {polylimit.FailLocal, true}} {
		l := limiter(t, c, "5/minute", polylimit.WithFailurePolicy(tc.policy),
			polylimit.WithDurable(1, 50*time.Millisecond))
		r, err := l.Allow(ctx, "k")
		if err != nil || !r.Degraded || r.Allowed != tc.allowed {
			t.Errorf("%v: %+v, %v", tc.policy, r, err)
		}
	}
}

func TestDurableOptions(t *testing.T) {
	c := open(t, shared.URL, polylimit.WithCommandTimeout(200*time.Millisecond))
	_, err := c.Limiter("5/minute", polylimit.WithDurable(101, 0))
	wantError(t, "101 replicas", err, polylimit.ErrInvalidArgument, "durable_replicas = 101 is out of range 0..100")
	_, err = c.Limiter("5/minute", polylimit.WithDurable(1, 200*time.Millisecond))
	wantError(t, "timeout", err, polylimit.ErrInvalidArgument, "must be below the client's command_timeout_ms = 200")
	// Zero: the default timeout (100 ms), which fits.
	limiter(t, c, "5/minute", polylimit.WithDurable(1, 0))
	if polylimit.DefaultDurableTimeoutMs != 100 {
		t.Errorf("DefaultDurableTimeoutMs = %d", polylimit.DefaultDurableTimeoutMs)
	}
}
