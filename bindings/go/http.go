//go:build cgo
// +build cgo

package polylimit

/*
#include <stdlib.h>
#include <string.h>
#include <polylimit.h>

// A request reaches C without a pointer in Go memory: its strings are spans
// of one byte buffer, two int64 each (offset, length; offset -1: absent), in
// the order method, path, route, peer, user, tenant, app_key, plan, then the
// policy's headers. The polylimit_http_request is made here, on C's stack.
enum { PL_HTTP_FIXED = 8, PL_HTTP_STACK_HEADERS = 32 };

static polylimit_str pl_span(const char *buf, const int64_t *s) {
	polylimit_str out = {NULL, 0};
	if (s[0] >= 0) {
		out.ptr = buf + s[0];
		out.len = (size_t)s[1];
	}
	return out;
}

static int pl_http_call(const polylimit_http_policy *p, const char *buf, const int64_t *spans, size_t n_headers,
                        int64_t cost, int decide, polylimit_http_step *step, polylimit_decision *decision,
                        polylimit_http_response *response, polylimit_error *err) {
	polylimit_str stack[PL_HTTP_STACK_HEADERS];
	polylimit_str *hs = stack;
	polylimit_http_request req;
	memset(&req, 0, sizeof req);
	size_t i;
	int rc;
	if (buf == NULL) buf = "";
	if (n_headers > PL_HTTP_STACK_HEADERS) {
		hs = (polylimit_str *)malloc(n_headers * sizeof *hs);
		if (hs == NULL) return POLYLIMIT_ENOMEM;
	}
	for (i = 0; i < n_headers; ++i) hs[i] = pl_span(buf, spans + 2 * (PL_HTTP_FIXED + i));
	req.version = POLYLIMIT_HTTP_REQUEST_VERSION;
	req.method = pl_span(buf, spans);
	req.path = pl_span(buf, spans + 2);
	req.route = pl_span(buf, spans + 4);
	req.peer = pl_span(buf, spans + 6);
	req.user = pl_span(buf, spans + 8);
	req.tenant = pl_span(buf, spans + 10);
	req.app_key = pl_span(buf, spans + 12);
	req.plan = pl_span(buf, spans + 14);
	req.headers = hs;
	req.header_count = n_headers;
	req.cost = cost;
	if (decide)
		rc = polylimit_http_decide(p, &req, step, decision, response, err);
	else
		rc = polylimit_http_prepare(p, &req, step, err);
	if (hs != stack) free(hs);
	return rc;
}
*/
import "C"

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// HTTPPolicy is the library's HTTP request policy (docs/integrations/
// contract.md): a JSON policy document and the limiters its rules name by
// index. Every language's middleware asks it what to do with a request, so
// that services in different languages on one Redis give the same answer
// under the same Redis keys. Package httplimit is its net/http middleware;
// HTTPPolicy is for other frameworks. It is safe for concurrent use.
//
// Per request: Prepare describes the request and returns a step (go on,
// answer at once, or check a key on a rule's limiter); the check runs on the
// limiter's own path; Answer turns its result into the response; after the
// response, RefundDue (or Settle) gives back the units of a response the
// rule's count_when does not count. Decide does the three in one call.
//
// The policy keeps its limiters' state alive: closing a Limiter does not
// stop the policy from using it; closing their Client does (its checks then
// fail: 503, or going on with on_error "allow").
type HTTPPolicy struct {
	mu       sync.RWMutex // held shared by every call into C, exclusively by Close
	h        *C.polylimit_http_policy
	limiters []*Limiter
	client   *Client // the limiters' client when they share one: Decide's one-call path
	headers  []string
	canon    []string // the headers' canonical names (http.Header keys)
	rules    []HTTPRule
	// noResolver: a request without a plan is described with the plan
	// present and empty (the document's tenants table or default plan).
	noResolver bool
	live       *LivePolicy // the live policy this one is the current of, for Decide's plans
}

// HTTPRule is one rule of a policy document, in document order.
type HTTPRule struct {
	Name    string
	Limiter int // the index of its limiter; -1: the rule exempts what it matches
	// Refunds: the rule's count_when is not "all", so some responses get
	// their units back (RefundDue, Settle).
	Refunds bool
}

// HTTPAction is what a step asks of the middleware.
type HTTPAction int

