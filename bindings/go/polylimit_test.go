//go:build cgo
// +build cgo

package polylimit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

var runID = func() *atomic.Int64 { var n atomic.Int64; n.Store(time.Now().UnixNano()); return &n }()

func open(t *testing.T, url string, opts ...polylimit.Option) *polylimit.Client {
	t.Helper()
	c, err := polylimit.Open(url, opts...)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func limiter(t *testing.T, c *polylimit.Client, spec string, opts ...polylimit.LimiterOption) *polylimit.Limiter {
	t.Helper()
	// Each test (and each -count iteration) gets its own prefix, so keys
	// never collide.
	opts = append([]polylimit.LimiterOption{polylimit.WithPrefix(fmt.Sprintf("go-%d-%s", runID.Add(1), t.Name()))}, opts...)
	l, err := c.Limiter(spec, opts...)
	if err != nil {
		t.Fatalf("Limiter(%q): %v", spec, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func wantCode(t *testing.T, what string, err error, code polylimit.ErrCode) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("%s: error %v, want %s", what, err, code)
	}
	var e *polylimit.Error
	if !errors.As(err, &e) || e.Msg == "" {
		t.Fatalf("%s: %v is not a *polylimit.Error with a message", what, err)
	}
}

// wantError checks the code and that the message contains want: the
// library's own words, which every language's tests assert alike.
func wantError(t *testing.T, what string, err error, code polylimit.ErrCode, want string) {
	t.Helper()
	wantCode(t, what, err, code)
	if msg := err.(*polylimit.Error).Msg; !strings.Contains(msg, want) {
		t.Fatalf("%s: message %q does not contain %q", what, msg, want)
	}
}

func TestVersion(t *testing.T) {
	if v := polylimit.Version(); v == "" || v < polylimit.HeaderVersion {
		t.Fatalf("Version() = %q, header %q", v, polylimit.HeaderVersion)
	}
}

func TestAllowThenDeny(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "5/minute")
	if l.Spec() != "5/minute" || l.Limit() != 0 || l.Window() != 0 {
		t.Fatalf("Spec, Limit, Window = %q, %d, %v", l.Spec(), l.Limit(), l.Window())
	}
	for i := 0; i < 5; i++ {
		r, err := l.Allow(ctx, "k")
		if err != nil || !r.Allowed || r.Remaining != 4-i || r.Limit != 5 || r.RetryAfter != 0 {
			t.Fatalf("call %d: %+v, %v", i, r, err)
		}
		if r.ResetAfter <= 0 || r.ResetAfter > time.Minute || r.Cached || r.Degraded {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	r, err := l.Allow(ctx, "k")
	if err != nil || r.Allowed || r.Remaining != 0 || r.RetryAfter <= 0 || r.RetryAfter > time.Minute {
		t.Fatalf("sixth call: %+v, %v", r, err)
	}
	if r, err := l.Allow(ctx, "other"); err != nil || !r.Allowed {
		t.Fatalf("other key: %+v, %v", r, err)
	}
}

func TestAllowNIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "5/s")
	if r, err := l.AllowN(ctx, "k", 3); err != nil || !r.Allowed || r.Remaining != 2 {
		t.Fatalf("AllowN 3: %+v, %v", r, err)
	}
	if r, err := l.AllowN(ctx, "k", 3); err != nil || r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("AllowN 3 again: %+v, %v", r, err)
	}
	if r, err := l.Peek(ctx, "k"); err != nil || !r.Allowed || r.Remaining != 2 {
		t.Fatalf("Peek after denial: %+v, %v", r, err)
	}
	if r, err := l.AllowN(ctx, "k", 2); err != nil || !r.Allowed || r.Remaining != 0 {
		t.Fatalf("AllowN 2: %+v, %v", r, err)
	}
}

