package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
)

// examplePolicy is docs/examples/policy.toml, built in code.
func examplePolicy() polylimit.PolicyDocument {
	doc := polylimit.PolicyDocument{
		Version:        1,
		Prefix:         "shop",
		TrustedProxies: []string{"10.0.0.0/8"},
		DefaultPlan:    "free",
		Plans: map[string]polylimit.PolicyPlan{
			"free":       {"api": "10/minute", "search": "2/second"},
			"pro":        {"api": "100/minute", "search": "10/second"},
			"enterprise": {"api": "1000/minute; 50/second", "search": "100/second"},
		},
		Tenants: map[string]string{"acme": "pro", "initech": "enterprise"},
		Deny:    &polylimit.PolicyLists{IPs: []string{"203.0.113.0/24"}},
		Rules: []polylimit.PolicyRule{
			{Name: "health", Paths: []string{"/healthz"}, Limit: "none"},
			{Name: "login", Paths: []string{"/login"}, Methods: []string{"POST"}, Key: polylimit.PolicyKey{"ip"},
				Limit: "5/minute", CountWhen: polylimit.CountWhen{"failures"}},
			{Name: "search", Paths: []string{"/api/search*"}, Key: polylimit.PolicyKey{"tenant"}, Limit: "plan",
				Algorithm: "gcra"},
			{Name: "api", Paths: []string{"/api/*"}, Key: polylimit.PolicyKey{"tenant"}, Limit: "plan"},
		},
	}
	return doc
}

// decided is what a request gets from a policy: the step, its plan, and
// the answer.
type decided struct {
	Action, Rule, Key, Plan string
	Cost                    int64
	Status                  int
	Allowed                 bool
	Headers                 string // an admitted decision's
}