const (
	// HTTPProceed: the request goes on, unchecked and with no headers.
	HTTPProceed HTTPAction = C.POLYLIMIT_HTTP_PROCEED
	// HTTPCheck: check Key for Cost on the rule's limiter, then Answer.
	HTTPCheck HTTPAction = C.POLYLIMIT_HTTP_CHECK
	// HTTPRespond: answer at once with Status (400, 401 or 403): Answer(step, nil).
	HTTPRespond HTTPAction = C.POLYLIMIT_HTTP_RESPOND
	// HTTPNeedAppKey: the rule keys by the application's key: describe the
	// request again with HTTPRequest.AppKey set.
	HTTPNeedAppKey HTTPAction = C.POLYLIMIT_HTTP_NEED_APP_KEY
	// HTTPNeedPlan: the rule's limit is the tenant's plan's, which the
	// application resolves: describe the request again with
	// HTTPRequest.Plan set. A LivePolicy's Decide does it with its resolver.
	HTTPNeedPlan HTTPAction = C.POLYLIMIT_HTTP_NEED_PLAN
)

// String is the action's name in tests/http/vectors.json: "proceed", "check",
// "respond" or "need_app_key".
func (a HTTPAction) String() string {
	switch a {
	case HTTPProceed:
		return "proceed"
	case HTTPCheck:
		return "check"
	case HTTPRespond:
		return "respond"
	case HTTPNeedAppKey:
		return "need_app_key"
	case HTTPNeedPlan:
		return "need_plan"
	}
	return "?"
}

// HTTPRequest describes a request to the policy. Only the headers the policy
// reads (HTTPPolicy.HeaderNames) are taken from Header; repeated ones are
// joined with ", ", in order.
type HTTPRequest struct {
	Method string
	Path   string // without the query
	Route  string // the framework's route template ("/users/{id}"); "": unknown
	Peer   string // the socket's other end, as Request.RemoteAddr gives it
	Header http.Header
	User   string // the authenticated user's id; "": anonymous
	Tenant string // the tenant's id; "": none
	// AppKey is the application's own key, for rules keyed by "app"; it is
	// read only when HasAppKey (an empty one is a missing key).
	AppKey    string
	HasAppKey bool
	Cost      int64 // > 0: this request's cost, instead of the rule's
	// Plan is the tenant's plan, as the application's resolver answered an
	// HTTPNeedPlan step; read only when HasPlan ("" then is the document's
	// default plan). A LivePolicy's Decide sets both when it resolves.
	Plan    string
	HasPlan bool
}

// HTTPStep is what to do with a request (Prepare, Decide).
type HTTPStep struct {
	Action HTTPAction
	Status int // HTTPRespond: 400, 401 or 403
	Rule   int // the rule that matched, or -1
	// Limiter is HTTPCheck's limiter, by index (HTTPPolicy.StepLimiter):
	// the application's limiters first, then the document's own.
	Limiter int
	Cost    int64  // HTTPCheck: the units to check
	Key     string // HTTPCheck: the key (secrets in it are hashed)
}

// HTTPResponse is the answer to give.
type HTTPResponse struct {
	Status int    // 0: the request goes on (with Headers); else the status to answer
	Body   string // the body; "" when going on
	// HeaderText is the headers as the library gives them, one
	// "Name: value\n" line each, in order: the rate-limit headers, and
	// Content-Type when there is a body. SetHeaders applies them.
	HeaderText string
}

// HTTPDecision is Decide's answer.
type HTTPDecision struct {
	Step     HTTPStep
	Checked  bool   // the check ran and decided: Result is its decision
	Result   Result // the check's decision
	CheckErr error  // the check's error, when it ran and failed (the Response says what to answer)
	Response HTTPResponse
}