func TestBinaryKeys(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "2 per 10 seconds")
	key := []byte("a\x00b\xff")
	if r, err := l.AllowBytes(ctx, key, 1); err != nil || !r.Allowed || r.Remaining != 1 {
		t.Fatalf("AllowBytes: %+v, %v", r, err)
	}
	// The same bytes as a string share the count; a key differing after the
	// NUL does not.
	if r, err := l.Allow(ctx, string(key)); err != nil || !r.Allowed || r.Remaining != 0 {
		t.Fatalf("Allow(string): %+v, %v", r, err)
	}
	if r, err := l.PeekBytes(ctx, key); err != nil || r.Allowed {
		t.Fatalf("PeekBytes: %+v, %v", r, err)
	}
	if r, err := l.Allow(ctx, "a\x00c\xff"); err != nil || !r.Allowed || r.Remaining != 1 {
		t.Fatalf("other key after NUL: %+v, %v", r, err)
	}
	if err := l.ResetBytes(ctx, key); err != nil {
		t.Fatal(err)
	}
	if r, err := l.PeekBytes(ctx, key); err != nil || !r.Allowed || r.Remaining != 2 {
		t.Fatalf("PeekBytes after reset: %+v, %v", r, err)
	}
	// Same with a context that can end (the goroutine path copies the key).
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r, err := l.AllowBytes(cctx, key, 2); err != nil || !r.Allowed || r.Remaining != 0 {
		t.Fatalf("AllowBytes with cancelable ctx: %+v, %v", r, err)
	}
}

func TestPeekDoesNotConsume(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "3/minute")
	for i := 0; i < 5; i++ {
		r, err := l.Peek(ctx, "k")
		if err != nil || !r.Allowed || r.Remaining != 3 || r.Limit != 3 {
			t.Fatalf("Peek %d: %+v, %v", i, r, err)
		}
	}
}

func TestReset(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "1/minute")
	if r, _ := l.Allow(ctx, "k"); !r.Allowed {
		t.Fatal("first call denied")
	}
	if r, _ := l.Allow(ctx, "k"); r.Allowed {
		t.Fatal("second call admitted")
	}
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
		t.Fatalf("after Reset: %+v, %v", r, err)
	}
	if err := l.Reset(ctx, "never-used"); err != nil {
		t.Fatalf("Reset of an unknown key: %v", err)
	}
}

func TestAllowAtAndClientClock(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL)
	l := limiter(t, c, "2/s", polylimit.WithClientClock())
	t0 := time.Now()
	for i, want := range []bool{true, true, false} {
		r, err := l.AllowAt(ctx, "k", 1, t0.Add(time.Duration(i)*time.Millisecond))
		if err != nil || r.Allowed != want {
			t.Fatalf("AllowAt %d: %+v, %v", i, r, err)
		}
	}
	// A second later the window has slid past all three.
	if r, err := l.AllowAt(ctx, "k", 2, t0.Add(1100*time.Millisecond)); err != nil || !r.Allowed {
		t.Fatalf("AllowAt a second later: %+v, %v", r, err)
	}
	// The client clock is this process's: live calls agree with it.
	l2 := limiter(t, c, "1/minute", polylimit.WithClientClock(), polylimit.WithAlgorithm(polylimit.SlidingLog))
	if r, err := l2.Allow(ctx, "k2"); err != nil || !r.Allowed {
		t.Fatalf("client clock Allow: %+v, %v", r, err)
	}
}

func TestAllowMany(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "2/minute")
	rs, errs := l.AllowMany(ctx, []string{"a", "b", "a", "a"}, 1)
	if errs != nil {
		t.Fatalf("errs = %v", errs)
	}
	got := []bool{rs[0].Allowed, rs[1].Allowed, rs[2].Allowed, rs[3].Allowed}
	if fmt.Sprint(got) != "[true true true false]" {
		t.Fatalf("AllowMany = %v", got)
	}
}

