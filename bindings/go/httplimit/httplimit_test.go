package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
	"github.com/polylimit/polylimit/bindings/go/internal/redistest"
)

// Every test runs real HTTP (httptest.NewServer: a loopback socket, and a
// real http.Client) against real redis-server processes.

var shared *redistest.Server

func TestMain(m *testing.M) {
	srv, err := redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "httplimit tests need redis-server:", err)
		os.Exit(1)
	}
	shared = srv
	code := m.Run()
	srv.Stop()
	removeExample()
	os.Exit(code)
}

func openClient(t *testing.T, url string, opts ...polylimit.Option) *polylimit.Client {
	t.Helper()
	c, err := polylimit.Open(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// prefix is a Redis key prefix of the test's own.
func prefix(t *testing.T, suffix string) string {
	return strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + suffix
}

func limiterFor(t *testing.T, c *polylimit.Client, limit int, window time.Duration, opts ...polylimit.LimiterOption) *polylimit.Limiter {
	t.Helper()
	l, err := c.LimiterFor(limit, window, append([]polylimit.LimiterOption{polylimit.WithPrefix(prefix(t, ""))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func limiterSpec(t *testing.T, c *polylimit.Client, spec, pfx string) *polylimit.Limiter {
	t.Helper()
	l, err := c.Limiter(spec, polylimit.WithPrefix(prefix(t, pfx)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// counting is the handler behind the middleware: it counts the requests that
// reach it.
type counting struct{ n atomic.Int64 }

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	io.WriteString(w, "ok\n")
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

type reply struct {
	status int
	header http.Header
	body   string
}

// get sends GET base+path with headers given as name, value pairs, and
// reads the whole reply. It does not follow redirects.
func get(t *testing.T, base, path string, headers ...string) reply {
	t.Helper()
	r, err := fetch(base, path, headers...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var httpClient = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// fetch is get for goroutines other than the test's: it returns the error.
func fetch(base, path string, headers ...string) (reply, error) {
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		return reply{}, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{resp.StatusCode, resp.Header, string(body)}, nil
}

// expect checks a header's exact value ("" : absent).
func expect(t *testing.T, r reply, name, want string) {
	t.Helper()
	if got := r.header.Get(name); got != want {
		t.Errorf("%s: got %q, want %q (status %d, headers %v)", name, got, want, r.status, r.header)
	}
}

func expectStatus(t *testing.T, r reply, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d (body %q, headers %v)", r.status, want, r.body, r.header)
	}
}

// ceilSeconds is the headers' rounding of a duration: whole seconds, up.
func ceilSeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// secondsBetween checks that a header holds whole seconds in [lo, hi].
func secondsBetween(t *testing.T, r reply, name string, lo, hi int) int {
	t.Helper()
	v, err := strconv.Atoi(r.header.Get(name))
	if err != nil || v < lo || v > hi {
		t.Errorf("%s = %q, want whole seconds in %d..%d", name, r.header.Get(name), lo, hi)
	}
	return v
}

// A single limit of 3 per 10 s: three 200s with the headers counting down,
// then 429 with Retry-After; every value computed here from limit and window.
func TestAllowedThenDeniedWithExactHeaders(t *testing.T) {
	const limit, window = 3, 10 * time.Second
	c := openClient(t, shared.URL)
	h := &counting{}
	srv := serve(t, httplimit.New(limiterFor(t, c, limit, window))(h))
	windowS := ceilSeconds(window)
	policy := fmt.Sprintf(`"default";q=%d;w=%d`, limit, windowS)

	start := time.Now()
	for i := 1; i <= limit; i++ {
		r := get(t, srv.URL, "/")
		expectStatus(t, r, 200)
		if r.body != "ok\n" {
			t.Errorf("body %q", r.body)
		}
		remaining := limit - i
		// Sliding log: the key is full again one window after its newest
		// entry, which this very decision wrote: exactly the window.
		expect(t, r, "RateLimit-Limit", strconv.Itoa(limit))
		expect(t, r, "RateLimit-Remaining", strconv.Itoa(remaining))
		expect(t, r, "RateLimit-Reset", strconv.Itoa(windowS))
		expect(t, r, "RateLimit-Policy", policy)
		expect(t, r, "RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, remaining, windowS))
		expect(t, r, "Retry-After", "")
	}
	r := get(t, srv.URL, "/")
	elapsed := time.Since(start)
	expectStatus(t, r, http.StatusTooManyRequests)
	if r.body != "Too Many Requests\n" {
		t.Errorf("429 body %q", r.body)
	}
	// The oldest entry leaves the window `window` after the first request:
	// between window-elapsed and window from now, in whole seconds, rounded up.
	lo, hi := ceilSeconds(window-elapsed), windowS
	secondsBetween(t, r, "Retry-After", lo, hi)
	reset := secondsBetween(t, r, "RateLimit-Reset", lo, hi)
	expect(t, r, "RateLimit-Limit", strconv.Itoa(limit))
	expect(t, r, "RateLimit-Remaining", "0")
	expect(t, r, "RateLimit-Policy", policy)
	expect(t, r, "RateLimit", fmt.Sprintf(`"default";r=0;t=%d`, reset))
	if n := h.n.Load(); n != limit {
		t.Errorf("the handler ran %d times, want %d (a denied request must not reach it)", n, limit)
	}
}

// Exempt paths pass without a check (no headers, nothing consumed); matching
// is on the cleaned path, so dot segments cannot reach an exempt subtree.
func TestExemptPaths(t *testing.T) {
	c := openClient(t, shared.URL)
	h := &counting{}
	mw := httplimit.New(limiterFor(t, c, 2, time.Minute),
		httplimit.WithExempt("/healthz", "/static/"),
		httplimit.WithSkip(func(r *http.Request) bool { return r.Header.Get("X-Internal") == "yes" }))
	srv := serve(t, mw(h))
	for i := 0; i < 5; i++ {
		for _, p := range []string{"/healthz", "/static/app.css", "/static/", "/"} {
			if p == "/" {
				r := get(t, srv.URL, p, "X-Internal", "yes")
				expectStatus(t, r, 200)
				expect(t, r, "RateLimit-Limit", "")
				continue
			}
			r := get(t, srv.URL, p)
			expectStatus(t, r, 200)
			expect(t, r, "RateLimit-Limit", "")
			expect(t, r, "RateLimit", "")
		}
	}
	r := get(t, srv.URL, "/")
	expectStatus(t, r, 200)
	expect(t, r, "RateLimit-Remaining", "1") // 20 exempt requests consumed nothing
	r = get(t, srv.URL, "/static")           // not the subtree "/static/"
	expectStatus(t, r, 200)
	expect(t, r, "RateLimit-Remaining", "0")
	for _, p := range []string{"/healthzz", "/healthz/x"} {
		r = get(t, srv.URL, p)
		expectStatus(t, r, http.StatusTooManyRequests)
	}
	if n := h.n.Load(); n != 22 {
		t.Errorf("handler ran %d times, want 22", n)
	}
}

// Routes: each route's limiter and its own count; the longest pattern wins;
// one limiter serving two routes gives each its own budget.
func TestPerRouteLimits(t *testing.T) {
	c := openClient(t, shared.URL)
	def := limiterFor(t, c, 5, time.Minute)
	login := limiterSpec(t, c, "2/minute; 5/hour", "-login")
	api := limiterSpec(t, c, "3/minute", "-api")
	strict := limiterSpec(t, c, "1/minute", "-strict")
	h := &counting{}
	mw := httplimit.New(def,
		httplimit.WithRoute("/login", login),
		httplimit.WithRoute("/api/", api),
		httplimit.WithRoute("/admin/", api),
		httplimit.WithRoute("/api/strict/", strict))
	srv := serve(t, mw(h))

	// The spec's two limits: the policy lists both, the deciding one is the
	// per-minute one (2 < 5). The key is full again only when the hour's
	// entries have left, but the reset speaks of the deciding limit: capped
	// at its own window, 60 s.
	loginPolicy := `"/login-2-per-60s";q=2;w=60, "/login-5-per-3600s";q=5;w=3600`
	for i, want := range []int{200, 200, 429} {
		r := get(t, srv.URL, "/login")
		expectStatus(t, r, want)
		expect(t, r, "RateLimit-Limit", "2")
		expect(t, r, "RateLimit-Policy", loginPolicy)
		if want == 200 {
			expect(t, r, "RateLimit-Remaining", strconv.Itoa(1-i))
			expect(t, r, "RateLimit-Reset", "60")
			expect(t, r, "RateLimit", fmt.Sprintf(`"/login-2-per-60s";r=%d;t=60`, 1-i))
		} else {
			secondsBetween(t, r, "Retry-After", 59, 60)
		}
	}
	r := get(t, srv.URL, "/")
	expectStatus(t, r, 200)
	expect(t, r, "RateLimit-Limit", "5")
	expect(t, r, "RateLimit-Remaining", "4") // /login's requests are not the default route's
	for i, p := range []string{"/api/a", "/api/b", "/api/", "/api/c"} {
		r := get(t, srv.URL, p)
		if i < 3 {
			expectStatus(t, r, 200)
			expect(t, r, "RateLimit-Remaining", strconv.Itoa(2-i))
		} else {
			expectStatus(t, r, 429)
		}
		expect(t, r, "RateLimit-Limit", "3")
	}
	r = get(t, srv.URL, "/admin/x") // the same limiter: the same budget per key
	expectStatus(t, r, 429)
	expect(t, r, "RateLimit", `"/admin/";r=0;t=60`)
	r = get(t, srv.URL, "/api/strict/x") // longest pattern wins
	expectStatus(t, r, 200)
	expect(t, r, "RateLimit-Limit", "1")
	r = get(t, srv.URL, "/api") // not below "/api/": the default limiter
	expectStatus(t, r, 200)
	expect(t, r, "RateLimit-Limit", "5")
	expect(t, r, "RateLimit-Remaining", "3")

	// No default limiter: only the routes are limited.
	only := serve(t, httplimit.New(nil, httplimit.WithRoute("/x", limiterSpec(t, c, "1/minute", "-only")))(h))
	for i := 0; i < 3; i++ {
		r := get(t, only.URL, "/free")
		expectStatus(t, r, 200)
		expect(t, r, "RateLimit-Limit", "")
	}
	expectStatus(t, get(t, only.URL, "/x"), 200)
	expectStatus(t, get(t, only.URL, "/x"), 429)
}

// X-Forwarded-For is believed only from trusted proxies; the client is the
// rightmost address that is not a trusted proxy.
func TestTrustedProxies(t *testing.T) {
	c := openClient(t, shared.URL)
	h := &counting{}

	// Untrusted peer (the test's own 127.0.0.1): every claim is ignored, one key.
	direct := serve(t, httplimit.New(limiterSpec(t, c, "1/minute", "-direct"))(h))
	expectStatus(t, get(t, direct.URL, "/", "X-Forwarded-For", "203.0.113.1"), 200)
	expectStatus(t, get(t, direct.URL, "/", "X-Forwarded-For", "203.0.113.2"), 429)
	expectStatus(t, get(t, direct.URL, "/"), 429)

	// The peer is a trusted proxy.
	proxies, err := httplimit.ParseTrustedProxies("127.0.0.1", "10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	behind := serve(t, httplimit.New(limiterSpec(t, c, "1/minute", "-behind"), httplimit.WithTrustedProxies(proxies...))(h))
	steps := []struct {
		xff  []string // header lines
		want int
	}{
		{[]string{"203.0.113.7"}, 200},
		{[]string{"203.0.113.7"}, 429},
		{[]string{"203.0.113.8"}, 200},
		{[]string{"198.51.100.9, 203.0.113.7"}, 429},                // rightmost untrusted: .7
		{[]string{"203.0.113.9, 10.1.2.3"}, 200},                    // 10.1.2.3 is a trusted hop: .9
		{[]string{"203.0.113.9", "10.9.9.9"}, 429},                  // two header lines, same client .9
		{[]string{" 2001:db8::1 "}, 200},                            // IPv6
		{[]string{"[2001:db8::1]:4711"}, 429},                       // with a port: the same address
		{[]string{"::ffff:203.0.113.8"}, 429},                       // IPv4-mapped is the IPv4 address
		{nil, 200},                                                  // no header: the proxy itself
		{[]string{"not-an-ip"}, 429},                                // garbage: the trusted hop (127.0.0.1)
		{[]string{"192.0.2.50, garbage, 10.0.0.1"}, 200},            // stops at garbage: 10.0.0.1, a new key
		{[]string{"10.0.0.1, 127.0.0.1"}, 429},                      // all trusted: the leftmost, 10.0.0.1
		{[]string{"198.51.100.77, 10.0.0.2, 127.0.0.1"}, 200},       // .77
		{[]string{"evil, 198.51.100.77, 10.0.0.2, 127.0.0.1"}, 429}, // left of the client is ignored
	}
	for i, s := range steps {
		var hs []string
		for _, v := range s.xff {
			hs = append(hs, "X-Forwarded-For", v)
		}
		r := get(t, behind.URL, "/", hs...)
		if r.status != s.want {
			t.Errorf("step %d, X-Forwarded-For %q: status %d, want %d", i, s.xff, r.status, s.want)
		}
	}
}

// ClientIP on its own, for peers a loopback test server cannot have.
func TestClientIP(t *testing.T) {
	trusted, err := httplimit.ParseTrustedProxies("10.0.0.0/8", "fd00::/8", "::ffff:192.168.0.0/112")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remote, xff, want string
	}{
		{"192.0.2.1:1234", "203.0.113.1", "192.0.2.1"},
		{"10.0.0.5:80", "203.0.113.1", "203.0.113.1"},
		{"[fd00::1]:443", "2001:db8::7", "2001:db8::7"},
		{"[fd00::1%eth0]:443", "", "fd00::1"},
		{"[::ffff:10.1.1.1]:80", "203.0.113.2", "203.0.113.2"}, // a mapped peer is its IPv4 address
		{"192.168.3.4:80", "203.0.113.3", "203.0.113.3"},       // a mapped prefix is its IPv4 prefix
		{"[2001:db8::9]:80", "203.0.113.1", "2001:db8::9"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		ip, err := httplimit.ClientIP(r, trusted)
		if err != nil || ip.String() != tc.want {
			t.Errorf("RemoteAddr %s, XFF %q: %v %v, want %s", tc.remote, tc.xff, ip, err, tc.want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "@"
	if _, err := httplimit.ClientIP(r, trusted); !errors.Is(err, httplimit.ErrNoKey) {
		t.Errorf("RemoteAddr %q: %v, want ErrNoKey", r.RemoteAddr, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "nope", "1.2.3"} {
		if _, err := httplimit.ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted", bad)
		}
	}
}

// API keys: one budget per key, 400 without one, the secret never in a Redis
// key name; with a fallback, requests without a key are limited by IP.
func TestKeyByHeader(t *testing.T) {
	c := openClient(t, shared.URL)
	h := &counting{}
	pfx := prefix(t, "-apikey")
	l, err := c.Limiter("1/minute", polylimit.WithPrefix(pfx))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := serve(t, httplimit.New(l, httplimit.WithKeyFunc(httplimit.KeyByHeader("X-API-Key", nil)))(h))
	r := get(t, srv.URL, "/")
	expectStatus(t, r, http.StatusBadRequest)
	expect(t, r, "RateLimit-Limit", "")
	expectStatus(t, get(t, srv.URL, "/", "X-API-Key", "s3cret-A"), 200)
	expectStatus(t, get(t, srv.URL, "/", "X-API-Key", "s3cret-A"), 429)
	expectStatus(t, get(t, srv.URL, "/", "X-API-Key", "s3cret-B"), 200)
	keys, err := shared.Keys("*" + pfx + "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Errorf("Redis keys %q, want 2 (one per API key)", keys)
	}
	for _, k := range keys {
		if strings.Contains(k, "s3cret") {
			t.Errorf("Redis key %q contains the API key", k)
		}
	}

	fb := serve(t, httplimit.New(limiterSpec(t, c, "1/minute", "-fallback"),
		httplimit.WithKeyFunc(httplimit.KeyByHeader("X-API-Key", httplimit.KeyByIP())))(h))
	expectStatus(t, get(t, fb.URL, "/"), 200)
	expectStatus(t, get(t, fb.URL, "/"), 429)
	expectStatus(t, get(t, fb.URL, "/", "X-API-Key", "k"), 200)
}

// The request's context deadline (set by an outer handler) and WithTimeout
// bound the check: with Redis frozen (SIGSTOP), the answer is the documented
// 503 long before the client's command timeout.
func TestDeadline(t *testing.T) {
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := openClient(t, srv.URL, polylimit.WithCommandTimeout(10*time.Second))
	l := limiterFor(t, c, 100, time.Minute)
	h := &counting{}
	withDeadline := func(d time.Duration, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	var seen atomic.Value
	custom := func(w http.ResponseWriter, r *http.Request, err error) {
		seen.Store(err)
		httplimit.DefaultErrorHandler(w, r, err)
	}
	byRequest := serve(t, withDeadline(200*time.Millisecond, httplimit.New(l, httplimit.WithErrorHandler(custom))(h)))
	byOption := serve(t, httplimit.New(l, httplimit.WithTimeout(200*time.Millisecond))(h))

	expectStatus(t, get(t, byRequest.URL, "/"), 200) // connected, script loaded
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Signal(syscall.SIGCONT)
		}
	}()
	for _, base := range []string{byRequest.URL, byOption.URL} {
		start := time.Now()
		r := get(t, base, "/")
		took := time.Since(start)
		expectStatus(t, r, http.StatusServiceUnavailable)
		if r.body != polylimit.HTTPBodyUnavailable {
			t.Errorf("body %q", r.body)
		}
		expect(t, r, "RateLimit-Limit", "")
		if took < 200*time.Millisecond || took > 5*time.Second {
			t.Errorf("answered after %v; the deadline is 200ms, the command timeout 10s", took)
		}
	}
	err, _ = seen.Load().(error)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, polylimit.ErrTimeout) {
		t.Errorf("error handler got %v, want a *polylimit.ContextError for the deadline", err)
	}
	srv.Signal(syscall.SIGCONT)
	resumed = true
	expectStatus(t, get(t, byOption.URL, "/"), 200)
	if n := h.n.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2", n)
	}
}

// Redis unreachable: the limiter's failure policy decides (FailOpen admits,
// FailClosed denies), FailError is the documented 503; a closed limiter too.
func TestFailurePolicy(t *testing.T) {
	dead, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	dead.Stop() // its port was free a moment ago and nothing listens on it now
	c := openClient(t, dead.URL, polylimit.WithConnectTimeout(200*time.Millisecond))
	h := &counting{}
	for _, tc := range []struct {
		policy polylimit.FailurePolicy
		status int
		body   string
	}{
		{polylimit.FailError, 503, polylimit.HTTPBodyUnavailable},
		{polylimit.FailOpen, 200, "ok\n"},
		{polylimit.FailClosed, 429, "Too Many Requests\n"},
	} {
		l := limiterFor(t, c, 5, time.Minute, polylimit.WithFailurePolicy(tc.policy))
		srv := serve(t, httplimit.New(l)(h))
		r := get(t, srv.URL, "/")
		if r.status != tc.status || r.body != tc.body {
			t.Errorf("%v: %d %q, want %d %q", tc.policy, r.status, r.body, tc.status, tc.body)
		}
		if tc.status != 503 && r.header.Get("RateLimit-Limit") == "" {
			t.Errorf("%v: a degraded decision still has headers; got %v", tc.policy, r.header)
		}
	}
	closing := openClient(t, shared.URL)
	l := limiterFor(t, closing, 5, time.Minute)
	srv := serve(t, httplimit.New(l)(h))
	closing.Close() // the policy keeps its limiters; their client's Close stops them
	r := get(t, srv.URL, "/")
	expectStatus(t, r, 503)
}

// The decision reaches the handler through the request's context.
func TestFromContext(t *testing.T) {
	c := openClient(t, shared.URL)
	srv := serve(t, httplimit.New(limiterFor(t, c, 4, time.Minute))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := httplimit.FromContext(r.Context())
		fmt.Fprintf(w, "%v %d/%d", ok, res.Remaining, res.Limit)
	})))
	if r := get(t, srv.URL, "/"); r.body != "true 3/4" {
		t.Errorf("body %q", r.body)
	}
	if _, ok := httplimit.FromContext(context.Background()); ok {
		t.Error("FromContext of an unchecked context")
	}
}

// Two servers, each with its own Client, share one limit exactly under
// concurrent load: 10 of 30 requests are admitted, whichever server gets them.
func TestTwoServersShareOneLimit(t *testing.T) {
	const limit, requests = 10, 30
	var servers []*httptest.Server
	for i := 0; i < 2; i++ {
		c := openClient(t, shared.URL, polylimit.WithName(fmt.Sprintf("server%d", i)))
		servers = append(servers, serve(t, httplimit.New(limiterFor(t, c, limit, time.Minute))(&counting{})))
	}
	var ok, denied atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < requests; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := fetch(servers[i%2].URL, "/")
			if err != nil {
				t.Error(err)
				return
			}
			switch r.status {
			case 200:
				ok.Add(1)
			case 429:
				denied.Add(1)
				if r.header.Get("Retry-After") == "" {
					t.Errorf("429 without Retry-After")
				}
			default:
				t.Errorf("status %d", r.status)
			}
		}(i)
	}
	wg.Wait()
	if ok.Load() != limit || denied.Load() != requests-limit {
		t.Errorf("admitted %d, denied %d; want exactly %d and %d", ok.Load(), denied.Load(), limit, requests-limit)
	}
}

// A denied handler of one's own gets the headers already set and the
// decision; an error handler may serve the request anyway (fail open on a
// missing key here).
func TestCustomHandlers(t *testing.T) {
	c := openClient(t, shared.URL)
	h := &counting{}
	var next http.Handler = h
	mw := httplimit.New(limiterFor(t, c, 1, time.Minute),
		httplimit.WithKeyFunc(httplimit.KeyByHeader("X-User", nil)),
		httplimit.WithDeniedHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res, _ := httplimit.FromContext(r.Context())
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, `{"retry_after_ms":%d,"had_retry_after":%t}`, res.RetryAfter.Milliseconds(),
				w.Header().Get("Retry-After") != "")
		})),
		httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, httplimit.ErrNoKey) {
				next.ServeHTTP(w, r)
				return
			}
			httplimit.DefaultErrorHandler(w, r, err)
		}))
	srv := serve(t, mw(h))
	expectStatus(t, get(t, srv.URL, "/", "X-User", "u1"), 200)
	r := get(t, srv.URL, "/", "X-User", "u1")
	expectStatus(t, r, 429)
	if r.header.Get("Content-Type") != "application/json" || !strings.Contains(r.body, `"had_retry_after":true`) ||
		strings.Contains(r.body, `"retry_after_ms":0,`) {
		t.Errorf("custom 429: %v %s", r.header, r.body)
	}
	for i := 0; i < 3; i++ {
		expectStatus(t, get(t, srv.URL, "/"), 200) // no key: served unlimited by the error handler
	}
	if n := h.n.Load(); n != 4 {
		t.Errorf("handler ran %d times, want 4", n)
	}
}

