//go:build cgo
// +build cgo

// The algorithms (sliding log, sliding counter, fixed window, GCRA) and
// rate specs: decisions at given times, GCRA bursts, multi-limit specs and
// the specs that are refused.

package polylimit_test

import (
	"context"
	"fmt"
	"strings"
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