// Each key of AllowMany reports its own error, with the library's message
// for that key (the same as a single call's, without a "keys[i]:" prefix);
// the good keys around it are decided.
func TestAllowManyPerKeyErrors(t *testing.T) {
	ctx := context.Background()
	l := limiter(t, open(t, shared.URL), "2/minute")
	_, single := l.Allow(ctx, "")
	wantCode(t, "Allow(\"\")", single, polylimit.ErrInvalidArgument)
	want := single.(*polylimit.Error).Msg

	cctx, cancel := context.WithCancel(ctx) // and the goroutine path
	defer cancel()
	for name, ctx := range map[string]context.Context{"direct": ctx, "goroutine": cctx} {
		keys := []string{name + "c", "", name + "d", "", name + "c", name + "c"}
		rs, errs := l.AllowMany(ctx, keys, 1)
		if len(rs) != len(keys) || len(errs) != len(keys) {
			t.Fatalf("%s: %d results, %d errors for %d keys", name, len(rs), len(errs), len(keys))
		}
		for i, wantAllowed := range []bool{true, false, true, false, true, false} {
			if keys[i] == "" {
				wantError(t, fmt.Sprintf("%s: empty keys[%d]", name, i), errs[i], polylimit.ErrInvalidArgument, want)
				if msg := errs[i].(*polylimit.Error).Msg; msg != want {
					t.Fatalf("%s: keys[%d] message %q, want the key's own %q", name, i, msg, want)
				}
				continue
			}
			if errs[i] != nil || rs[i].Allowed != wantAllowed {
				t.Fatalf("%s: keys[%d] = %q: %+v, %v; want allowed=%v", name, i, keys[i], rs[i], errs[i], wantAllowed)
			}
		}
	}
	// More keys than a batch may hold: the whole call fails, before any key,
	// and every key gets the library's error.
	keys := make([]string, polylimit.MaxBatch+1)
	for i := range keys {
		keys[i] = "k"
	}
	_, errs := l.AllowMany(ctx, keys, 1)
	if len(errs) != len(keys) {
		t.Fatalf("oversized batch: %d errors", len(errs))
	}
	wantError(t, "oversized batch, first key", errs[0], polylimit.ErrInvalidArgument,
		fmt.Sprintf("batch = %d is out of range 0..%d", polylimit.MaxBatch+1, polylimit.MaxBatch))
	wantCode(t, "oversized batch, last key", errs[len(keys)-1], polylimit.ErrInvalidArgument)
	if r, err := l.Peek(ctx, "k"); err != nil || r.Remaining != 2 {
		t.Fatalf("the oversized batch consumed: %+v, %v", r, err)
	}
}

func TestMemoryBackend(t *testing.T) {
	l := limiter(t, open(t, "memory://"), "1/minute")
	if r, err := l.Allow(context.Background(), "k"); err != nil || !r.Allowed {
		t.Fatalf("%+v, %v", r, err)
	}
	if r, err := l.Allow(context.Background(), "k"); err != nil || r.Allowed {
		t.Fatalf("%+v, %v", r, err)
	}
}