// NewHTTPPolicy makes a policy from its JSON document (contract.md, "The
// policy document") and the limiters its rules name as "limiter": i. A
// document the library refuses is ErrInvalidArgument, its message naming the
// line and the field.
func NewHTTPPolicy(document string, limiters ...*Limiter) (*HTTPPolicy, error) {
	if err := checkVersion(); err != nil {
		return nil, err
	}
	p := &HTTPPolicy{limiters: append([]*Limiter(nil), limiters...)}
	var clients []*Client
	seen := make(map[*Limiter]bool, len(limiters))
	for i, l := range limiters {
		if l == nil {
			return nil, newError(ErrInvalidArgument, "limiters[%d] is nil", i)
		}
		if !containsClient(clients, l.client) {
			clients = append(clients, l.client)
		}
		seen[l] = true
	}
	if len(clients) == 1 {
		p.client = clients[0]
	}
	// The C ABI: no client closes and no limiter is freed during the call.
	for _, c := range clients {
		c.mu.RLock()
		defer c.mu.RUnlock()
	}
	handles := make([]*C.polylimit_limiter, len(limiters))
	for l := range seen {
		l.mu.RLock()
		defer l.mu.RUnlock()
	}
	for i, l := range limiters {
		if l.h == nil {
			return nil, newError(ErrClosed, "limiters[%d] is closed", i)
		}
		handles[i] = l.h
	}
	var hp **C.polylimit_limiter
	if len(handles) > 0 {
		hp = &handles[0]
	}
	var doc *C.char
	if len(document) > 0 {
		doc = (*C.char)(C.CBytes([]byte(document)))
		defer C.free(unsafe.Pointer(doc))
	} else {
		doc = (*C.char)(C.CBytes([]byte{0}))
		defer C.free(unsafe.Pointer(doc))
	}
	var cerr C.polylimit_error
	if st := C.polylimit_http_policy_new(doc, C.size_t(len(document)), hp, C.size_t(len(handles)), &p.h, &cerr); st != C.POLYLIMIT_OK {
		return nil, cError(st, &cerr)
	}
	p.readShape(document)
	runtime.SetFinalizer(p, (*HTTPPolicy).Close)
	return p, nil
}

// readShape reads the headers and rules of the policy p.h.
func (p *HTTPPolicy) readShape(document string) {
	n := int(C.polylimit_http_policy_header_count(p.h))
	for i := 0; i < n; i++ {
		name := C.GoString(C.polylimit_http_policy_header_name(p.h, C.size_t(i)))
		p.headers = append(p.headers, name)
		p.canon = append(p.canon, http.CanonicalHeaderKey(name))
	}
	n = int(C.polylimit_http_policy_rule_count(p.h))
	for i := 0; i < n; i++ {
		p.rules = append(p.rules, HTTPRule{
			Name:    C.GoString(C.polylimit_http_policy_rule_name(p.h, C.size_t(i))),
			Limiter: int(C.polylimit_http_policy_rule_limiter(p.h, C.size_t(i))),
			Refunds: C.polylimit_http_policy_rule_counts_all(p.h, C.size_t(i)) == 0,
		})
	}
}

func containsClient(cs []*Client, c *Client) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// Close frees the policy; calls after it return ErrClosed. Idempotent.
func (p *HTTPPolicy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h != nil {
		C.polylimit_http_policy_free(p.h)
		p.h = nil
		runtime.SetFinalizer(p, nil)
	}
	return nil
}

func errPolicyClosed() error { return newError(ErrClosed, "the HTTP policy is closed") }

// HeaderNames returns the request headers the policy reads, lower case.
func (p *HTTPPolicy) HeaderNames() []string { return append([]string(nil), p.headers...) }

// Rules returns the policy's rules, in document order.
func (p *HTTPPolicy) Rules() []HTTPRule { return append([]HTTPRule(nil), p.rules...) }

// RuleName returns the name of rule i ("" out of range, e.g. -1).
func (p *HTTPPolicy) RuleName(i int) string {
	if i < 0 || i >= len(p.rules) {
		return ""
	}
	return p.rules[i].Name
}

// Limiter returns the limiter rule i checks (nil for none).
func (p *HTTPPolicy) Limiter(rule int) *Limiter {
	if rule < 0 || rule >= len(p.rules) || p.rules[rule].Limiter < 0 {
		return nil
	}
	return p.limiters[p.rules[rule].Limiter]
}

// StepLimiter returns the limiter an HTTPCheck step checks on (nil for
// another step); a refund goes to the same one.
func (p *HTTPPolicy) StepLimiter(step HTTPStep) *Limiter {
	if step.Action != HTTPCheck || step.Limiter < 0 || step.Limiter >= len(p.limiters) {
		return nil
	}
	return p.limiters[step.Limiter]
}

// httpScratch is one request's C-facing memory: no Go pointer in what C is
// given (bytes, spans, and C structs C writes).
type httpScratch struct {
	buf   []byte
	spans []C.int64_t
	step  C.polylimit_http_step
	dec   C.polylimit_decision
	resp  C.polylimit_http_response
	cerr  C.polylimit_error
}

