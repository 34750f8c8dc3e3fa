// Package httplimit is net/http middleware for polylimit: every request is
// checked against the library's HTTP request policy (docs/integrations/
// contract.md), shared through Redis by every process that serves the same
// routes, whatever their language: the same keys, limits, statuses, bodies
// and headers.
//
//	client, err := polylimit.Open("", polylimit.WithName("web")) // "": $POLYLIMIT_URL
//	...
//	perIP, err := client.Limiter("100/minute", polylimit.WithPrefix("web"))
//	login, err := client.Limiter("5/minute", polylimit.WithPrefix("web-login"))
//	proxies, err := httplimit.ParseTrustedProxies("10.0.0.0/8")
//	...
//	limit := httplimit.New(perIP,
//		httplimit.WithTrustedProxies(proxies...),
//		httplimit.WithRoute("/login", login),
//		httplimit.WithExempt("/healthz", "/static/"))
//	http.ListenAndServe(addr, limit(mux))
//
// or, with every feature of the contract, from a policy document:
//
//	m, err := httplimit.FromDocument(doc, perIP, login)
//	http.ListenAndServe(addr, m.Handler(mux))
//
// The middleware only describes the request (method, path, peer address, the
// headers the policy reads, and the identities the application gives:
// WithUser, WithTenant, WithKeyFunc, WithCost), asks the policy, runs the
// check it asks for and applies the answer:
//
//   - Going on: the handler, with the rate-limit headers set (RateLimit-Limit,
//     -Remaining, -Reset, RateLimit-Policy and RateLimit, unless the policy's
//     send_headers is false); the decision is in the request's context
//     (FromContext). Exempt paths, allowed clients, requests of no rule: the
//     handler, untouched.
//   - Denied: 429 with Retry-After and the same headers, body "Too Many
//     Requests" (or WithDeniedHandler's answer).
//   - 400 / 401 / 403 (no key, a missing credential, a bad cost header, the
//     deny list) and 503 (the check failed): the policy's answer, or
//     WithErrorHandler's when one is given.
//
// A rule whose count_when does not count a response refunds its units after
// the handler (WithCountWhen, or count_when in the document).
package httplimit

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

// Option configures New and FromDocument.
type Option func(*config)

type route struct {
	pattern string
	limiter *polylimit.Limiter
}

type config struct {
	key       *keyPart
	missing   MissingKey
	trusted   []netip.Prefix
	routes    []route
	exempt    []string
	skip      func(*http.Request) bool
	timeout   time.Duration
	denied    http.Handler
	onError   func(http.ResponseWriter, *http.Request, error)
	count     func(status int) bool
	user      func(*http.Request) string
	tenant    func(*http.Request) string
	cost      func(*http.Request) int
	routeOf   func(*http.Request) string
	app       KeyFunc
	sendNoHdr bool
}

// WithKeyFunc sets how a request's key is found (default: the client's
// address, KeyByIP). This package's key functions are the policy's key parts;
// a function of your own is its "app" part. See KeyFunc.
func WithKeyFunc(f KeyFunc) Option { return func(c *config) { c.key = partOf(f) } }

// WithKey sets the policy's key by name (contract.md, "Keys"): one
// composition ("user+route") or, given several, alternatives (the first
// whose parts are all present): WithKey("api_key", "ip"). Parts: ip,
// api_key, api_key:<Header>, header:<Header>, user, tenant, route, app
// (WithAppKey's function).
func WithKey(key ...string) Option {
	return func(c *config) { c.key = &keyPart{key: append([]string(nil), key...)} }
}

// WithAppKey gives the function of the "app" key part, for WithKey or a
// document's rules keyed by "app".
func WithAppKey(f KeyFunc) Option { return func(c *config) { c.app = f } }

// WithUser gives the authenticated user's id of a request ("": anonymous),
// for keys and lists by user.
func WithUser(f func(*http.Request) string) Option { return func(c *config) { c.user = f } }

// WithTenant gives a request's tenant id ("": none), for keys and lists by
// tenant.
func WithTenant(f func(*http.Request) string) Option { return func(c *config) { c.tenant = f } }

