//go:build cgo
// +build cgo

// Coalescing (docs/limiter.md, "Hot keys: coalescing"): goroutines hammering
// one key are decided exactly, in far fewer round trips than checks; with
// WithoutCoalescing every check is its own round trip.

package polylimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

func TestCoalescedHammerOfOneKey(t *testing.T) {
	const (
		goroutines = 32
		limit      = 300
		denials    = 3 // each goroutine checks until it has seen this many
	)
	for _, tc := range []struct {
		name     string
		coalesce bool
	}{{"on", true}, {"off", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			// Every Allow a blocking call of its own: no batching by the
			// binding (a batch is one round trip whatever the core does).
			opts := []polylimit.Option{polylimit.WithPoolSize(8), polylimit.WithBlockingChecks(goroutines)}
			if !tc.coalesce {
				opts = append(opts, polylimit.WithoutCoalescing())
			}
			c := open(t, shared.URL, opts...)
			l := limiter(t, c, "300/hour")
			if _, err := l.Allow(ctx, "warm"); err != nil { // connect and load the script
				t.Fatal(err)
			}
			before, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			var admitted, checks atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for denied := 0; denied < denials; {
						r, err := l.Allow(ctx, "hot")
						if err != nil {
							errs <- err
							return
						}
						checks.Add(1)
						if r.Allowed {
							admitted.Add(1)
						} else {
							denied++
						}
					}
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			after, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			n := checks.Load()
			if a := admitted.Load(); a != limit {
				t.Fatalf("admitted %d of %d checks, want exactly %d", a, n, limit)
			}
			if d := after.Checks - before.Checks; d != uint64(n) {
				t.Fatalf("stats counted %d checks, made %d", d, n)
			}
			trips := int64(after.RoundTrips - before.RoundTrips)
			// How many checks meet a call of the key in flight depends on how
			// many goroutines run at once: about half of them on an idle
			// 2-core machine, fewer when other test binaries load it.
			if tc.coalesce && (trips*4 >= n*3 || after.Coalesced == before.Coalesced) {
				t.Fatalf("coalescing on: %d round trips for %d checks (%d coalesced), want fewer than three quarters",
					trips, n, after.Coalesced-before.Coalesced)
			}
			if !tc.coalesce && trips != n {
				t.Fatalf("coalescing off: %d round trips for %d checks, want one each", trips, n)
			}
			t.Logf("%d checks, %d round trips", n, trips)
		})
	}
}
