package httplimit_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
)

// The contract's golden vectors (tests/http/vectors.json), through this
// binding's public API: the policy made by httplimit.FromDocument, each
// request described as the middleware describes it (polylimit.HTTPRequest),
// and the policy's steps, answers, counts and refunds compared with the
// vectors'.

type vecDecision struct {
	Allowed      bool  `json:"allowed"`
	Shadowed     bool  `json:"shadowed"`
	Degraded     bool  `json:"degraded"`
	Limit        int   `json:"limit"`
	Remaining    int   `json:"remaining"`
	RetryAfterMS int64 `json:"retry_after_ms"`
	ResetAfterMS int64 `json:"reset_after_ms"`
}

func (d vecDecision) result() polylimit.Result {
	r := polylimit.Result{
		Allowed: d.Allowed, Shadowed: d.Shadowed, Degraded: d.Degraded, Limit: d.Limit, Remaining: d.Remaining,
		RetryAfter: time.Duration(d.RetryAfterMS) * time.Millisecond,
		ResetAfter: time.Duration(d.ResetAfterMS) * time.Millisecond,
	}
	if d.Allowed {
		r.Granted = 1
	}
	return r
}

type vecAnswer struct {
	Status  int         `json:"status"`
	Body    string      `json:"body"`
	Headers [][2]string `json:"headers"`
}

type vecRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Route   string            `json:"route"`
	Peer    string            `json:"peer"`
	Headers map[string]string `json:"headers"`
	User    string            `json:"user"`
	Tenant  string            `json:"tenant"`
	AppKey  *string           `json:"app_key"`
	Cost    int64             `json:"cost"`
}

type vecCase struct {
	Name    string     `json:"name"`
	Request vecRequest `json:"request"`
	Step    struct {
		Action string     `json:"action"`
		Rule   *string    `json:"rule"`
		Key    string     `json:"key"`
		Cost   int64      `json:"cost"`
		Status int        `json:"status"`
		Answer *vecAnswer `json:"answer"`
	} `json:"step"`
	Answers []struct {
		Decision *vecDecision `json:"decision"`
		Answer   vecAnswer    `json:"answer"`
	} `json:"answers"`
	Counts map[string]bool `json:"counts"`
}

type vecSuite struct {
	Name     string          `json:"name"`
	Limiters []string        `json:"limiters"`
	Policy   json.RawMessage `json:"policy"`
	Cases    []vecCase       `json:"cases"`
}