// WithCost gives a request's cost in units (0: the rule's own).
func WithCost(f func(*http.Request) int) Option { return func(c *config) { c.cost = f } }

// WithRouteTemplate gives a request's route template ("/users/{id}"; "":
// unknown), for rules by route and the "route" key part.
func WithRouteTemplate(f func(*http.Request) string) Option {
	return func(c *config) { c.routeOf = f }
}

// WithoutHeaders leaves the rate-limit headers off admitted responses (the
// policy's send_headers false); a 429 always has them.
func WithoutHeaders() Option { return func(c *config) { c.sendNoHdr = true } }

// MissingKey says what a request without a key gets: the policy's
// on_missing_key.
type MissingKey int

const (
	// MissingKeyReject, the default: 400 Bad Request, or 401 Unauthorized
	// when the key is a credential.
	MissingKeyReject MissingKey = iota
	// MissingKeySkip serves the request without a check or headers.
	MissingKeySkip
)

// String is the shared name: "reject" or "skip".
func (m MissingKey) String() string {
	switch m {
	case MissingKeyReject:
		return "reject"
	case MissingKeySkip:
		return "skip"
	}
	return "MissingKey(" + strconv.Itoa(int(m)) + ")"
}

// WithMissingKey sets what a request without a key gets, for every rule of
// this middleware.
func WithMissingKey(m MissingKey) Option { return func(c *config) { c.missing = m } }

// WithCountWhen counts a request only when countWhen says its response
// status counts, e.g. func(s int) bool { return s >= 400 } for failed logins.
// The request is checked before the handler as usual; after it, an admitted
// request whose status does not count gets its units back (only units Redis
// took: not a shadowed or degraded decision's). The status is the one the
// handler wrote (200 when it wrote a body without WriteHeader); a handler
// that panics is not refunded. A document's count_when (statuses, classes,
// "failures") does the same without a function.
func WithCountWhen(countWhen func(status int) bool) Option {
	return func(c *config) { c.count = countWhen }
}

// WithTrustedProxies names the proxies whose X-Forwarded-For is believed
// (the policy's trusted_proxies; ParseTrustedProxies reads them).
func WithTrustedProxies(prefixes ...netip.Prefix) Option {
	return func(c *config) { c.trusted = append(c.trusted, prefixes...) }
}

// WithRoute limits the requests whose path matches pattern with limiter
// instead of the default one: a rule named after the pattern. A pattern is
// an exact path ("/login"), a subtree when it ends in a slash ("/api/"
// matches "/api/..."), or a policy glob ("/files/*.png"); the longest
// pattern is tried first. The count is the limiter's, per key: give each
// route a limiter of its own (its own prefix) for a budget of its own.
func WithRoute(pattern string, limiter *polylimit.Limiter) Option {
	return func(c *config) { c.routes = append(c.routes, route{pattern, limiter}) }
}

// WithExempt lets requests whose path matches one of the patterns through
// without a check or headers (patterns as for WithRoute).
func WithExempt(patterns ...string) Option {
	return func(c *config) { c.exempt = append(c.exempt, patterns...) }
}

// WithSkip lets the requests for which skip returns true through without a
// check or headers.
func WithSkip(skip func(*http.Request) bool) Option { return func(c *config) { c.skip = skip } }

// WithTimeout bounds each check (0: the request context's deadline, if any,
// else the client's command timeout). A check that times out is a failed
// check: 503, or the error handler.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithDeniedHandler answers denied requests. The rate-limit headers,
// Retry-After among them, are already set; the handler writes the status
// (429 Too Many Requests, unless it has reasons of its own) and the body.
// FromContext(r.Context()) has the decision.
func WithDeniedHandler(h http.Handler) Option { return func(c *config) { c.denied = h } }

// WithErrorHandler answers the requests the policy answers at once or whose
// check failed, instead of the policy's answer: err is ErrNoKey,
// ErrNoCredential, ErrForbidden or ErrInvalidCost (errors.Is), the check's
// error (a *polylimit.Error or *polylimit.ContextError), or a KeyFunc's own.
// errors.As(err, &*Answer) gives the policy's answer; DefaultErrorHandler
// writes it.
func WithErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(c *config) { c.onError = f }
}