func TestBadArguments(t *testing.T) {
	ctx := context.Background()
	_, err := polylimit.Open("nosuch://x")
	wantCode(t, "bad URL scheme", err, polylimit.ErrInvalidArgument)
	_, err = polylimit.Open("redis://127.0.0.1:6379\x00x")
	wantCode(t, "URL with NUL", err, polylimit.ErrInvalidArgument)
	// Every range is the library's to check, with one message for every
	// language; the binding only converts (durations round up to whole ms,
	// and a value beyond a C int is clamped to one the library refuses).
	for name, tc := range map[string]struct {
		opt  polylimit.Option
		want string
	}{
		"pool 5000":         {polylimit.WithPoolSize(5000), "pool_size = 5000 is out of range 1..4096"},
		"pool -1":           {polylimit.WithPoolSize(-1), "pool_size = -1 is out of range 1..4096"},
		"pool beyond int32": {polylimit.WithPoolSize(math.MaxInt64), "pool_size = 2147483647 is out of range 1..4096"},
		"connect -1s":       {polylimit.WithConnectTimeout(-time.Second), "connect_timeout_ms = -1000 is out of range 1..3600000"},
		"command 2h":        {polylimit.WithCommandTimeout(2 * time.Hour), "command_timeout_ms = 7200000 is out of range 1..3600000"},
		"acquire too large": {polylimit.WithAcquireTimeout(1 << 62), "acquire_timeout_ms = 2147483647 is out of range 0..3600000"},
		"keepalive 2 days":  {polylimit.WithKeepAlive(48 * time.Hour), "keepalive_s = 172800 is out of range 0..86400"},
		"keepalive -1ns":    {polylimit.WithKeepAlive(-1), "keepalive_s = -1 is out of range 0..86400"},
		"idle check -1ns":   {polylimit.WithIdleCheck(-1), "idle_check_ms = -1 is out of range 0..86400000"},
	} {
		_, err = polylimit.Open(shared.URL, tc.opt)
		wantError(t, name, err, polylimit.ErrInvalidArgument, tc.want)
	}
	// 0 selects the library's default; a positive duration below the unit
	// rounds up to one unit, never down to 0.
	for name, opt := range map[string]polylimit.Option{
		"pool 0":            polylimit.WithPoolSize(0),
		"pool 4096":         polylimit.WithPoolSize(4096),
		"command 0":         polylimit.WithCommandTimeout(0),
		"command 1ns":       polylimit.WithCommandTimeout(1),
		"connect 1h":        polylimit.WithConnectTimeout(time.Hour),
		"acquire 0":         polylimit.WithAcquireTimeout(0),
		"keepalive 1ms":     polylimit.WithKeepAlive(time.Millisecond),
		"keepalive 1 day":   polylimit.WithKeepAlive(24 * time.Hour),
		"without keepalive": polylimit.WithoutKeepAlive(),
		"idle check 1.2ms":  polylimit.WithIdleCheck(1200 * time.Microsecond),
	} {
		c, err := polylimit.Open(shared.URL, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.Close()
	}

	c := open(t, shared.URL)
	for name, mk := range map[string]func() (*polylimit.Limiter, error){
		"limit 0":         func() (*polylimit.Limiter, error) { return c.Limiter("0/s") },
		"limit too large": func() (*polylimit.Limiter, error) { return c.LimiterFor(1000001, time.Second) },
		"negative limit":  func() (*polylimit.Limiter, error) { return c.LimiterFor(-5, time.Second) },
		"window 0":        func() (*polylimit.Limiter, error) { return c.LimiterFor(10, 0) },
		"window 1.5ms":    func() (*polylimit.Limiter, error) { return c.LimiterFor(10, 1500*time.Microsecond) },
		"window > 366d":   func() (*polylimit.Limiter, error) { return c.Limiter("1/400days") },
		"bad spec":        func() (*polylimit.Limiter, error) { return c.Limiter("lots") },
		"unknown algorithm": func() (*polylimit.Limiter, error) {
			return c.Limiter("10/s", polylimit.WithAlgorithm(polylimit.Algorithm(7)))
		},
		"unknown clock": func() (*polylimit.Limiter, error) {
			return c.LimiterFor(10, time.Second, polylimit.WithClock(polylimit.Clock(-1)))
		},
		"prefix with NUL": func() (*polylimit.Limiter, error) {
			return c.Limiter("10/s", polylimit.WithPrefix("a\x00b"))
		},
		"prefix too long": func() (*polylimit.Limiter, error) {
			return c.Limiter("10/s", polylimit.WithPrefix(strings.Repeat("p", 300)))
		},
	} {
		l, err := mk()
		if l != nil {
			t.Errorf("%s: got a limiter", name)
		}
		wantCode(t, name, err, polylimit.ErrInvalidArgument)
	}
	_, err = c.Limiter("10/s", polylimit.WithAlgorithm(polylimit.Algorithm(7)))
	wantError(t, "algorithm 7", err, polylimit.ErrInvalidArgument, "algorithm = 7 is unknown (0..3)")
	_, err = c.LimiterFor(1000001, time.Second)
	wantError(t, "limit too large", err, polylimit.ErrInvalidArgument, "limit = 1000001 is out of range 1..1000000")
	_, err = c.LimiterFor(10, 0)
	wantError(t, "window 0", err, polylimit.ErrInvalidArgument, "window_ms = 0 is out of range 1..31622400000")
	_, err = c.LimiterFor(10, 1500*time.Microsecond) // a window sets the rate: never rounded
	wantError(t, "window 1.5ms", err, polylimit.ErrInvalidArgument, "window 1.5ms is not a whole number of milliseconds")

	l := limiter(t, c, "3/s")
	_, err = l.AllowN(ctx, "k", 0)
	wantCode(t, "cost 0", err, polylimit.ErrInvalidArgument)
	_, err = l.AllowN(ctx, "k", -1)
	wantCode(t, "cost -1", err, polylimit.ErrInvalidArgument)
	_, err = l.AllowN(ctx, "k", 4)
	wantCode(t, "cost above the limit", err, polylimit.ErrInvalidArgument)
	_, err = l.Allow(ctx, "")
	wantCode(t, "empty key", err, polylimit.ErrInvalidArgument)
	_, err = l.AllowBytes(ctx, nil, 1)
	wantCode(t, "nil key", err, polylimit.ErrInvalidArgument)
	_, err = l.Peek(ctx, "")
	wantCode(t, "Peek empty key", err, polylimit.ErrInvalidArgument)
	wantCode(t, "Reset empty key", l.Reset(ctx, ""), polylimit.ErrInvalidArgument)
	_, err = l.Refund(ctx, "k", 0)
	wantError(t, "Refund 0", err, polylimit.ErrInvalidArgument, "units = 0 is out of range 1..1000000")
	_, err = l.AllowAt(ctx, "k", 1, time.Unix(0, 0))
	wantError(t, "AllowAt the epoch", err, polylimit.ErrInvalidArgument, "now_us = 0 is out of range 1..4503599627370496")
	// None of that consumed anything.
	if r, err := l.Peek(ctx, "k"); err != nil || r.Remaining != 3 {
		t.Fatalf("after bad calls: %+v, %v", r, err)
	}
}

func TestErrorValues(t *testing.T) {
	e := &polylimit.Error{Code: polylimit.ErrTimeout, Errno: syscall.ETIMEDOUT, Msg: "command: timed out"}
	if !errors.Is(e, polylimit.ErrTimeout) || errors.Is(e, polylimit.ErrUnavailable) || !errors.Is(e, syscall.ETIMEDOUT) {
		t.Fatal("errors.Is on *Error")
	}
	if e.Error() != "polylimit: command: timed out" || !e.Temporary() || polylimit.ErrTimeout.String() != "POLYLIMIT_ETIMEOUT" {
		t.Fatalf("Error() = %q", e.Error())
	}
	// A code from a newer library counts as ErrInternal.
	if !errors.Is(&polylimit.Error{Code: -99}, polylimit.ErrInternal) {
		t.Fatal("unknown code is not ErrInternal")
	}
}

func TestUnavailable(t *testing.T) {
	port := func() int {
		srv := newRedis(t) // a port that was just free and nothing listens on after Stop
		srv.Stop()
		_, p, _ := strings.Cut(srv.Addr, ":")
		var n int
		fmt.Sscan(p, &n)
		return n
	}()
	c := open(t, fmt.Sprintf("redis://127.0.0.1:%d", port), polylimit.WithConnectTimeout(500*time.Millisecond))
	l := limiter(t, c, "10/s")
	_, err := l.Allow(context.Background(), "k")
	wantCode(t, "nothing listening", err, polylimit.ErrUnavailable)
	if !err.(*polylimit.Error).Temporary() {
		t.Fatal("ErrUnavailable should be temporary")
	}
}

func TestContextAlreadyDone(t *testing.T) {
	l := limiter(t, open(t, shared.URL), "5/minute")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Allow(ctx, "k"); err != context.Canceled {
		t.Fatalf("Allow with a canceled ctx: %v", err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	if err := l.Reset(dctx, "k"); err != context.DeadlineExceeded {
		t.Fatalf("Reset with an expired ctx: %v", err)
	}
	// Nothing reached Redis.
	if r, err := l.Peek(context.Background(), "k"); err != nil || r.Remaining != 5 {
		t.Fatalf("after canceled calls: %+v, %v", r, err)
	}
}

func TestContextDeadlineShorterThanCommandTimeout(t *testing.T) {
	srv := newRedis(t)
	c := open(t, srv.URL, polylimit.WithCommandTimeout(2*time.Second))
	l := limiter(t, c, "100/minute")
	if _, err := l.Allow(context.Background(), "k"); err != nil { // connect and load the script first
		t.Fatal(err)
	}
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Signal(syscall.SIGCONT)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.Allow(ctx, "k")
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, polylimit.ErrTimeout) {
		t.Fatalf("error %v, want DeadlineExceeded", err)
	}
	var ce *polylimit.ContextError
	if !errors.As(err, &ce) || ce.Op != "allow" {
		t.Fatalf("error %#v is not a ContextError", err)
	}
	if took > time.Second {
		t.Fatalf("returned after %v, want about 100ms", took)
	}

	// Cancellation (not a deadline) is Canceled, and not a timeout.
	cctx, ccancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, ccancel)
	_, err = l.Peek(cctx, "k")
	if !errors.Is(err, context.Canceled) || errors.Is(err, polylimit.ErrTimeout) {
		t.Fatalf("Peek canceled: %v", err)
	}

	// Without a context deadline the library's own command timeout answers.
	start = time.Now()
	_, err = l.Allow(context.Background(), "k2")
	took = time.Since(start)
	wantCode(t, "stopped server, no ctx deadline", err, polylimit.ErrTimeout)
	if took < 1500*time.Millisecond || took > 5*time.Second {
		t.Fatalf("command timeout took %v, want about 2s", took)
	}

	srv.Signal(syscall.SIGCONT)
	resumed = true
	// Close waits for the abandoned calls, then the limiter is gone.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A fresh limiter works on the resumed server: the timed-out connections
	// were discarded, not reused.
	l2 := limiter(t, c, "100/minute")
	recovered(t, "after SIGCONT", func() (polylimit.Result, error) { return l2.Allow(context.Background(), "k3") })
}

// recovered retries allow until it admits without degradation: a server that
// comes back is used once the reconnect backoff (10 ms doubling to 1 s) lets
// a connect through, so it must happen within 2 s.
func recovered(t *testing.T, what string, allow func() (polylimit.Result, error)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		r, err := allow()
		if err == nil && r.Allowed && !r.Degraded {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not recovered within 2 s: %+v, %v", what, r, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// allowHot runs `goroutines` goroutines that each call l.Allow on the key
// "hot" `attempts` times, all starting together, and returns how many calls
// were admitted and denied; errors fail the test (prefixed by name).
// Goroutine g uses a context with a deadline when withDeadline(g), so that
// both ways a call can wait are taken. after (if not nil) runs after each
// call on the same goroutine and returns an error to report, or nil.
func allowHot(t *testing.T, name string, l *polylimit.Limiter, goroutines, attempts int,
	withDeadline func(g int) bool, after func(ctx context.Context, g, i int) error) (admitted, denied int64) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines*attempts)
	start := make(chan struct{})
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ctx := context.Background()
			if withDeadline(g) {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Minute)
				defer cancel()
			}
			<-start
			for i := 0; i < attempts; i++ {
				r, err := l.Allow(ctx, "hot")
				switch {
				case err != nil:
					errs <- err
				case r.Allowed:
					atomic.AddInt64(&admitted, 1)
				default:
					atomic.AddInt64(&denied, 1)
				}
				if after != nil {
					if err := after(ctx, g, i); err != nil {
						errs <- err
					}
				}
			}
		}(g)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%s: %v", name, err)
	}
	return admitted, denied
}

