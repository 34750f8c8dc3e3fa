//go:build cgo
// +build cgo

// Client statistics.

package polylimit_test

import (
	"context"
	"math"
	"strings"
	"testing"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

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