// Answer is the policy's answer to a request, carried by the errors the
// error handler gets.
type Answer struct {
	Err      error
	Response polylimit.HTTPResponse
}

func (a *Answer) Error() string { return a.Err.Error() }

// Unwrap gives the reason: ErrNoKey, ErrForbidden, a check's error...
func (a *Answer) Unwrap() error { return a.Err }

// DefaultErrorHandler writes the policy's answer (an *Answer in err), or 503
// Service Unavailable with the policy's body for any other error.
func DefaultErrorHandler(w http.ResponseWriter, r *http.Request, err error) {
	var a *Answer
	if errors.As(err, &a) && a.Response.Status != 0 {
		write(w, &a.Response)
		return
	}
	w.Header().Set("Content-Type", polylimit.HTTPContentType)
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, polylimit.HTTPBodyUnavailable)
}

// write applies an answer: headers, status, body.
func write(w http.ResponseWriter, resp *polylimit.HTTPResponse) {
	resp.SetHeaders(w.Header())
	w.WriteHeader(resp.Status)
	io.WriteString(w, resp.Body)
}

type ctxKey struct{}

// FromContext returns the decision the middleware made for this request
// (in the handler's or the denied handler's r.Context()); false when the
// request was not checked.
func FromContext(ctx context.Context) (polylimit.Result, bool) {
	r, ok := ctx.Value(ctxKey{}).(polylimit.Result)
	return r, ok
}

// Middleware applies an HTTP policy to requests. It is safe for concurrent
// use.
type Middleware struct {
	policy *polylimit.HTTPPolicy
	live   *polylimit.LivePolicy // per request, its current policy instead of policy
	rules  []polylimit.HTTPRule
	doc    string
	cfg    config
	err    error // the policy New could not make: every request gets the error handler
}

// New returns the middleware: every request not exempt is checked against
// the limiter of its route (WithRoute), else against limiter (nil: the
// requests of no route go on unchecked). The options become a policy
// document (Document shows it). A policy the library refuses (a closed
// limiter) answers every request through the error handler.
func New(limiter *polylimit.Limiter, opts ...Option) func(http.Handler) http.Handler {
	m, _ := NewMiddleware(limiter, opts...)
	return m.Handler
}

// NewMiddleware is New returning the Middleware, and the error of a policy
// the library refused.
func NewMiddleware(limiter *polylimit.Limiter, opts ...Option) (*Middleware, error) {
	m := &Middleware{}
	m.apply(opts)
	doc, limiters := m.cfg.document(limiter)
	m.doc = doc
	m.policy, m.err = polylimit.NewHTTPPolicy(doc, limiters...)
	if m.policy != nil {
		m.rules = m.policy.Rules()
	}
	return m, m.err
}

// FromDocument returns the middleware of a policy document (JSON text,
// contract.md "The policy document") and the limiters its rules name by
// index. Options (With...) may be added with Middleware.With: the
// application's identities (WithUser, WithTenant, WithAppKey, WithCost,
// WithRouteTemplate), handlers (WithDeniedHandler, WithErrorHandler,
// WithSkip), WithTimeout and WithCountWhen; the document's own settings
// win over the options that would write it. A document with limits or plans
// of its own needs a client for them: polylimit.NewLivePolicy and FromLive.
func FromDocument(doc string, limiters ...*polylimit.Limiter) (*Middleware, error) {
	p, err := polylimit.NewHTTPPolicy(doc, limiters...)
	if err != nil {
		return nil, err
	}
	m := &Middleware{policy: p, rules: p.Rules(), doc: doc}
	m.apply(nil)
	return m, nil
}

// FromLive returns the middleware of a live policy (polylimit.NewLivePolicy,
// polylimit.OpenLivePolicy): each request is decided, and refunded, on the
// policy in force when it started, so a reload applies to the next request;
// tenants' plans are resolved by the live policy's resolver (give the tenant
// with WithTenant). Options are added with Middleware.With, as for
// FromDocument. Closing the middleware does not close the live policy.
func FromLive(live *polylimit.LivePolicy) *Middleware {
	m := &Middleware{live: live}
	m.apply(nil)
	return m
}

