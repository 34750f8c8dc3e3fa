package httplimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
)

// plansDoc is a TOML policy: plans free and pro, a tenants table, and one
// rule keyed by tenant whose limit is the tenant's plan's. extra is added
// before the rules (a resolver section).
func plansDoc(t *testing.T, free, extra string) string {
	return `# plans
version = 1
prefix = "` + prefix(t, "") + `"
default_plan = "free"
` + extra + `
[plans.free]
api = "` + free + `"
[plans.pro]
api = "100/minute"

[tenants]
acme = "pro"
globex = "free"

[[rules]]
name = "api"
paths = ["/api/*"]
key = "tenant"
limit = "plan"
`
}

// liveServer serves a live policy with the tenant from X-Tenant.
func liveServer(t *testing.T, live *polylimit.LivePolicy) (*httptest.Server, *counting) {
	t.Helper()
	h := &counting{}
	m := httplimit.FromLive(live).With(
		httplimit.WithTenant(func(r *http.Request) string { return r.Header.Get("X-Tenant") }))
	return serve(t, m.Handler(h)), h
}

// admitted sends n requests for tenant and counts the 200s (every other
// answer must be 429).
func admitted(t *testing.T, base, tenant string, n int) int {
	t.Helper()
	ok := 0
	for i := 0; i < n; i++ {
		r := get(t, base, "/api/x", "X-Tenant", tenant)
		switch r.status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("status %d (%q)", r.status, r.body)
		}
	}
	return ok
}

func newLive(t *testing.T, doc string, opts ...polylimit.LiveOption) *polylimit.LivePolicy {
	t.Helper()
	c := openClient(t, shared.URL)
	live, err := polylimit.NewLivePolicy(c, doc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	return live
}

// Plans from the document's tenants table; a reload raises free's limit and
// keeps what the tenant used; a broken document is refused, naming its
// line, and the old limits stay.
func TestLivePlansReload(t *testing.T) {
	live := newLive(t, plansDoc(t, "10/minute", ""))
	srv, _ := liveServer(t, live)
	if got := admitted(t, srv.URL, "globex", 15); got != 10 {
		t.Errorf("free: %d admitted, want 10", got)
	}
	if got := admitted(t, srv.URL, "acme", 110); got != 100 {
		t.Errorf("pro: %d admitted, want 100", got)
	}
	if g := live.Generation(); g != 1 {
		t.Errorf("generation %d, want 1", g)
	}
	if err := live.Reload(plansDoc(t, "20/minute", "")); err != nil {
		t.Fatal(err)
	}
	if g := live.Generation(); g != 2 {
		t.Errorf("generation %d after a reload, want 2", g)
	}
	if got := admitted(t, srv.URL, "globex", 15); got != 10 {
		t.Errorf("free after the reload to 20/minute: %d more admitted, want 10", got)
	}
	broken := strings.Replace(plansDoc(t, "50/minute", ""), `limit = "plan"`, `limit = "plan:nope"`, 1)
	err := live.Reload(broken)
	var pe *polylimit.Error
	if err == nil || !errors.As(err, &pe) || pe.Code != polylimit.ErrInvalidArgument || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("a broken document: %v, want ErrInvalidArgument naming the line", err)
	}
	t.Logf("refused: %v", err)
	if g := live.Generation(); g != 2 {
		t.Errorf("generation %d after a refused reload, want 2", g)
	}
	if got := admitted(t, srv.URL, "globex", 3); got != 0 {
		t.Errorf("free after a refused reload: %d admitted, want 0 (the old 20/minute, used up)", got)
	}
	// The fixed policy of FromDocument has no client for the document's limits.
	if _, err := httplimit.FromDocument(plansDoc(t, "10/minute", "")); err == nil || !strings.Contains(err.Error(), "client") {
		t.Errorf("FromDocument of a document with limits of its own: %v, want an error: its limits need a client", err)
	}
	metrics, err := live.MetricsPrometheus()
	if err != nil || !strings.Contains(metrics, "polylimit_http_policy_reloads_total") {
		t.Errorf("metrics: %v\n%s", err, metrics)
	}
}

