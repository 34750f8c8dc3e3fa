//go:build cgo
// +build cgo

// The deny cache: repeated denials answered in process, without a round trip.

package polylimit_test

import (
	"context"
	"math"
	"testing"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

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
