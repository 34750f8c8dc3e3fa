package promcollector_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
	"github.com/polylimit/polylimit/bindings/go/internal/redistest"
	"github.com/polylimit/polylimit/bindings/go/promcollector"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var shared *redistest.Server

func TestMain(m *testing.M) {
	srv, err := redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "promcollector tests need redis-server:", err)
		os.Exit(1)
	}
	shared = srv
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

func open(t *testing.T, url string, opts ...polylimit.Option) *polylimit.Client {
	t.Helper()
	c, err := polylimit.Open(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// traffic makes admitted decisions and denials on a client of its own.
func traffic(t *testing.T, c *polylimit.Client, limit, checks int) {
	t.Helper()
	l, err := c.LimiterFor(limit, time.Minute, polylimit.WithPrefix(t.Name()+"-"+c.Name()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < checks; i++ {
		if _, err := l.Allow(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
	}
}

func parse(text string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(strings.NewReader(text))
}

// value is the sample of family name for client (a counter or a gauge).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name, client string) float64 {
	t.Helper()
	mf, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "client" && lp.GetValue() == client {
				if m.Counter != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("%s has no sample for client %q", name, client)
	return 0
}

func histogram(t *testing.T, fams map[string]*dto.MetricFamily, client string) *dto.Histogram {
	t.Helper()
	for _, m := range fams["polylimit_check_latency_seconds"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "client" && lp.GetValue() == client {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("no latency histogram for client %q", client)
	return nil
}

// The collector in a registry, served by promhttp on a real socket and
// scraped over HTTP: every counter of both clients, labelled by name, equal
// to their Stats; the same families, help texts and types as the library's
// own page.
func TestScrape(t *testing.T) {
	redis := open(t, shared.URL, polylimit.WithName("redis-a"))
	mem := open(t, "memory://", polylimit.WithName("memory-b"))
	traffic(t, redis, 3, 5) // 3 admitted, 2 denied
	traffic(t, mem, 1, 4)   // 1 admitted, 3 denied

	col, err := promcollector.New(redis, mem)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(col); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()

	scrape := func() (int, string) {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("Accept", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	status, page := scrape()
	if status != 200 {
		t.Fatalf("scrape: %d\n%s", status, page)
	}
	fams, err := parse(page)
	if err != nil {
		t.Fatalf("the scraped page does not parse: %v\n%s", err, page)
	}

	for _, c := range []*polylimit.Client{redis, mem} {
		s, err := c.Stats()
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]uint64{
			"polylimit_checks_total":      s.Checks,
			"polylimit_admitted_total":    s.Admitted,
			"polylimit_denied_total":      s.Denied,
			"polylimit_errors_total":      s.Errors,
			"polylimit_round_trips_total": s.RoundTrips,
			"polylimit_evicting_nodes":    s.EvictingNodes,
		} {
			if got := value(t, fams, name, c.Name()); got != float64(want) {
				t.Errorf("%s{client=%q} = %v, want %d", name, c.Name(), got, want)
			}
		}
		h := histogram(t, fams, c.Name())
		if h.GetSampleCount() != s.LatencyCount || len(h.GetBucket()) == 0 {
			t.Errorf("latency histogram of %s: %d samples, want %d", c.Name(), h.GetSampleCount(), s.LatencyCount)
		}
	}
	if got := value(t, fams, "polylimit_admitted_total", "redis-a"); got != 3 {
		t.Errorf("redis-a admitted %v, want 3", got)
	}
	if got := value(t, fams, "polylimit_denied_total", "memory-b"); got != 3 {
		t.Errorf("memory-b denied %v, want 3", got)
	}
	if value(t, fams, "polylimit_round_trips_total", "redis-a") == 0 {
		t.Error("redis-a made no round trip")
	}

	// The library's page, parsed the same way: same families, help and types.
	text, err := polylimit.PrometheusText(redis, mem)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(lib) != len(fams) {
		t.Errorf("%d families scraped, the library has %d", len(fams), len(lib))
	}
	for name, mf := range lib {
		got, ok := fams[name]
		if !ok {
			t.Errorf("family %s not scraped", name)
			continue
		}
		if got.GetHelp() != mf.GetHelp() || got.GetType() != mf.GetType() || len(got.GetMetric()) != 2 {
			t.Errorf("%s: help %q type %v, %d samples; the library: %q %v", name, got.GetHelp(), got.GetType(),
				len(got.GetMetric()), mf.GetHelp(), mf.GetType())
		}
	}

	// A scrape while a client is closed is an error, not a silent gap.
	mem.Close()
	if status, page := scrape(); status != http.StatusInternalServerError || !strings.Contains(page, "closed") {
		t.Errorf("scrape with a closed client: %d\n%s", status, page)
	}
	if _, err := reg.Gather(); err == nil {
		t.Error("Gather with a closed client: no error")
	}
}

// Two clients compose into one valid page with PrometheusText; their own
// pages, concatenated, do not parse (HELP and TYPE repeat): the bug
// PrometheusText fixes.
func TestTwoClientsCompose(t *testing.T) {
	a := open(t, shared.URL, polylimit.WithName("a"))
	b := open(t, "memory://", polylimit.WithName("b"))
	traffic(t, a, 2, 3)
	traffic(t, b, 5, 1)

	page, err := polylimit.PrometheusText(a, b)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := parse(page)
	if err != nil {
		t.Fatalf("PrometheusText(a, b) does not parse: %v\n%s", err, page)
	}
	if value(t, fams, "polylimit_checks_total", "a") != 3 || value(t, fams, "polylimit_checks_total", "b") != 1 {
		t.Errorf("checks: a %v, b %v; want 3 and 1", value(t, fams, "polylimit_checks_total", "a"),
			value(t, fams, "polylimit_checks_total", "b"))
	}
	if histogram(t, fams, "a").GetSampleCount() != 3 {
		t.Error("latency histogram of a")
	}

	pa, err := a.StatsPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.StatsPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pa, `polylimit_checks_total{client="a"} 3`) {
		t.Errorf("a's own page is not labelled by its name:\n%s", pa)
	}
	// Each page alone is valid...
	if _, err := parse(pa); err != nil {
		t.Fatalf("a's own page: %v", err)
	}
	// ...but two of them, one after the other, are not one page.
	if _, err := parse(pa + pb); err == nil || !strings.Contains(err.Error(), "second") {
		t.Errorf("concatenated single exports parsed (err %v); they repeat HELP and TYPE", err)
	}
}

// The library refuses what would not make one valid page.
func TestNewRefuses(t *testing.T) {
	named := open(t, "memory://", polylimit.WithName("x"))
	unnamed := open(t, "memory://")
	for name, clients := range map[string][]*polylimit.Client{
		"none":     nil,
		"unnamed":  {named, unnamed},
		"repeated": {named, open(t, "memory://", polylimit.WithName("x"))},
	} {
		if _, err := promcollector.New(clients...); !errors.Is(err, polylimit.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	// One unnamed client: a valid collector whose samples have no label.
	col, err := promcollector.New(unnamed)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range fams {
		if len(mf.GetMetric()) != 1 || len(mf.GetMetric()[0].GetLabel()) != 0 {
			t.Errorf("%s: %v", mf.GetName(), mf.GetMetric())
		}
	}
	// A second collector of the same metrics is refused by the registry:
	// several clients belong in one collector.
	other, err := promcollector.New(named)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(other); err == nil {
		t.Error("a registry took two collectors of the same metrics")
	}
}

// The HTTP middleware's per-rule counters: one series per rule and outcome,
// never a key (an API key given in a request appears nowhere on the page).
func TestHTTPPolicyMetrics(t *testing.T) {
	c := open(t, shared.URL, polylimit.WithName("web"))
	l, err := c.LimiterFor(2, time.Minute, polylimit.WithPrefix(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, err := httplimit.FromDocument(`{"rules": [{"name": "api", "limiter": 0, "key": "api_key"}]}`, l)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }))
	const secret = "sk-metrics-secret-1234"
	for i, key := range []string{secret, secret, secret, ""} {
		r := httptest.NewRequest("GET", "/x", nil)
		if key != "" {
			r.Header.Set("X-API-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if want := []int{200, 200, 429, 401}[i]; w.Code != want {
			t.Fatalf("request %d: status %d, want %d", i, w.Code, want)
		}
	}
	col, err := promcollector.NewWithPolicies([]*polylimit.Client{c}, m.Policy())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	for _, want := range []string{
		`polylimit_http_requests_total{outcome="allowed",rule="api"} 2`,
		`polylimit_http_requests_total{outcome="denied",rule="api"} 1`,
		`polylimit_http_requests_total{outcome="missing_key",rule="api"} 1`,
		`polylimit_checks_total{client="web"} 3`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("no %s in\n%s", want, page)
		}
	}
	if strings.Contains(page, secret) || strings.Contains(page, "apikey:") {
		t.Errorf("a key on the metrics page:\n%s", page)
	}
}