var scratchPool = sync.Pool{New: func() any { return new(httpScratch) }}

func (s *httpScratch) span(v string, present bool) {
	if !present {
		s.spans = append(s.spans, -1, 0)
		return
	}
	s.spans = append(s.spans, C.int64_t(len(s.buf)), C.int64_t(len(v)))
	s.buf = append(s.buf, v...)
}

// encode lays the request out for pl_http_call.
func (p *HTTPPolicy) encode(s *httpScratch, r *HTTPRequest) {
	s.buf = s.buf[:0]
	s.spans = s.spans[:0]
	s.span(r.Method, true)
	s.span(r.Path, true)
	s.span(r.Route, r.Route != "")
	s.span(r.Peer, true)
	s.span(r.User, r.User != "")
	s.span(r.Tenant, r.Tenant != "")
	s.span(r.AppKey, r.HasAppKey)
	s.span(r.Plan, r.HasPlan || p.noResolver)
	for _, name := range p.canon {
		vs := r.Header[name]
		if len(vs) == 0 {
			s.spans = append(s.spans, -1, 0)
			continue
		}
		start := len(s.buf)
		for i, v := range vs {
			if i > 0 {
				s.buf = append(s.buf, ", "...)
			}
			s.buf = append(s.buf, v...)
		}
		s.spans = append(s.spans, C.int64_t(start), C.int64_t(len(s.buf)-start))
	}
}

func (s *httpScratch) call(p *HTTPPolicy, r *HTTPRequest, decide bool) C.int {
	p.encode(s, r)
	var buf *C.char
	if len(s.buf) > 0 {
		buf = (*C.char)(unsafe.Pointer(&s.buf[0]))
	}
	d := C.int(0)
	if decide {
		d = 1
	}
	return C.pl_http_call(p.h, buf, &s.spans[0], C.size_t(len(p.headers)), C.int64_t(r.Cost), d, &s.step, &s.dec,
		&s.resp, &s.cerr)
}

func goStep(cs *C.polylimit_http_step) HTTPStep {
	st := HTTPStep{
		Action:  HTTPAction(cs.action),
		Status:  int(cs.status),
		Rule:    int(cs.rule),
		Limiter: int(cs.limiter),
		Cost:    int64(cs.cost),
	}
	if st.Action == HTTPCheck {
		st.Key = C.GoStringN(&cs.key[0], C.int(cs.key_len))
	}
	return st
}

// cStep is a step given back to C.
func cStep(st *HTTPStep, out *C.polylimit_http_step) error {
	if len(st.Key) > C.POLYLIMIT_HTTP_KEY_MAX {
		return newError(ErrInvalidArgument, "the step's key is over %d bytes", C.POLYLIMIT_HTTP_KEY_MAX)
	}
	out.action = C.int(st.Action)
	out.status = C.int(st.Status)
	out.rule = C.int(st.Rule)
	out.limiter = C.int(st.Limiter)
	out.cost = C.int64_t(st.Cost)
	out.key_len = C.size_t(len(st.Key))
	for i := 0; i < len(st.Key); i++ {
		out.key[i] = C.char(st.Key[i])
	}
	return nil
}

func goResponse(r *C.polylimit_http_response) HTTPResponse {
	out := HTTPResponse{Status: int(r.status)}
	if r.body_len > 0 {
		out.Body = C.GoStringN(r.body, C.int(r.body_len))
	}
	if r.headers_len > 0 {
		out.HeaderText = C.GoStringN(&r.headers[0], C.int(r.headers_len))
	}
	return out
}

// Prepare decides what to do with a request (no I/O).
func (p *HTTPPolicy) Prepare(r *HTTPRequest) (HTTPStep, error) {
	s := scratchPool.Get().(*httpScratch)
	defer scratchPool.Put(s)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.h == nil {
		return HTTPStep{}, errPolicyClosed()
	}
	if st := s.call(p, r, false); st != C.POLYLIMIT_OK {
		return HTTPStep{}, cError(st, &s.cerr)
	}
	return goStep(&s.step), nil
}