// FromMap is FromDocument for a document given as Go values (encoded as JSON).
func FromMap(doc map[string]any, limiters ...*polylimit.Limiter) (*Middleware, error) {
	text, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return FromDocument(string(text), limiters...)
}

// With returns a copy of the middleware with more options: the application's
// hooks and handlers (options that would change the policy document do not
// apply to a document's middleware).
func (m *Middleware) With(opts ...Option) *Middleware {
	n := &Middleware{policy: m.policy, live: m.live, rules: m.rules, doc: m.doc, cfg: m.cfg, err: m.err}
	n.apply(opts)
	return n
}

func (m *Middleware) apply(opts []Option) {
	for _, o := range opts {
		o(&m.cfg)
	}
	if m.cfg.denied == nil {
		m.cfg.denied = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, polylimit.HTTPBodyTooManyRequests)
		})
	}
}

// Policy returns the library's policy (metrics: promcollector, or
// HTTPPolicy.MetricsPrometheus); nil when New could not make it, and for
// FromLive (Live).
func (m *Middleware) Policy() *polylimit.HTTPPolicy { return m.policy }

// Live returns FromLive's live policy (nil otherwise).
func (m *Middleware) Live() *polylimit.LivePolicy { return m.live }

// Close frees the policy (not its limiters, nor FromLive's live policy).
func (m *Middleware) Close() error {
	if m.policy == nil {
		return nil
	}
	return m.policy.Close()
}

// glob turns a WithRoute / WithExempt pattern into a policy path glob.
func glob(pattern string) string {
	if strings.HasSuffix(pattern, "/") {
		return pattern + "*"
	}
	return pattern
}

// ruleName names a WithRoute rule after its pattern, when that is a valid
// rule name (it names the limit in RateLimit-Policy and in metrics).
func ruleName(pattern string, i int) string {
	ok := pattern != "" && len(pattern) <= 64 && pattern != "default"
	for j := 0; j < len(pattern) && ok; j++ {
		b := pattern[j]
		ok = b > ' ' && b < 0x7f && b != '"' && b != '\\'
	}
	if ok {
		return pattern
	}
	return "route-" + strconv.Itoa(i+1)
}

// document is the policy of New's options, and its limiters.
func (c *config) document(def *polylimit.Limiter) (string, []*polylimit.Limiter) {
	key := c.key
	if key == nil {
		key = &keyPart{key: []string{"ip"}}
	}
	if key.app != nil && c.app == nil {
		c.app = key.app
	}
	trusted := prefixStrings(c.trusted)
	trusted = append(trusted, key.trusted...)
	var limiters []*polylimit.Limiter
	index := func(l *polylimit.Limiter) int {
		for i, x := range limiters {
			if x == l {
				return i
			}
		}
		limiters = append(limiters, l)
		return len(limiters) - 1
	}
	routes := append([]route(nil), c.routes...)
	sort.SliceStable(routes, func(i, j int) bool { return len(routes[i].pattern) > len(routes[j].pattern) })
	rules := []any{}
	rule := func(name string, paths []string, l *polylimit.Limiter) {
		r := map[string]any{"name": name, "key": keyValue(key.key), "on_missing_key": c.missing.String()}
		if paths != nil {
			r["paths"] = paths
		}
		if l == nil {
			r["limiter"] = nil
		} else {
			r["limiter"] = index(l)
		}
		rules = append(rules, r)
	}
	for i, rt := range routes {
		rule(ruleName(rt.pattern, i), []string{glob(rt.pattern)}, rt.limiter)
	}
	if def != nil {
		rule("default", nil, def)
	}
	exempt := make([]string, 0, len(c.exempt))
	for _, e := range c.exempt {
		exempt = append(exempt, glob(e))
	}
	doc := map[string]any{
		"trusted_proxies": nonNil(trusted),
		"exempt":          exempt,
		"send_headers":    !c.sendNoHdr,
		"rules":           rules,
	}
	text, _ := json.Marshal(doc)
	return string(text), limiters
}

// Document returns the policy document: FromDocument's, or the one New made
// of its options.
func (m *Middleware) Document() string { return m.doc }

// Handler wraps next.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(next, w, r) })
}