func decideOn(t *testing.T, live *polylimit.LivePolicy, r *polylimit.HTTPRequest) decided {
	t.Helper()
	p, err := live.Current()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	d, err := p.Decide(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	out := decided{Action: d.Step.Action.String(), Rule: p.RuleName(d.Step.Rule), Key: d.Step.Key,
		Plan: p.StepPlan(d.Step), Cost: d.Step.Cost, Status: d.Response.Status, Allowed: d.Checked && d.Result.Allowed}
	if out.Allowed {
		out.Headers = d.Response.HeaderText
	}
	return out
}

// The example file's text and the same policy built in code decide every
// request alike: the step (action, rule, key, cost), the limiter's plan,
// and an admitted decision's headers.
func TestPolicyDocumentParity(t *testing.T) {
	text, err := os.ReadFile("../../../docs/examples/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	// Two memory:// clients: each policy counts on its own.
	fromFile, err := polylimit.NewLivePolicy(openClient(t, "memory://"), string(text))
	if err != nil {
		t.Fatal(err)
	}
	defer fromFile.Close()
	fromCode, err := polylimit.NewLivePolicyFromDocument(openClient(t, "memory://"), examplePolicy())
	if err != nil {
		t.Fatal(err)
	}
	defer fromCode.Close()

	type req struct{ method, path, peer, xff, tenant string }
	var reqs []req
	for _, tenant := range []string{"acme", "initech", "globex", ""} {
		for _, path := range []string{"/api/orders", "/api/search"} {
			reqs = append(reqs, req{"GET", path, "192.0.2.7:4000", "", tenant})
		}
	}
	reqs = append(reqs,
		req{"POST", "/login", "10.0.0.1:4000", "198.51.100.4", ""},
		req{"GET", "/login", "10.0.0.1:4000", "198.51.100.4", ""},
		req{"GET", "/healthz", "192.0.2.7:4000", "", ""},
		req{"GET", "/api/orders", "10.0.0.1:4000", "203.0.113.9", "acme"})
	seen := map[string]bool{}
	for round := 0; round < 3; round++ { // globex's search (2/second) is refused on the third
		for _, q := range reqs {
			h := http.Header{}
			if q.xff != "" {
				h.Set("X-Forwarded-For", q.xff)
			}
			r := &polylimit.HTTPRequest{Method: q.method, Path: q.path, Peer: q.peer, Header: h, Tenant: q.tenant}
			a, b := decideOn(t, fromFile, r), decideOn(t, fromCode, r)
			if a != b {
				t.Errorf("round %d, %+v:\n the file: %+v\n the code: %+v", round, q, a, b)
			}
			seen[fmt.Sprintf("%s %s %s %d %v", a.Action, a.Rule, a.Plan, a.Status, a.Allowed)] = true
		}
	}
	// The requests reach every kind of answer (a parity of nothing proves
	// nothing).
	for _, want := range []string{
		"check api pro 0 true", "check api enterprise 0 true", "check api free 0 true",
		"check search pro 0 true", "check search free 429 false", "check login  0 true",
		"respond api  401 false", "respond   403 false", "proceed health  0 false",
	} {
		if !seen[want] {
			t.Errorf("no request got %q; got %v", want, seen)
		}
	}
}

// A document built in code with an error is refused with the library's
// message, at creation and on a reload (the old policy stays), and by the
// fixed policy's constructor.
func TestPolicyDocumentRefused(t *testing.T) {
	c := openClient(t, "memory://")
	bad := examplePolicy()
	bad.DefaultPlan = "gold"
	const msg = "default_plan: must name one of the plans (enterprise, free, pro)"
	check := func(what string, err error) {
		t.Helper()
		var pe *polylimit.Error
		if err == nil || !errors.As(err, &pe) || pe.Code != polylimit.ErrInvalidArgument ||
			!strings.Contains(err.Error(), "policy line ") || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want ErrInvalidArgument %q", what, err, msg)
		}
	}
	_, err := polylimit.NewLivePolicyFromDocument(c, bad)
	check("NewLivePolicyFromDocument", err)

	live, err := polylimit.NewLivePolicyFromDocument(c, examplePolicy())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	check("ReloadDocument", live.ReloadDocument(bad))
	if g := live.Generation(); g != 1 {
		t.Errorf("generation %d after a refused reload, want 1", g)
	}
	if e := live.LastError(); !strings.Contains(e, msg) {
		t.Errorf("last error %q", e)
	}
	good := examplePolicy()
	good.Plans["free"]["api"] = "20/minute"
	if err := live.ReloadDocument(good); err != nil || live.Generation() != 2 {
		t.Errorf("ReloadDocument: %v, generation %d", err, live.Generation())
	}

	// A rule naming a limiter that was not given.
	lim := limiterSpec(t, openClient(t, "memory://"), "5/minute", "")
	one := 1
	doc := polylimit.PolicyDocument{Rules: []polylimit.PolicyRule{{Name: "all", Limiter: &one}}}
	_, err = httplimit.FromPolicyDocument(doc, lim)
	if err == nil || !strings.Contains(err.Error(), `rules[0] ("all").limiter: must be the index of one of the 1 limiters given`) {
		t.Errorf("FromPolicyDocument: %v", err)
	}
	zero := 0
	doc.Rules[0].Limiter = &zero
	m, err := httplimit.FromPolicyDocument(doc, lim)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

// Every field of the builder reaches the library: a document that sets all
// of them is accepted, and its JSON is the file's fields.
func TestPolicyDocumentEveryField(t *testing.T) {
	v4, v6, no, yes := 24, 48, false, true
	zero := 0
	doc := polylimit.PolicyDocument{
		Version: 1, Prefix: "all", TrustedProxies: []string{"10.0.0.0/8"}, IPv4Prefix: &v4, IPv6Prefix: &v6,
		APIKeyHeader: "X-Key", Exempt: []string{"/metrics"},
		Allow:       &polylimit.PolicyLists{IPs: []string{"192.0.2.1"}, APIKeys: []string{"k1"}, Users: []string{"root"}, Tenants: []string{"us"}},
		Deny:        &polylimit.PolicyLists{IPs: []string{"203.0.113.0/24"}},
		SendHeaders: &no, OnError: "allow",
		Plans:       map[string]polylimit.PolicyPlan{"free": {"api": "10/minute"}},
		DefaultPlan: "free", Tenants: map[string]string{"acme": "free"},
		Resolver: &polylimit.PolicyResolver{TimeoutMS: 20, CacheTTLMS: 1000, CacheSize: 10},
		Rules: []polylimit.PolicyRule{
			{Name: "app", Routes: []string{"/users/{id}"}, Limiter: &zero, Key: polylimit.PolicyKey{"api_key", "ip"},
				Credential: &yes, Cost: &polylimit.PolicyCost{Header: "X-Cost", Default: 2, Max: 50}, OnMissingKey: "skip",
				CountWhen: polylimit.CountWhen{"401", "5xx", "400-403"}},
			{Name: "api", Paths: []string{"/api/*"}, Methods: []string{"get"}, Limit: "plan:api",
				Algorithm: "sliding_counter", Key: polylimit.PolicyKey{"tenant+route"}, Cost: &polylimit.PolicyCost{Units: 3}},
		},
	}
	text, err := doc.JSON()
	if err != nil {
		t.Fatal(err)
	}
	compact := strings.Join(strings.Fields(text), "")
	for _, want := range []string{
		`"ipv4_prefix":24`, `"send_headers":false`, `"key":["api_key","ip"]`, `"key":"tenant+route"`,
		`"cost":{"header":"X-Cost","default":2,"max":50}`, `"cost":3`, `"count_when":[401,"5xx","400-403"]`,
		`"resolver":{"timeout_ms":20,"cache_ttl_ms":1000,"cache_size":10}`, `"limiter":0`, `"credential":true`,
	} {
		if !strings.Contains(compact, want) {
			t.Errorf("the JSON has no %s:\n%s", want, text)
		}
	}
	// The JSON reads back into the same document (keys, costs, count_when).
	var back polylimit.PolicyDocument
	if err := json.Unmarshal([]byte(text), &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := back.JSON(); again != text {
		t.Errorf("read back and encoded again:\n%s\nwant\n%s", again, text)
	}
	c := openClient(t, "memory://")
	lim := limiterSpec(t, c, "5/minute", "")
	resolver := func(context.Context, string) (string, error) { return "free", nil }
	live, err := polylimit.NewLivePolicyFromDocument(c, doc, polylimit.WithAppLimiters(lim),
		polylimit.WithPlanResolver(resolver))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	live.Close()
}

// A resolver table built in code is refused without a resolver, at
// creation and on a reload.
func TestPolicyDocumentResolverWithoutResolver(t *testing.T) {
	const msg = "gave no plan resolver"
	withResolver := examplePolicy()
	withResolver.Resolver = &polylimit.PolicyResolver{}
	c := openClient(t, "memory://")
	if l, err := polylimit.NewLivePolicyFromDocument(c, withResolver); err == nil || !strings.Contains(err.Error(), msg) {
		if l != nil {
			l.Close()
		}
		t.Errorf("NewLivePolicyFromDocument with a resolver table and no resolver: %v", err)
	}
	live, err := polylimit.NewLivePolicyFromDocument(c, examplePolicy())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := live.ReloadDocument(withResolver); err == nil || !strings.Contains(err.Error(), msg) {
		t.Errorf("ReloadDocument adding a resolver table: %v, want %q", err, msg)
	}
	if g := live.Generation(); g != 1 {
		t.Errorf("generation %d, want 1", g)
	}
}