func TestExactUnderConcurrency(t *testing.T) {
	const limit, goroutines, attempts = 100, 64, 8
	c := open(t, shared.URL, polylimit.WithPoolSize(16))
	l := limiter(t, c, fmt.Sprintf("%d/minute", limit))
	// Half take the goroutine path (a context with a deadline).
	admitted, denied := allowHot(t, "hot key", l, goroutines, attempts, func(g int) bool { return g%2 == 1 }, nil)
	if admitted != limit || denied != goroutines*attempts-limit {
		t.Fatalf("admitted %d, denied %d; want exactly %d admitted", admitted, denied, limit)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	ctx := context.Background()
	c, err := polylimit.Open(shared.URL)
	if err != nil {
		t.Fatal(err)
	}
	l := limiter(t, c, "10/s")
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
		t.Fatalf("Allow: %+v, %v", r, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = c.Limiter("1/s")
	wantError(t, "Limiter after Close", err, polylimit.ErrClosed, "the client is closed")
	_, err = c.LimiterFor(1, time.Second)
	wantError(t, "LimiterFor after Close", err, polylimit.ErrClosed, "the client is closed")
	// Closing the client closed its limiter.
	_, err = l.Allow(ctx, "k")
	wantError(t, "limiter after client Close", err, polylimit.ErrClosed, "the client is closed")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second limiter Close: %v", err)
	}
	_, err = l.Allow(ctx, "k")
	wantError(t, "Allow after Close", err, polylimit.ErrClosed, "the limiter is closed")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err = l.Peek(cctx, "k")
	wantCode(t, "Peek after Close (goroutine path)", err, polylimit.ErrClosed)
	wantCode(t, "Reset after Close", l.Reset(ctx, "k"), polylimit.ErrClosed)
}

// Closing a client closes every limiter made from it, in every language:
// each call then fails with ErrClosed and the library's "the client is
// closed"; Limiter.Close still frees each handle, in either order.
func TestClientCloseClosesLimiters(t *testing.T) {
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx) // the goroutine path
	defer cancel()
	for _, url := range []string{shared.URL, "memory://"} {
		c, err := polylimit.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		a := limiter(t, c, "10/s")
		b, err := c.LimiterFor(5, time.Minute, polylimit.WithAlgorithm(polylimit.GCRA),
			polylimit.WithPrefix(fmt.Sprintf("go-%d-close", runID.Add(1))))
		if err != nil {
			t.Fatal(err)
		}
		freed := limiter(t, c, "10/s")
		for _, l := range []*polylimit.Limiter{a, b, freed} {
			if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
				t.Fatalf("%s: before Close: %+v, %v", url, r, err)
			}
		}
		if err := freed.Close(); err != nil { // a limiter freed before its client
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		for i, l := range []*polylimit.Limiter{a, b} {
			closed := func(what string, err error) {
				t.Helper()
				wantError(t, fmt.Sprintf("%s: limiter %d: %s", url, i, what), err, polylimit.ErrClosed, "the client is closed")
			}
			for name, ctx := range map[string]context.Context{"direct": ctx, "goroutine": cctx} {
				_, err := l.Allow(ctx, "k")
				closed("Allow, "+name, err)
				_, err = l.Peek(ctx, "k")
				closed("Peek, "+name, err)
				closed("Reset, "+name, l.Reset(ctx, "k"))
				_, err = l.AllowBytes(ctx, []byte("k"), 1)
				closed("AllowBytes, "+name, err)
				_, err = l.AllowAtMost(ctx, "k", 2)
				closed("AllowAtMost, "+name, err)
				_, err = l.AllowWithLimit(ctx, "k", 1, 3, time.Second)
				closed("AllowWithLimit, "+name, err)
				_, err = l.Refund(ctx, "k", 1)
				closed("Refund, "+name, err)
				_, err = l.Acquire(ctx, "k", 1)
				closed("Acquire, "+name, err)
				_, errs := l.AllowMany(ctx, []string{"k", "j"}, 1)
				if len(errs) != 2 {
					t.Fatalf("AllowMany after client Close: %v", errs)
				}
				closed("AllowMany[0], "+name, errs[0])
				closed("AllowMany[1], "+name, errs[1])
			}
			if !errors.Is(func() error { _, err := l.Allow(ctx, "k"); return err }(), polylimit.ErrClosed) {
				t.Fatal("errors.Is(err, ErrClosed)")
			}
			// The handle stays valid until freed; freeing is idempotent.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			_, err := l.Allow(ctx, "k")
			wantError(t, "Allow after both Close", err, polylimit.ErrClosed, "the limiter is closed")
		}
		_, err = c.Stats()
		wantError(t, "Stats after Close", err, polylimit.ErrClosed, "the client is closed")
	}
}