type vectorFile struct {
	Suites  []vecSuite `json:"suites"`
	Refunds []struct {
		Name     string      `json:"name"`
		Suite    int         `json:"suite"`
		Case     string      `json:"case"`
		Decision vecDecision `json:"decision"`
		Status   int         `json:"status"`
		Refund   bool        `json:"refund"`
	} `json:"refunds"`
	Invalid []struct {
		Document string `json:"document"`
		Error    string `json:"error"`
	} `json:"invalid"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "tests", "http", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// suitePolicy builds a suite's limiters (memory://) and its policy.
func suitePolicy(t *testing.T, s vecSuite) *polylimit.HTTPPolicy {
	t.Helper()
	c := openClient(t, "memory://")
	var limiters []*polylimit.Limiter
	for _, spec := range s.Limiters {
		l, err := c.Limiter(spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		limiters = append(limiters, l)
	}
	m, err := httplimit.FromDocument(string(s.Policy), limiters...)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	t.Cleanup(func() { m.Close() })
	return m.Policy()
}

func describeVector(r vecRequest) *polylimit.HTTPRequest {
	h := http.Header{}
	for name, v := range r.Headers {
		h.Add(name, v)
	}
	req := &polylimit.HTTPRequest{
		Method: r.Method, Path: r.Path, Route: r.Route, Peer: r.Peer, Header: h,
		User: r.User, Tenant: r.Tenant, Cost: r.Cost,
	}
	if r.AppKey != nil {
		req.AppKey, req.HasAppKey = *r.AppKey, true
	}
	return req
}

func expectAnswer(t *testing.T, where string, got polylimit.HTTPResponse, want vecAnswer) {
	t.Helper()
	var headers strings.Builder
	for _, h := range want.Headers {
		headers.WriteString(h[0] + ": " + h[1] + "\n")
	}
	if got.Status != want.Status || got.Body != want.Body || got.HeaderText != headers.String() {
		t.Errorf("%s: answer %d %q %q, want %d %q %q", where, got.Status, got.Body, got.HeaderText, want.Status,
			want.Body, headers.String())
	}
}

func TestGoldenVectors(t *testing.T) {
	v := loadVectors(t)
	cases := 0
	for _, s := range v.Suites {
		p := suitePolicy(t, s)
		for _, c := range s.Cases {
			cases++
			where := s.Name + " / " + c.Name
			step, err := p.Prepare(describeVector(c.Request))
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			want := c.Step
			wantRule := ""
			if want.Rule != nil {
				wantRule = *want.Rule
			}
			if step.Action.String() != want.Action || p.RuleName(step.Rule) != wantRule {
				t.Errorf("%s: step %v rule %q, want %s rule %q", where, step.Action, p.RuleName(step.Rule), want.Action,
					wantRule)
			}
			if step.Action == polylimit.HTTPCheck && (step.Key != want.Key || step.Cost != want.Cost) {
				t.Errorf("%s: key %q cost %d, want %q cost %d", where, step.Key, step.Cost, want.Key, want.Cost)
			}
			if want.Answer != nil {
				got, err := p.Answer(step, nil)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				expectAnswer(t, where, got, *want.Answer)
			}
			for i, a := range c.Answers {
				var res *polylimit.Result
				if a.Decision != nil {
					r := a.Decision.result()
					res = &r
				}
				got, err := p.Answer(step, res)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				expectAnswer(t, where+" / answer "+strconv.Itoa(i), got, a.Answer)
			}
			for status, counts := range c.Counts {
				n, _ := strconv.Atoi(status)
				admitted := polylimit.Result{Allowed: true, Granted: 1}
				if due := p.RefundDue(step, admitted, n); due == counts {
					t.Errorf("%s: status %d: refund due %v, want counts %v", where, n, due, counts)
				}
			}
		}
	}
	if cases < 40 {
		t.Errorf("%d cases, want at least 40", cases)
	}
	t.Logf("%d cases in %d suites", cases, len(v.Suites))
}

func TestGoldenVectorRefunds(t *testing.T) {
	v := loadVectors(t)
	for _, r := range v.Refunds {
		s := v.Suites[r.Suite]
		p := suitePolicy(t, s)
		var req *polylimit.HTTPRequest
		for _, c := range s.Cases {
			if c.Name == r.Case {
				req = describeVector(c.Request)
			}
		}
		if req == nil {
			t.Fatalf("%s: no case %q", r.Name, r.Case)
		}
		step, err := p.Prepare(req)
		if err != nil {
			t.Fatal(err)
		}
		if due := p.RefundDue(step, r.Decision.result(), r.Status); due != r.Refund {
			t.Errorf("%s: refund due %v, want %v", r.Name, due, r.Refund)
		}
	}
}

func TestGoldenVectorInvalidDocuments(t *testing.T) {
	v := loadVectors(t)
	c := openClient(t, "memory://")
	var limiters []*polylimit.Limiter
	for _, spec := range []string{"5/minute", "10/second"} {
		l, err := c.Limiter(spec)
		if err != nil {
			t.Fatal(err)
		}
		limiters = append(limiters, l)
	}
	for _, inv := range v.Invalid {
		m, err := httplimit.FromDocument(inv.Document, limiters...)
		if err == nil {
			m.Close()
			t.Errorf("accepted %s", inv.Document)
			continue
		}
		if !strings.Contains(err.Error(), inv.Error) {
			t.Errorf("error %q, want it to contain %q", err, inv.Error)
		}
	}
	if len(v.Invalid) == 0 {
		t.Error("no invalid documents")
	}
}

// A document's features through the middleware, over real HTTP and Redis:
// the user from WithUser, the deny list, count_when "failures" (a 200 gives
// its unit back), an "app" key from WithAppKey, and the policy's metrics.
func TestFromDocumentOverHTTP(t *testing.T) {
	c := openClient(t, shared.URL)
	l := limiterSpec(t, c, "2/minute", "")
	doc := `{"deny": {"users": ["mallory"]},
	  "rules": [
	    {"name": "login", "paths": ["/login"], "limiter": 0, "key": "user", "count_when": "failures"},
	    {"name": "app", "paths": ["/app"], "limiter": 0, "key": "app"}]}`
	m, err := httplimit.FromDocument(doc, l)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m = m.With(httplimit.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }),
		httplimit.WithAppKey(func(r *http.Request) (string, error) { return "app:" + r.Header.Get("X-App"), nil }))
	srv := serve(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("fail") != "" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte("ok\n"))
	})))
	for i := 0; i < 4; i++ { // successes: refunded, never denied
		expectStatus(t, get(t, srv.URL, "/login", "X-User", "alice"), 200)
	}
	expectStatus(t, get(t, srv.URL, "/login?fail=1", "X-User", "bob"), 401)
	expectStatus(t, get(t, srv.URL, "/login?fail=1", "X-User", "bob"), 401)
	r := get(t, srv.URL, "/login", "X-User", "bob")
	expectStatus(t, r, 429)
	expect(t, r, "RateLimit-Policy", `"login";q=2;w=60`)
	r = get(t, srv.URL, "/login", "X-User", "mallory")
	expectStatus(t, r, 403)
	if r.body != polylimit.HTTPBodyForbidden {
		t.Errorf("body %q", r.body)
	}
	r = get(t, srv.URL, "/login")
	expectStatus(t, r, 401)
	for i, want := range []int{200, 200, 429} {
		if r := get(t, srv.URL, "/app", "X-App", "a1"); r.status != want {
			t.Errorf("app request %d: %d, want %d", i, r.status, want)
		}
	}
	page, err := m.Policy().MetricsPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`polylimit_http_requests_total{rule="login",outcome="allowed"} 6`,
		`polylimit_http_requests_total{rule="login",outcome="denied"} 1`,
		`polylimit_http_requests_total{rule="(lists)",outcome="forbidden"} 1`,
		`polylimit_http_requests_total{rule="app",outcome="denied"} 1`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("no %s in\n%s", want, page)
		}
	}
}

// Which rules may refund (HTTPRule.Refunds) is the core's reading of each
// rule's count_when, not a second parse of the document: a value spelt with
// an escape ("\u0061ll" is "all") counts every response too.
func TestRuleRefundsFromTheCore(t *testing.T) {
	c := openClient(t, "memory://")
	l, err := c.Limiter("5/minute")
	if err != nil {
		t.Fatal(err)
	}
	p, err := polylimit.NewHTTPPolicy(`{"rules": [
		{"name": "absent", "paths": ["/a"], "limiter": 0},
		{"name": "all", "paths": ["/b"], "limiter": 0, "count_when": "all"},
		{"name": "escaped", "paths": ["/c"], "limiter": 0, "count_when": "\u0061ll"},
		{"name": "failures", "paths": ["/d"], "limiter": 0, "count_when": "failures"},
		{"name": "statuses", "paths": ["/e"], "limiter": 0, "count_when": [401, "5xx"]},
		{"name": "exempt", "limiter": null}]}`, l)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var got []string
	for _, r := range p.Rules() {
		got = append(got, fmt.Sprintf("%s=%v", r.Name, r.Refunds))
	}
	want := "[absent=false all=false escaped=false failures=true statuses=true exempt=false]"
	if fmt.Sprint(got) != want {
		t.Errorf("Refunds: %v, want %s", got, want)
	}
}