// missingKeyServer serves h behind a 2-per-minute limit keyed by key, with
// opts, and returns its URL.
func missingKeyServer(t *testing.T, key httplimit.KeyFunc, h http.Handler, opts ...httplimit.Option) string {
	t.Helper()
	c := openClient(t, shared.URL)
	l := limiterFor(t, c, 2, time.Minute)
	return serve(t, httplimit.New(l, append([]httplimit.Option{httplimit.WithKeyFunc(key)}, opts...)...)(h)).URL
}

// The rule every language shares (docs/integrations/README.md): by default a
// request without a key is refused, 401 for a missing credential and 400
// otherwise, without reaching the handler or counting; with the same key it
// is limited as usual.
func TestMissingKeyRejectedByDefault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    httplimit.KeyFunc
		header string
		status int
		body   string
	}{
		{"api key", httplimit.KeyByAPIKey("X-API-Key"), "X-API-Key", http.StatusUnauthorized,
			"no credential to rate-limit the request by\n"},
		{"header", httplimit.KeyByHeader("X-Tenant", nil), "X-Tenant", http.StatusBadRequest,
			"no rate-limit key in the request\n"},
		{"own credential", func(r *http.Request) (string, error) {
			if tok := r.Header.Get("X-Token"); tok != "" {
				return "token:" + tok, nil
			}
			return "", fmt.Errorf("%w: no X-Token", httplimit.ErrNoCredential)
		}, "X-Token", http.StatusBadRequest, "no rate-limit key in the request\n"}, // "app" keys are no credential
		{"own key", func(r *http.Request) (string, error) {
			return "", httplimit.ErrNoKey
		}, "", http.StatusBadRequest, "no rate-limit key in the request\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &counting{}
			url := missingKeyServer(t, tc.key, h)
			for i := 0; i < 3; i++ { // more than the limit: refused every time, never a 429
				r := get(t, url, "/")
				expectStatus(t, r, tc.status)
				if r.body != tc.body {
					t.Errorf("body %q, want %q", r.body, tc.body)
				}
				expect(t, r, "RateLimit-Limit", "")
				expect(t, r, "Retry-After", "")
			}
			if n := h.n.Load(); n != 0 {
				t.Errorf("the handler ran %d times for requests without a key", n)
			}
			if tc.header != "" {
				for i, want := range []int{200, 200, 429} {
					if r := get(t, url, "/", tc.header, "v1"); r.status != want {
						t.Errorf("request %d with %s: status %d, want %d", i+1, tc.header, r.status, want)
					}
				}
			}
		})
	}
}