func TestConcurrentCloseAndAllow(t *testing.T) {
	c := open(t, shared.URL, polylimit.WithPoolSize(4))
	for round := 0; round < 5; round++ {
		l, err := c.Limiter("1000000/minute", polylimit.WithPrefix("go-"+t.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var ok, closed int64
		start := make(chan struct{})
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				<-start
				ctx := context.Background()
				if g%2 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				for i := 0; i < 50; i++ {
					_, err := l.Allow(ctx, fmt.Sprint("k", g))
					switch {
					case err == nil:
						atomic.AddInt64(&ok, 1)
					case errors.Is(err, polylimit.ErrClosed):
						atomic.AddInt64(&closed, 1)
					default:
						t.Errorf("Allow: %v", err)
						return
					}
				}
			}(g)
		}
		for g := 0; g < 4; g++ { // several closers race each other too
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				waitCalls(&ok, &closed) // close while the callers are busy
				if err := l.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if ok+closed != 16*50 {
			t.Fatalf("ok %d + closed %d != %d", ok, closed, 16*50)
		}
	}
	// Client Close racing calls on its limiters: every call is decided or
	// fails with ErrClosed, and Close waits for the calls in flight.
	for round := 0; round < 5; round++ {
		cc, err := polylimit.Open(shared.URL, polylimit.WithPoolSize(4))
		if err != nil {
			t.Fatal(err)
		}
		ls := make([]*polylimit.Limiter, 3)
		for i := range ls {
			if ls[i], err = cc.Limiter("1000000/minute", polylimit.WithPrefix("go-"+t.Name())); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var ok, closed int64
		start := make(chan struct{})
		for g := 0; g < 12; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				<-start
				ctx := context.Background()
				if g%2 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				l := ls[g%len(ls)]
				for i := 0; i < 50; i++ {
					var err error
					if i%10 == 0 {
						_, errs := l.AllowMany(ctx, []string{"a", "b"}, 1)
						if errs != nil {
							err = errs[0]
						}
					} else {
						_, err = l.Allow(ctx, fmt.Sprint("k", g))
					}
					switch {
					case err == nil:
						atomic.AddInt64(&ok, 1)
					case errors.Is(err, polylimit.ErrClosed):
						atomic.AddInt64(&closed, 1)
					default:
						t.Errorf("Allow: %v", err)
						return
					}
				}
				if g == 0 { // a limiter freed while its client closes
					l.Close()
				}
			}(g)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			waitCalls(&ok, &closed) // close while the callers are busy
			if err := cc.Close(); err != nil {
				t.Errorf("Client.Close: %v", err)
			}
		}()
		close(start)
		wg.Wait()
		if ok+closed != 12*50 {
			t.Fatalf("ok %d + closed %d != %d", ok, closed, 12*50)
		}
		for _, l := range ls {
			l.Close()
		}
	}

	// Client Close racing Limiter creation.
	c2, err := polylimit.Open(shared.URL)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				l, err := c2.Limiter("5/s")
				if err == nil {
					l.Close()
				} else if !errors.Is(err, polylimit.ErrClosed) {
					t.Errorf("Limiter: %v", err)
				}
			}
		}()
	}
	c2.Close()
	wg.Wait()
}

