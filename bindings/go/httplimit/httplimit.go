// Package httplimit is net/http middleware for polylimit: every request is
// checked against a polylimit.Limiter, shared through Redis by every process
// that serves the same routes, whatever their language.
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
// What a request gets:
//
//   - An exempt path (WithExempt, WithSkip), or a path that matches no route
//     when the middleware has no default limiter: the handler, untouched.
//   - Admitted: the handler, with the rate-limit headers already set on the
//     response (Limiter.Headers: RateLimit-Limit, -Remaining, -Reset, and the
//     IETF draft's RateLimit-Policy and RateLimit). The decision is in the
//     request's context: FromContext.
//   - Denied: 429 Too Many Requests with the same headers plus Retry-After,
//     from the denied handler (WithDeniedHandler; the default writes a short
//     text body). The handler is not called.
//   - No decision: the error handler (WithErrorHandler). The default answers
//     503 Service Unavailable when the limiter fails (Redis down with the
//     limiter's FailError policy, a closed limiter, ...; the other failure
//     policies, polylimit.WithFailurePolicy, answer with a decision instead:
//     FailOpen admits, FailClosed denies, FailLocal decides in process),
//     503 when the request's context ends before the decision (its
//     deadline, or WithTimeout's), and, when the key function finds no key,
//     400 Bad Request (ErrNoKey) or 401 Unauthorized (ErrNoCredential).
//     Errors never panic.
//   - No key, with WithMissingKey(MissingKeySkip): the handler, untouched. A
//     request without a key is never let through unlimited unless asked for
//     by name (docs/integrations/README.md, "Missing keys": the rule every
//     language's integrations share).
//
// WithCountWhen counts only the requests whose response matches (failed
// logins, say): the check still comes first, and the unit of a response that
// does not count is refunded after the handler.
//
// A context that ends abandons the check in the background (see
// polylimit.Limiter): that check may still have consumed a unit.
package httplimit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

// Option configures New.
type Option func(*config)

type route struct {
	pattern string
	limiter *polylimit.Limiter
}

type config struct {
	key     KeyFunc
	missing MissingKey
	trusted []netip.Prefix
	routes  []route // longest pattern first
	exempt  []string
	skip    func(*http.Request) bool
	timeout time.Duration
	denied  http.Handler
	onError func(http.ResponseWriter, *http.Request, error)
	count   func(status int) bool
}

// WithKeyFunc sets how a request's key is found (default: KeyByIP with the
// trusted proxies of WithTrustedProxies). See KeyByIP and KeyByHeader.
func WithKeyFunc(f KeyFunc) Option { return func(c *config) { c.key = f } }

// MissingKey says what a request gets when the key function finds no key
// (it returns an error that is ErrNoKey). The names are those of every
// language's integrations (reject, skip).
type MissingKey int

const (
	// MissingKeyReject, the default, answers through the error handler:
	// 400 Bad Request, or 401 Unauthorized for ErrNoCredential.
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

// WithMissingKey sets what a request without a key gets, for every limit of
// this middleware (they share its key function; use a second middleware for
// a limit with another rule). The default is MissingKeyReject: only
// MissingKeySkip lets such requests through unlimited.
func WithMissingKey(m MissingKey) Option { return func(c *config) { c.missing = m } }

// WithCountWhen counts a request only when countWhen says its response
// status counts, e.g. func(s int) bool { return s >= 400 } for failed logins
// (the brute-force pattern). The request is checked before the handler as
// usual, so a key over its limit is refused even when its request would not
// have counted, and at most the limit's worth of requests per key run at once
// (checking after each response instead would let a burst of parallel
// attempts all through before any of them is counted). After the handler, an
// admitted request whose status does not count gets its unit back
// (Limiter.Refund; a failed refund leaves it counted). The status is the one
// the handler wrote (200 when it wrote a body without WriteHeader); a handler
// that panics is not refunded. The rate-limit headers are those of the check.
func WithCountWhen(countWhen func(status int) bool) Option {
	return func(c *config) { c.count = countWhen }
}

// WithTrustedProxies names the proxies whose X-Forwarded-For the default
// key function believes (ParseTrustedProxies reads them from strings). Only
// for the default key: with WithKeyFunc, pass them to KeyByIP yourself.
func WithTrustedProxies(prefixes ...netip.Prefix) Option {
	return func(c *config) { c.trusted = append(c.trusted, prefixes...) }
}

// WithRoute limits the requests whose path matches pattern with limiter
// instead of the default one. A pattern is an exact path ("/login"), or a
// subtree when it ends in a slash ("/api/" matches "/api/..." and "/api/");
// the longest matching pattern wins, paths are matched once cleaned
// (path.Clean, so "/x/../login" is "/login"). A route has its own count: its
// limiter is asked for "<pattern> <key>", so one limiter can serve several
// routes, each with its own budget. Different limits should still use
// different prefixes (polylimit.WithPrefix).
func WithRoute(pattern string, limiter *polylimit.Limiter) Option {
	return func(c *config) { c.routes = append(c.routes, route{pattern, limiter}) }
}

// WithExempt lets requests whose path matches one of the patterns through
// without a check or headers: exact paths, or subtrees ending in a slash, as
// for WithRoute (e.g. "/healthz", "/metrics", "/static/").
func WithExempt(patterns ...string) Option {
	return func(c *config) { c.exempt = append(c.exempt, patterns...) }
}

// WithSkip lets the requests for which skip returns true through without a
// check or headers (e.g. OPTIONS preflights, or callers on an allow-list).
func WithSkip(skip func(*http.Request) bool) Option { return func(c *config) { c.skip = skip } }

// WithTimeout bounds each check: it runs under the request's context with
// this timeout (0: the request's context alone, bounded by the client's
// command timeout). A check that times out gets the error handler (503 by
// default).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithDeniedHandler answers denied requests. The rate-limit headers,
// Retry-After among them, are already set; the handler writes the status
// (429 Too Many Requests, unless it has reasons of its own) and the body.
// FromContext(r.Context()) has the decision.
func WithDeniedHandler(h http.Handler) Option { return func(c *config) { c.denied = h } }

// WithErrorHandler answers requests that got no decision: err is the key
// function's error, a *polylimit.Error, or a *polylimit.ContextError (use
// errors.Is with ErrNoKey, polylimit.ErrUnavailable, context.DeadlineExceeded
// ...). It may also call a handler of its own, e.g. to serve the request
// anyway (fail open): a deadline is not covered by the limiter's failure
// policy. The default is DefaultErrorHandler.
func WithErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(c *config) { c.onError = f }
}