// WithMissingKey(MissingKeySkip): requests without a key reach the handler
// unlimited and without headers; requests with one are still limited.
func TestMissingKeySkip(t *testing.T) {
	for n, key := range []httplimit.KeyFunc{httplimit.KeyByAPIKey("X-API-Key"), httplimit.KeyByHeader("X-API-Key", nil)} {
		h := &counting{}
		url := missingKeyServer(t, key, h, httplimit.WithMissingKey(httplimit.MissingKeySkip))
		for i := 0; i < 5; i++ {
			r := get(t, url, "/")
			expectStatus(t, r, 200)
			expect(t, r, "RateLimit-Limit", "")
		}
		if n := h.n.Load(); n != 5 {
			t.Errorf("the handler ran %d times, want 5", n)
		}
		for i, want := range []int{200, 200, 429} {
			if r := get(t, url, "/", "X-API-Key", "k"+strconv.Itoa(n)); r.status != want {
				t.Errorf("request %d with a key: status %d, want %d", i+1, r.status, want)
			}
		}
	}
	// Only a missing key is skipped: a failing limiter still answers 503.
	c := openClient(t, shared.URL)
	l := limiterFor(t, c, 2, time.Minute)
	l.Close()
	url := serve(t, httplimit.New(l, httplimit.WithKeyFunc(httplimit.KeyByAPIKey("X-API-Key")),
		httplimit.WithMissingKey(httplimit.MissingKeySkip))(&counting{})).URL
	expectStatus(t, get(t, url, "/", "X-API-Key", "k"), http.StatusServiceUnavailable)
}