func (m *Middleware) fail(w http.ResponseWriter, r *http.Request, err error, resp *polylimit.HTTPResponse) {
	a := &Answer{Err: err}
	if resp != nil {
		a.Response = *resp
	}
	if m.cfg.onError != nil {
		m.cfg.onError(w, r, a)
		return
	}
	DefaultErrorHandler(w, r, a)
}

func (m *Middleware) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	c := &m.cfg
	if m.err != nil {
		m.fail(w, r, m.err, nil)
		return
	}
	if c.skip != nil && c.skip(r) {
		next.ServeHTTP(w, r)
		return
	}
	req := describe(r)
	if c.routeOf != nil {
		req.Route = c.routeOf(r)
	}
	if c.user != nil {
		req.User = c.user(r)
	}
	if c.tenant != nil {
		req.Tenant = c.tenant(r)
	}
	if c.cost != nil {
		req.Cost = int64(c.cost(r))
	}
	// A request's context always can end (the client may go away), but
	// only a deadline is worth a check's goroutine: without one the check
	// makes the one blocking library call when it can (the command timeout
	// bounds it).
	ctx := context.Background()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(r.Context(), c.timeout)
		defer cancel()
	} else if _, ok := r.Context().Deadline(); ok {
		ctx = r.Context()
	}
	policy, rules := m.policy, m.rules
	if m.live != nil {
		var err error
		if policy, err = m.live.Current(); err != nil {
			m.fail(w, r, err, nil)
			return
		}
		defer policy.Close() // after the response and its refund
		rules = policy.Rules()
	}
	d, err := policy.Decide(ctx, &req)
	if err == nil && d.Step.Action == polylimit.HTTPNeedAppKey {
		if err = appKey(r, c.app, &req); err == nil {
			d, err = policy.Decide(ctx, &req)
		}
	}
	if err != nil {
		m.fail(w, r, err, nil)
		return
	}
	switch d.Step.Action {
	case polylimit.HTTPProceed:
		next.ServeHTTP(w, r)
		return
	case polylimit.HTTPRespond:
		m.answerAtOnce(w, r, &d)
		return
	}
	if !d.Checked {
		if d.Response.Status != 0 { // 503
			m.fail(w, r, d.CheckErr, &d.Response)
			return
		}
		next.ServeHTTP(w, r) // on_error "allow"
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, d.Result))
	if d.Response.Status == http.StatusTooManyRequests {
		d.Response.SetHeaders(w.Header())
		m.cfg.denied.ServeHTTP(w, r)
		return
	}
	d.Response.SetHeaders(w.Header())
	refunds := d.Step.Rule >= 0 && d.Step.Rule < len(rules) && rules[d.Step.Rule].Refunds
	if c.count == nil && !refunds {
		next.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	if sw.status == 0 {
		sw.status = http.StatusOK // nothing written: net/http answers 200
	}
	// The request's context may be done once the handler returned.
	rctx := context.Background()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(rctx, c.timeout)
		defer cancel()
	}
	if c.count != nil {
		// Only units Redis took go back: not a shadowed or degraded decision's.
		res := d.Result
		if !c.count(sw.status) && res.Allowed && !res.Shadowed && !res.Degraded {
			if l := policy.StepLimiter(d.Step); l != nil {
				_, _ = l.Refund(rctx, d.Step.Key, int(d.Step.Cost))
			}
		}
		return
	}
	_, _ = policy.Settle(rctx, &d, sw.status)
}

// answerAtOnce answers 400 / 401 / 403.
func (m *Middleware) answerAtOnce(w http.ResponseWriter, r *http.Request, d *polylimit.HTTPDecision) {
	var reason error
	switch {
	case d.Response.Status == http.StatusBadRequest && d.Response.Body == polylimit.HTTPBodyBadCost:
		reason = ErrInvalidCost
	default:
		reason = statusError(d.Response.Status)
	}
	m.fail(w, r, reason, &d.Response)
}

// statusWriter records the status a handler answers with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 && code >= 200 { // 1xx are interim answers
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush keeps streaming handlers working through the wrapper.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		if s.status == 0 {
			s.status = http.StatusOK
		}
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