// A resolver that fails, panics or is slower than the document's deadline
// gives the default plan, and the slow one does not hold the request past
// the deadline; a resolver's answer is cached.
func TestLiveResolver(t *testing.T) {
	const timeout = 100 * time.Millisecond
	doc := plansDoc(t, "3/minute", "[resolver]\ntimeout_ms = 100\ncache_ttl_ms = 60000\ncache_size = 100\n")
	var mu sync.Mutex
	calls := map[string]int{}
	resolver := func(ctx context.Context, tenant string) (string, error) {
		mu.Lock()
		calls[tenant]++
		mu.Unlock()
		switch tenant {
		case "initech":
			return "pro", nil
		case "thrower":
			return "", errors.New("no such tenant")
		case "panicker":
			panic("resolver bug")
		case "sleeper":
			time.Sleep(time.Second) // ignores its context
			return "pro", nil
		}
		return "free", nil
	}
	live := newLive(t, doc, polylimit.WithPlanResolver(resolver))
	srv, _ := liveServer(t, live)
	if got := admitted(t, srv.URL, "initech", 110); got != 100 {
		t.Errorf("resolved to pro: %d admitted, want 100", got)
	}
	for _, tenant := range []string{"thrower", "panicker", "sleeper"} {
		start := time.Now()
		got := admitted(t, srv.URL, tenant, 5)
		per := time.Since(start) / 5
		if got != 3 {
			t.Errorf("%s: %d admitted, want 3 (the default plan)", tenant, got)
		}
		if per > timeout+300*time.Millisecond {
			t.Errorf("%s: %v per request, want about the deadline (%v) at most", tenant, per, timeout)
		}
		t.Logf("%s: %v per request", tenant, per)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["initech"] != 1 {
		t.Errorf("the resolver was called %d times for initech, want 1 (cached)", calls["initech"])
	}
	if calls["acme"] != 0 {
		t.Errorf("the resolver was called for a tenant of the table")
	}
	if plan, ok := live.CachedPlan("initech"); !ok || plan != "pro" {
		t.Errorf("CachedPlan(initech) = %q, %v", plan, ok)
	}
	if _, ok := live.CachedPlan("thrower"); ok {
		t.Errorf("a failed resolution was cached")
	}

	// A document with a resolver section and no resolver is refused.
	c := openClient(t, shared.URL)
	if l, err := polylimit.NewLivePolicy(c, doc); err == nil || !strings.Contains(err.Error(), "WithPlanResolver") {
		if l != nil {
			l.Close()
		}
		t.Errorf("no resolver for a document with a resolver section: %v", err)
	}
}

// A watched file rewritten (a new file renamed over it) is in force within
// a second; a broken one is refused and the old policy stays.
func TestLiveWatchedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.toml")
	write := func(doc string) {
		tmp := filepath.Join(dir, "policy.tmp")
		if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(plansDoc(t, "10/minute", ""))
	c := openClient(t, shared.URL)
	live, err := polylimit.OpenLivePolicy(c, path, polylimit.WithWatch(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	srv, _ := liveServer(t, live)
	if got := admitted(t, srv.URL, "globex", 12); got != 10 {
		t.Errorf("free: %d admitted, want 10", got)
	}
	waitGeneration := func(want uint64) time.Duration {
		start := time.Now()
		for live.Generation() < want && time.Since(start) < 2*time.Second {
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(start)
	}
	write(plansDoc(t, "20/minute", ""))
	if took := waitGeneration(2); live.Generation() != 2 || took > time.Second {
		t.Fatalf("generation %d after %v, want 2 within 1s", live.Generation(), took)
	}
	if got := admitted(t, srv.URL, "globex", 12); got != 10 {
		t.Errorf("free after the file's 20/minute: %d more admitted, want 10", got)
	}
	write("version = 1\n[[rules]]\nname = \"api\"\nlimit = \"ten per minute\"\n")
	start := time.Now()
	for live.LastError() == "" && time.Since(start) < 2*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if msg := live.LastError(); !strings.Contains(msg, "line ") {
		t.Errorf("a broken file: last error %q, want one naming the line", msg)
	}
	if g := live.Generation(); g != 2 {
		t.Errorf("generation %d after a broken file, want 2", g)
	}
	if got := admitted(t, srv.URL, "globex", 2); got != 0 {
		t.Errorf("free after a broken file: %d admitted, want 0", got)
	}
	if err := live.ReloadFile(); err == nil {
		t.Errorf("ReloadFile of a broken file: no error")
	}
}