// Answer is the response for a step: HTTPRespond (res nil), or HTTPCheck with
// the check's decision (nil: the check failed: 503, or going on without
// headers when the policy's on_error is "allow").
func (p *HTTPPolicy) Answer(step HTTPStep, res *Result) (HTTPResponse, error) {
	s := scratchPool.Get().(*httpScratch)
	defer scratchPool.Put(s)
	if err := cStep(&step, &s.step); err != nil {
		return HTTPResponse{}, err
	}
	var dp *C.polylimit_decision
	if res != nil {
		s.dec = cDecision(*res)
		dp = &s.dec
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.h == nil {
		return HTTPResponse{}, errPolicyClosed()
	}
	if st := C.polylimit_http_answer(p.h, &s.step, dp, &s.resp, &s.cerr); st != C.POLYLIMIT_OK {
		return HTTPResponse{}, cError(st, &s.cerr)
	}
	return goResponse(&s.resp), nil
}

// RefundDue says whether a checked request's units go back now that its
// response has status: the rule's count_when does not count it, and Redis
// took them (an admitted decision, neither shadowed nor degraded).
func (p *HTTPPolicy) RefundDue(step HTTPStep, res Result, status int) bool {
	if step.Action != HTTPCheck {
		return false
	}
	s := scratchPool.Get().(*httpScratch)
	defer scratchPool.Put(s)
	if cStep(&step, &s.step) != nil {
		return false
	}
	s.dec = cDecision(res)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.h == nil {
		return false
	}
	return C.polylimit_http_refund_due(p.h, &s.step, &s.dec, C.int(status)) == 1
}

// Settle gives back a decided request's units when its response's status
// does not count (RefundDue, then Limiter.Refund on the rule's limiter).
// refunded says whether it did.
func (p *HTTPPolicy) Settle(ctx context.Context, d *HTTPDecision, status int) (refunded bool, err error) {
	if !d.Checked || d.Step.Rule < 0 || d.Step.Rule >= len(p.rules) || !p.rules[d.Step.Rule].Refunds {
		return false, nil
	}
	if !p.RefundDue(d.Step, d.Result, status) {
		return false, nil
	}
	l := p.StepLimiter(d.Step)
	if l == nil {
		return false, nil
	}
	if _, err := l.Refund(ctx, d.Step.Key, int(d.Step.Cost)); err != nil {
		return false, err
	}
	return true, nil
}

// Decide prepares, checks and answers a request. A step of HTTPNeedAppKey
// comes back as is: call Decide again with the application's key. A step of
// HTTPNeedPlan does too, except on a LivePolicy's current policy, whose
// Decide resolves the tenant's plan (LivePolicy's cache, then its resolver
// within the document's deadline; a failure or a timeout gives the default
// plan), sets r.Plan and r.HasPlan, and decides again. When ctx
// cannot end and one of its client's blocking checks is free
// (WithBlockingChecks), it is one blocking library call; otherwise the check
// runs on the limiter's own path (Limiter.AllowN: batched or queued, and
// honouring ctx). A failed check is an answer (503, or going on with
// on_error "allow"), with CheckErr set; the error is the policy's own (a
// closed policy, a malformed request).
func (p *HTTPPolicy) Decide(ctx context.Context, r *HTTPRequest) (HTTPDecision, error) {
	d, err := p.decide(ctx, r)
	if err == nil && d.Step.Action == HTTPNeedPlan && p.live != nil && !r.HasPlan {
		r.Plan, r.HasPlan = p.live.resolvePlan(ctx, p, r.Tenant), true
		d, err = p.decide(ctx, r)
	}
	return d, err
}

func (p *HTTPPolicy) decide(ctx context.Context, r *HTTPRequest) (HTTPDecision, error) {
	if ctx.Done() == nil && p.client != nil && p.client.async.tryBlocking() {
		d, err := p.decideBlocking(r)
		p.client.async.leave()
		return d, err
	}
	step, err := p.Prepare(r)
	if err != nil {
		return HTTPDecision{}, err
	}
	d := HTTPDecision{Step: step}
	switch step.Action {
	case HTTPCheck:
		var res Result
		var cerr error
		if l := p.StepLimiter(step); l != nil {
			res, cerr = l.AllowN(ctx, step.Key, int(step.Cost))
		} else {
			cerr = newError(ErrInternal, "the step names limiter %d of %d", step.Limiter, len(p.limiters))
		}
		if cerr != nil {
			d.CheckErr = cerr
			d.Response, err = p.Answer(step, nil)
		} else {
			d.Checked, d.Result = true, res
			d.Response, err = p.Answer(step, &res)
		}
	case HTTPRespond:
		d.Response, err = p.Answer(step, nil)
	}
	return d, err
}

func (p *HTTPPolicy) decideBlocking(r *HTTPRequest) (HTTPDecision, error) {
	s := scratchPool.Get().(*httpScratch)
	defer scratchPool.Put(s)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.h == nil {
		return HTTPDecision{}, errPolicyClosed()
	}
	p.client.mu.RLock() // the C ABI: the client does not close during the check
	st := s.call(p, r, true)
	p.client.mu.RUnlock()
	if st != C.POLYLIMIT_OK {
		return HTTPDecision{}, cError(st, &s.cerr)
	}
	d := HTTPDecision{Step: goStep(&s.step), Response: goResponse(&s.resp)}
	if d.Step.Action == HTTPCheck {
		// A check that failed leaves the decision zeroed (granted and
		// limit 0: no check decides with limit 0).
		if s.dec.limit != 0 {
			d.Checked, d.Result = true, decision(&s.dec)
		} else {
			d.CheckErr = newError(ErrUnavailable, "the check failed")
		}
	}
	return d, nil
}

// MetricsPrometheus returns the requests decided per rule and outcome, in
// the Prometheus text format: polylimit_http_requests_total{rule,outcome}.
func (p *HTTPPolicy) MetricsPrometheus() (string, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.h == nil {
		return "", errPolicyClosed()
	}
	var out *C.char
	var n C.size_t
	var cerr C.polylimit_error
	if st := C.polylimit_http_policy_metrics_prometheus(p.h, &out, &n, &cerr); st != C.POLYLIMIT_OK {
		return "", cError(st, &cerr)
	}
	defer C.polylimit_free(unsafe.Pointer(out))
	return C.GoStringN(out, C.int(n)), nil
}

// canonicalRateLimit holds the http.Header keys of the names the library
// writes, so that applying them does not canonicalize each time.
var canonicalRateLimit = map[string]string{
	"Retry-After":         "Retry-After",
	"RateLimit-Limit":     http.CanonicalHeaderKey("RateLimit-Limit"),
	"RateLimit-Remaining": http.CanonicalHeaderKey("RateLimit-Remaining"),
	"RateLimit-Reset":     http.CanonicalHeaderKey("RateLimit-Reset"),
	"RateLimit-Policy":    http.CanonicalHeaderKey("RateLimit-Policy"),
	"RateLimit":           http.CanonicalHeaderKey("RateLimit"),
	"Content-Type":        "Content-Type",
}

// SetHeaders sets the response's headers on h (each replaces what h had).
func (r *HTTPResponse) SetHeaders(h http.Header) {
	text := r.HeaderText
	if text == "" {
		return
	}
	n := strings.Count(text, "\n")
	values := make([]string, n)
	i := 0
	for text != "" && i < n {
		line := text
		if j := strings.IndexByte(text, '\n'); j >= 0 {
			line, text = text[:j], text[j+1:]
		} else {
			text = ""
		}
		k := strings.Index(line, ": ")
		if k <= 0 {
			continue
		}
		name := line[:k]
		if c, ok := canonicalRateLimit[name]; ok {
			name = c
		} else {
			name = http.CanonicalHeaderKey(name)
		}
		values[i] = line[k+2:]
		h[name] = values[i : i+1 : i+1]
		i++
	}
}

// The HTTP policy's answers (capi/vocabulary): plain text bodies.
const (
	HTTPContentType         = C.POLYLIMIT_HTTP_CONTENT_TYPE
	HTTPBodyTooManyRequests = C.POLYLIMIT_HTTP_BODY_TOO_MANY_REQUESTS
	HTTPBodyUnavailable     = C.POLYLIMIT_HTTP_BODY_UNAVAILABLE
	HTTPBodyNoKey           = C.POLYLIMIT_HTTP_BODY_NO_KEY
	HTTPBodyNoCredential    = C.POLYLIMIT_HTTP_BODY_NO_CREDENTIAL
	HTTPBodyBadCost         = C.POLYLIMIT_HTTP_BODY_BAD_COST
	HTTPBodyForbidden       = C.POLYLIMIT_HTTP_BODY_FORBIDDEN
)
