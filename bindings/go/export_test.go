//go:build cgo
// +build cgo

package polylimit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

// Headers and HeaderText carry the library's lines (polylimit_limiter_headers)
// unchanged; the values here are computed from the limit and window.
func TestHeaders(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "2/minute")
	start := time.Now()
	for i := 1; i <= 2; i++ {
		r, err := l.Allow(ctx, "k")
		if err != nil || !r.Allowed {
			t.Fatal(r, err)
		}
		text, err := l.HeaderText(r)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("RateLimit-Limit: 2\nRateLimit-Remaining: %d\nRateLimit-Reset: 60\n"+
			"RateLimit-Policy: \"default\";q=2;w=60\nRateLimit: \"default\";r=%d;t=60\n", 2-i, 2-i)
		if text != want {
			t.Errorf("HeaderText:\n%s\nwant:\n%s", text, want)
		}
		h, err := l.Headers(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 5 || h.Get("RateLimit-Remaining") != fmt.Sprint(2-i) || h.Get("RateLimit-Policy") != `"default";q=2;w=60` ||
			h.Get("Retry-After") != "" {
			t.Errorf("Headers: %v", h)
		}
	}
	r, err := l.Allow(ctx, "k")
	if err != nil || r.Allowed {
		t.Fatal(r, err)
	}
	h, err := l.Headers(r)
	if err != nil {
		t.Fatal(err)
	}
	// The first entry leaves the window a minute after it was written:
	// between a minute less the time elapsed and a minute, rounded up.
	lo := int(math.Ceil((time.Minute - time.Since(start)).Seconds()))
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < lo || ra > 60 || len(h) != 6 {
		t.Errorf("denied: Headers %v, want Retry-After in %d..60", h, lo)
	}
	if text, _ := l.HeaderText(r); !strings.HasPrefix(text, "Retry-After: ") {
		t.Errorf("denied: Retry-After is not first:\n%s", text)
	}

	// A spec of several limits, with the separators of the limits package.
	multi := limiter(t, open(t, shared.URL), "10 per second, 100/hour")
	r, err = multi.Allow(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	h, _ = multi.Headers(r)
	if got := h.Get("RateLimit-Policy"); got != `"10-per-1s";q=10;w=1, "100-per-3600s";q=100;w=3600` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	// The reset is the deciding limit's (10/s: at most its 1 s window), not
	// the whole key's (an hour).
	if got := h.Get("RateLimit"); got != `"10-per-1s";r=9;t=1` || h.Get("RateLimit-Reset") != "1" {
		t.Errorf("RateLimit %q", got)
	}
	// A limit given for one call has no policy of the limiter's.
	r, err = multi.AllowWithLimit(ctx, "other", 1, 7, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h, _ = multi.Headers(r)
	if h.Get("RateLimit-Limit") != "7" || h.Get("RateLimit-Policy") != "" {
		t.Errorf("AllowWithLimit: Headers %v", h)
	}

	l.Close()
	if _, err := l.Headers(r); !errors.Is(err, polylimit.ErrClosed) {
		t.Errorf("closed limiter: %v", err)
	}
}

// Open("") reads POLYLIMIT_URL; without it Open fails, naming memory:// as
// the explicit choice: no silent local default.
func TestOpenEmptyURLReadsEnvironment(t *testing.T) {
	t.Setenv("POLYLIMIT_URL", "")
	_, err := polylimit.Open("")
	if !errors.Is(err, polylimit.ErrInvalidArgument) || !strings.Contains(err.Error(), "POLYLIMIT_URL") ||
		!strings.Contains(err.Error(), "memory://") {
		t.Fatalf("Open(\"\") without POLYLIMIT_URL: %v", err)
	}
	t.Setenv("POLYLIMIT_URL", shared.URL)
	c := open(t, "")
	l := limiter(t, c, "1/minute")
	if r, err := l.Allow(context.Background(), "k"); err != nil || !r.Allowed {
		t.Fatal(r, err)
	}
	if s, err := c.Stats(); err != nil || s.RoundTrips == 0 {
		t.Errorf("Open(\"\") with POLYLIMIT_URL=%s did not talk to Redis: %+v %v", shared.URL, s, err)
	}
}

func TestClientName(t *testing.T) {
	c := open(t, shared.URL, polylimit.WithName("api-1"))
	if c.Name() != "api-1" {
		t.Errorf("Name() = %q", c.Name())
	}
	l := limiter(t, c, "5/minute")
	for i := 0; i < 3; i++ {
		l.Allow(context.Background(), "k")
	}
	text, err := c.StatsPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\npolylimit_checks_total{client=\"api-1\"} 3\n", "\npolylimit_admitted_total{client=\"api-1\"} 3\n",
		"polylimit_check_latency_seconds_count{client=\"api-1\"} 3\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("StatsPrometheus has no %q:\n%s", want, text)
		}
	}
	if unnamed := open(t, "memory://"); unnamed.Name() != "" {
		t.Errorf("unnamed client: Name() = %q", unnamed.Name())
	}
	for _, bad := range []string{"a b", `x"y`, strings.Repeat("n", 129), "nul\x00"} {
		if _, err := polylimit.Open("memory://", polylimit.WithName(bad)); !errors.Is(err, polylimit.ErrInvalidArgument) {
			t.Errorf("WithName(%q): %v", bad, err)
		}
	}
}

// Several clients on one page: HELP and TYPE once per metric, a sample per
// client.
func TestPrometheusText(t *testing.T) {
	a := open(t, shared.URL, polylimit.WithName("a"))
	b := open(t, "memory://", polylimit.WithName("b"))
	la, lb := limiter(t, a, "5/minute"), limiter(t, b, "5/minute")
	for i := 0; i < 2; i++ {
		la.Allow(context.Background(), "k")
	}
	lb.Allow(context.Background(), "k")
	page, err := polylimit.PrometheusText(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page, "# HELP polylimit_checks_total "); n != 1 {
		t.Errorf("HELP polylimit_checks_total %d times", n)
	}
	for _, want := range []string{"polylimit_checks_total{client=\"a\"} 2\n", "polylimit_checks_total{client=\"b\"} 1\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in:\n%s", want, page)
		}
	}
	// One client: its own page.
	one, err := polylimit.PrometheusText(a)
	own, err2 := a.StatsPrometheus()
	if err != nil || err2 != nil || one != own {
		t.Errorf("PrometheusText(a) differs from a.StatsPrometheus(): %v %v", err, err2)
	}
	// Its own export twice is not one page; the library refuses what would
	// not be one.
	unnamed := open(t, "memory://")
	closed := open(t, "memory://", polylimit.WithName("c"))
	closed.Close()
	for name, tc := range map[string]struct {
		clients []*polylimit.Client
		code    polylimit.ErrCode
		msg     string
	}{
		"none":       {nil, polylimit.ErrInvalidArgument, "n = 0"},
		"nil":        {[]*polylimit.Client{a, nil}, polylimit.ErrInvalidArgument, "clients[1] is nil"},
		"unnamed":    {[]*polylimit.Client{a, unnamed}, polylimit.ErrInvalidArgument, "clients[1] has no name"},
		"repeated":   {[]*polylimit.Client{a, b, a}, polylimit.ErrInvalidArgument, "named 'a'"},
		"closed":     {[]*polylimit.Client{a, closed}, polylimit.ErrClosed, "clients[1]"},
		"same twice": {[]*polylimit.Client{b, b}, polylimit.ErrInvalidArgument, "named 'b'"},
	} {
		_, err := polylimit.PrometheusText(tc.clients...)
		if !errors.Is(err, tc.code) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v mentioning %q", name, err, tc.code, tc.msg)
		}
	}
}

// The TLS options reach the library: it refuses them on a URL without TLS
// rather than ignoring them.
func TestTLSOptionsReachTheLibrary(t *testing.T) {
	for name, opt := range map[string]polylimit.Option{
		"ca file":     polylimit.WithTLSCAFile("ca.pem"),
		"ca dir":      polylimit.WithTLSCADir("certs"),
		"client cert": polylimit.WithTLSClientCert("client.pem", "client.key"),
		"server name": polylimit.WithTLSServerName("redis.internal"),
		"insecure":    polylimit.WithTLSInsecureSkipVerify(),
	} {
		_, err := polylimit.Open(shared.URL, opt)
		if !errors.Is(err, polylimit.ErrInvalidArgument) || !strings.Contains(err.Error(), "tls") {
			t.Errorf("%s on redis://: %v, want the library's refusal", name, err)
		}
	}
	_, err := polylimit.Open(shared.URL, polylimit.WithTLSCAFile("ca\x00.pem"))
	if !errors.Is(err, polylimit.ErrInvalidArgument) || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("NUL in a TLS path: %v", err)
	}
}
