//go:build cgo
// +build cgo

// AllowMany: one round trip for many keys, errors in place.

package polylimit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

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