// waitCalls returns once a call has completed (counted in ok or closed), or
// after a second: the callers are then under way.
func waitCalls(ok, closed *int64) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); runtime.Gosched() {
		if atomic.LoadInt64(ok)+atomic.LoadInt64(closed) > 0 {
			return
		}
	}
}

// Forgotten handles are freed by finalizers: clients that were never closed
// release their native handle, whose connections then close (the server
// counts them), and a finalizer after an explicit Close does not double free.
func TestFinalizerSafetyNet(t *testing.T) {
	srv := newRedis(t) // its own server: only this test's connections count
	connected := func() int {
		info, err := srv.Bulk("INFO", "clients")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			var n int
			if _, err := fmt.Sscanf(line, "connected_clients:%d", &n); err == nil {
				return n
			}
		}
		t.Fatalf("no connected_clients in %q", info)
		return 0
	}
	before := connected() // the INFO connection itself
	forget := func() {    // in a function of its own: nothing on this stack keeps them
		for i := 0; i < 20; i++ {
			c, err := polylimit.Open(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			l, err := c.Limiter("1/s")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Allow(context.Background(), "k"); err != nil { // opens a connection
				t.Fatal(err)
			}
			if i%2 == 0 {
				l.Close()
				c.Close()
			}
		}
	}
	forget()
	if n := connected(); n < before+10 {
		t.Fatalf("%d connections with 10 clients left open, %d before", n, before)
	}
	// Finalizers run after a GC finds the handles unreachable (a limiter's
	// first, then its client's in a later cycle): collect until the server
	// has seen every connection close.
	deadline := time.Now().Add(10 * time.Second)
	for connected() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open 10 s after the handles became garbage (%d before)", connected(), before)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // lets the finalizer goroutine run: a poll, not a guess
	}
}