func TestMissingKeyNames(t *testing.T) {
	if httplimit.MissingKeyReject.String() != "reject" || httplimit.MissingKeySkip.String() != "skip" {
		t.Errorf("names %q, %q; want reject, skip", httplimit.MissingKeyReject, httplimit.MissingKeySkip)
	}
	var zero httplimit.MissingKey // what New uses when WithMissingKey is not given
	if zero != httplimit.MissingKeyReject {
		t.Errorf("the zero MissingKey is %v, want reject", zero)
	}
	if !errors.Is(httplimit.ErrNoCredential, httplimit.ErrNoKey) ||
		errors.Is(httplimit.ErrNoKey, httplimit.ErrNoCredential) {
		t.Error("ErrNoCredential must be ErrNoKey, not the other way round")
	}
}

// loginHandler answers 200 to ?password=right, else 401 (with WriteHeader),
// and 200 without writing anything to ?password=silent.
func loginHandler(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Query().Get("password") {
	case "right":
		io.WriteString(w, "ok\n")
	case "silent":
	default:
		http.Error(w, "wrong password", http.StatusUnauthorized)
	}
}

// WithCountWhen: only failed logins count, successes are refunded; the check
// still comes first, so a key over its limit is refused even with the right
// password.
func TestCountWhen(t *testing.T) {
	c := openClient(t, shared.URL)
	failures := func(status int) bool { return status >= 400 }
	mw := httplimit.New(limiterFor(t, c, 2, time.Minute), httplimit.WithCountWhen(failures),
		httplimit.WithKeyFunc(httplimit.KeyByHeader("X-User", nil)))
	srv := serve(t, mw(http.HandlerFunc(loginHandler)))
	login := func(user, password string) int {
		return get(t, srv.URL, "/login?password="+password, "X-User", user).status
	}
	for i := 0; i < 4; i++ {
		if s := login("ann", "right"); s != 200 {
			t.Fatalf("success %d: status %d, want 200 (refunded)", i, s)
		}
		if s := login("ann", "silent"); s != 200 {
			t.Fatalf("silent success %d: status %d, want 200 (refunded)", i, s)
		}
	}
	var got []int
	for i := 0; i < 3; i++ {
		got = append(got, login("ann", "wrong"))
	}
	if fmt.Sprint(got) != "[401 401 429]" {
		t.Errorf("failures: %v, want [401 401 429]", got)
	}
	if s := login("ann", "right"); s != 429 {
		t.Errorf("right password over the limit: %d, want 429", s)
	}
	if s := login("bob", "wrong"); s != 401 {
		t.Errorf("another user: %d, want 401", s)
	}
	// The missing-key rule is unchanged.
	expectStatus(t, get(t, srv.URL, "/login?password=right"), 400)
}

// The pattern of WithCountWhen by hand, with the limiter's API, as
// docs/integrations/go.md shows it for code that does not use the middleware.
func TestCountWhenByHand(t *testing.T) {
	c := openClient(t, shared.URL)
	limiter := limiterFor(t, c, 2, time.Minute)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, key := r.Context(), r.Header.Get("X-User")
		res, err := limiter.Allow(ctx, key)
		if err != nil || !res.Allowed {
			http.Error(w, "no", http.StatusTooManyRequests)
			return
		}
		status := http.StatusOK
		if r.URL.Query().Get("password") != "right" {
			status = http.StatusUnauthorized
		}
		w.WriteHeader(status)
		if status < 400 && !res.Degraded {
			limiter.Refund(context.Background(), key, 1) // a success: give the unit back
		}
	}))
	var got []int
	for _, pw := range []string{"right", "right", "right", "wrong", "wrong", "wrong", "right"} {
		got = append(got, get(t, srv.URL, "/?password="+pw, "X-User", "ann").status)
	}
	if fmt.Sprint(got) != "[200 200 200 401 401 429 429]" {
		t.Errorf("got %v", got)
	}
}