// DefaultErrorHandler answers 401 Unauthorized for ErrNoCredential, 400 Bad
// Request for ErrNoKey and 503 Service Unavailable for everything else (a
// failing limiter, a context that ended before the decision), with a short
// text body that does not reveal the error.
func DefaultErrorHandler(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrNoCredential):
		http.Error(w, "no credential to rate-limit the request by", http.StatusUnauthorized)
	case errors.Is(err, ErrNoKey):
		http.Error(w, "no rate-limit key in the request", http.StatusBadRequest)
	case errors.Is(err, context.DeadlineExceeded):
		http.Error(w, "rate limit check timed out", http.StatusServiceUnavailable)
	default:
		http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
	}
}

// defaultDenied writes 429 with a text body.
func defaultDenied(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusTooManyRequests)
	io.WriteString(w, "Too Many Requests\n")
}

type ctxKey struct{}

// FromContext returns the decision the middleware made for this request
// (in the handler's or the denied handler's r.Context()); false when the
// request was not checked.
func FromContext(ctx context.Context) (polylimit.Result, bool) {
	r, ok := ctx.Value(ctxKey{}).(polylimit.Result)
	return r, ok
}

// New returns the middleware: every request not exempt is checked against
// the limiter of its route (WithRoute), else against limiter. A nil limiter
// leaves the requests of no route unlimited.
func New(limiter *polylimit.Limiter, opts ...Option) func(http.Handler) http.Handler {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	if c.key == nil {
		c.key = KeyByIP(c.trusted...)
	}
	if c.denied == nil {
		c.denied = http.HandlerFunc(defaultDenied)
	}
	if c.onError == nil {
		c.onError = DefaultErrorHandler
	}
	sort.SliceStable(c.routes, func(i, j int) bool { return len(c.routes[i].pattern) > len(c.routes[j].pattern) })
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.serve(limiter, next, w, r)
		})
	}
}

// matches says whether a cleaned path matches a pattern: exactly, or below a
// pattern that ends in a slash.
func matches(pattern, p string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(p, pattern)
	}
	return p == pattern
}

// cleanPath is path.Clean that keeps a trailing slash ("/api/" stays "/api/").
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	cp := path.Clean(p)
	if strings.HasSuffix(p, "/") && cp != "/" {
		cp += "/"
	}
	return cp
}

func (c *config) serve(def *polylimit.Limiter, next http.Handler, w http.ResponseWriter, r *http.Request) {
	p := cleanPath(r.URL.Path)
	for _, e := range c.exempt {
		if matches(e, p) {
			next.ServeHTTP(w, r)
			return
		}
	}
	if c.skip != nil && c.skip(r) {
		next.ServeHTTP(w, r)
		return
	}
	limiter, prefix := def, ""
	for _, rt := range c.routes {
		if matches(rt.pattern, p) {
			limiter, prefix = rt.limiter, rt.pattern+" "
			break
		}
	}
	if limiter == nil {
		next.ServeHTTP(w, r)
		return
	}
	key, err := c.key(r)
	if err != nil {
		if c.missing == MissingKeySkip && errors.Is(err, ErrNoKey) {
			next.ServeHTTP(w, r)
			return
		}
		c.onError(w, r, err)
		return
	}
	ctx := r.Context()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	res, err := limiter.Allow(ctx, prefix+key)
	if err != nil {
		c.onError(w, r, err)
		return
	}
	headers, err := limiter.Headers(res)
	if err != nil {
		c.onError(w, r, err)
		return
	}
	h := w.Header()
	for name, values := range headers {
		h[name] = values
	}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, res))
	if !res.Allowed {
		c.denied.ServeHTTP(w, r)
		return
	}
	// Only units Redis took can be given back: not a shadowed would-be
	// denial's, nor a degraded decision's (it came from the failure policy).
	if c.count == nil || res.Shadowed || res.Degraded {
		next.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	if sw.status == 0 {
		sw.status = http.StatusOK // nothing written: net/http answers 200
	}
	if !c.count(sw.status) {
		// The request's context may be done once the handler returned.
		rctx := context.Background()
		if c.timeout > 0 {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(rctx, c.timeout)
			defer cancel()
		}
		_, _ = limiter.Refund(rctx, prefix+key, 1)
	}
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
