//go:build cgo
// +build cgo

package polylimit

/*
#include <stdlib.h>
#include <polylimit.h>
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// PlanResolver answers a tenant's plan for a LivePolicy whose document has
// a resolver section and does not name the tenant in its tenants table. It
// is called with a context whose deadline is the document's
// resolver.timeout_ms; an error, a panic or an answer after the deadline
// gives the document's default plan (the request is not held past the
// deadline, whether or not the resolver honours its context). Answers are
// cached by the library (resolver.cache_ttl_ms, resolver.cache_size).
type PlanResolver func(ctx context.Context, tenant string) (string, error)

// LiveOption configures NewLivePolicy and OpenLivePolicy.
type LiveOption func(*liveConfig)

type liveConfig struct {
	limiters []*Limiter
	resolver PlanResolver
	watch    time.Duration
	watchSet bool
}

// WithAppLimiters gives the application's limiters, which the document's
// rules name as "limiter": i.
func WithAppLimiters(limiters ...*Limiter) LiveOption {
	return func(c *liveConfig) { c.limiters = append(c.limiters, limiters...) }
}

// WithPlanResolver gives the resolver of the tenants the document's tenants
// table does not name (the document must have a resolver section).
func WithPlanResolver(f PlanResolver) LiveOption { return func(c *liveConfig) { c.resolver = f } }

// WithWatch has OpenLivePolicy check its file every d and reload it when it
// changed (default 100ms; 0: never, ReloadFile only).
func WithWatch(d time.Duration) LiveOption {
	return func(c *liveConfig) { c.watch, c.watchSet = d, true }
}

// LivePolicy is an HTTP policy that can be replaced while requests run
// (docs/policy.md): made from a document, TOML or JSON, whose rules may
// name their own limits and the tenants' plans, or opened from a file that
// it may watch. Per request, Current gives the policy in force (close it
// once the response is settled); Reload swaps in a new one atomically, so
// requests in flight finish on the one they took. A document with an error
// is refused, its message naming the line, and the old policy stays. Keys'
// state is kept across reloads. It is safe for concurrent use; close it
// before its Client.
type LivePolicy struct {
	mu       sync.RWMutex // held shared by every call into C, exclusively by Close
	h        *C.polylimit_http_live
	client   *Client
	app      []*Limiter
	resolver PlanResolver
	view     atomic.Pointer[policyView] // the current policy's shape and limiters
}

// policyView is what a policy id's requests share: its headers, rules and
// limiters (the application's, then handles on the document's own).
type policyView struct {
	id       uint64
	headers  []string
	canon    []string
	rules    []HTTPRule
	limiters []*Limiter
	client   *Client
}

// NewLivePolicy makes a live policy on client from a document (TOML, or
// JSON when its first character is '{'). A document the library refuses is
// ErrInvalidArgument, its message naming the line.
func NewLivePolicy(client *Client, document string, opts ...LiveOption) (*LivePolicy, error) {
	return newLive(client, opts, func(hp **C.polylimit_limiter, n C.size_t, out **C.polylimit_http_live, cerr *C.polylimit_error) C.int {
		doc := C.CBytes(append([]byte(document), 0))
		defer C.free(doc)
		return C.polylimit_http_live_new(client.h, (*C.char)(doc), C.size_t(len(document)), hp, n, out, cerr)
	})
}

// NewLivePolicyFromMap is NewLivePolicy for a document given as Go values
// (encoded as JSON).
func NewLivePolicyFromMap(client *Client, document map[string]any, opts ...LiveOption) (*LivePolicy, error) {
	text, err := json.Marshal(document)
	if err != nil {
		return nil, err
	}
	return NewLivePolicy(client, string(text), opts...)
}

// OpenLivePolicy makes a live policy on client from a file, which it checks
// every 100ms (WithWatch) and reloads when it changed; a refused document
// leaves the old policy (LastError says why).
func OpenLivePolicy(client *Client, path string, opts ...LiveOption) (*LivePolicy, error) {
	cfg := liveConfig{watch: 100 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	watch := int(cfg.watch / time.Millisecond)
	if cfg.watch > 0 && watch == 0 {
		watch = 1
	}
	cpath, err := cString("path", path)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpath))
	return newLive(client, opts, func(hp **C.polylimit_limiter, n C.size_t, out **C.polylimit_http_live, cerr *C.polylimit_error) C.int {
		return C.polylimit_http_live_open(client.h, cpath, hp, n, C.int(watch), out, cerr)
	})
}

func newLive(client *Client, opts []LiveOption,
	mk func(**C.polylimit_limiter, C.size_t, **C.polylimit_http_live, *C.polylimit_error) C.int) (*LivePolicy, error) {
	if err := checkVersion(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, newError(ErrInvalidArgument, "the client is nil")
	}
	var cfg liveConfig
	for _, o := range opts {
		o(&cfg)
	}
	l := &LivePolicy{client: client, app: append([]*Limiter(nil), cfg.limiters...), resolver: cfg.resolver}
	// The C ABI: no client closes and no limiter is freed during the call.
	locked := map[*Client]bool{client: true}
	client.mu.RLock()
	defer client.mu.RUnlock()
	seen := make(map[*Limiter]bool, len(l.app))
	handles := make([]*C.polylimit_limiter, len(l.app))
	for i, lim := range l.app {
		if lim == nil {
			return nil, newError(ErrInvalidArgument, "limiters[%d] is nil", i)
		}
		if !locked[lim.client] {
			locked[lim.client] = true
			lim.client.mu.RLock()
			defer lim.client.mu.RUnlock()
		}
		if !seen[lim] {
			seen[lim] = true
			lim.mu.RLock()
			defer lim.mu.RUnlock()
		}
		if lim.h == nil {
			return nil, newError(ErrClosed, "limiters[%d] is closed", i)
		}
		handles[i] = lim.h
	}
	if client.h == nil {
		return nil, errClientClosed()
	}
	var hp **C.polylimit_limiter
	if len(handles) > 0 {
		hp = &handles[0]
	}
	var cerr C.polylimit_error
	var h *C.polylimit_http_live
	if st := mk(hp, C.size_t(len(handles)), &h, &cerr); st != C.POLYLIMIT_OK {
		return nil, cError(st, &cerr)
	}
	l.h = h
	if l.resolver == nil {
		cur := C.polylimit_http_live_current(l.h)
		timeout := C.polylimit_http_policy_resolver_timeout_ms(cur)
		C.polylimit_http_policy_free(cur)
		if timeout > 0 {
			C.polylimit_http_live_free(l.h)
			l.h = nil
			return nil, newError(ErrInvalidArgument,
				"the policy document has a resolver section but no plan resolver was given (WithPlanResolver)")
		}
	}
	runtime.SetFinalizer(l, (*LivePolicy).Close)
	return l, nil
}

func errLiveClosed() error { return newError(ErrClosed, "the live policy is closed") }

// Close stops the watch and frees the live policy (policies taken by Current
// stay usable until closed). Idempotent.
func (l *LivePolicy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.h != nil {
		C.polylimit_http_live_free(l.h)
		l.h = nil
		runtime.SetFinalizer(l, nil)
	}
	return nil
}

// Current returns the policy in force, for one request: prepare, check,
// answer and refund on it, then Close it. Its Decide resolves tenants' plans
// with the live policy's resolver.
func (l *LivePolicy) Current() (*HTTPPolicy, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return nil, errLiveClosed()
	}
	h := C.polylimit_http_live_current(l.h)
	id := uint64(C.polylimit_http_policy_id(h))
	v := l.view.Load()
	if v == nil || v.id != id {
		var err error
		if v, err = l.newView(h, id); err != nil {
			C.polylimit_http_policy_free(h)
			return nil, err
		}
		l.view.Store(v)
	}
	p := &HTTPPolicy{h: h, limiters: v.limiters, client: v.client, headers: v.headers, canon: v.canon, rules: v.rules,
		noResolver: l.resolver == nil, live: l}
	runtime.SetFinalizer(p, (*HTTPPolicy).Close)
	return p, nil
}

// newView reads policy h's shape and takes handles on its own limiters.
// Those handles are freed when the view is no longer used (the Limiters'
// finalizers), as the policy's reference keeps them valid until then.
func (l *LivePolicy) newView(h *C.polylimit_http_policy, id uint64) (*policyView, error) {
	shape := &HTTPPolicy{h: h}
	shape.readShape("")
	v := &policyView{id: id, headers: shape.headers, canon: shape.canon, rules: shape.rules}
	n := int(C.polylimit_http_policy_limiter_count(h))
	clients := map[*Client]bool{}
	l.client.mu.RLock()
	defer l.client.mu.RUnlock()
	if l.client.h == nil {
		return nil, errClientClosed()
	}
	for i := 0; i < n; i++ {
		if i < len(l.app) {
			v.limiters = append(v.limiters, l.app[i])
			clients[l.app[i].client] = true
			continue
		}
		var lh *C.polylimit_limiter
		var cerr C.polylimit_error
		if st := C.polylimit_http_policy_limiter(h, C.size_t(i), &lh, &cerr); st != C.POLYLIMIT_OK {
			for _, x := range v.limiters[len(l.app):] {
				x.Close()
			}
			return nil, cError(st, &cerr)
		}
		lim := &Limiter{client: l.client, h: lh}
		runtime.SetFinalizer(lim, (*Limiter).Close)
		v.limiters = append(v.limiters, lim)
		clients[l.client] = true
	}
	if len(clients) <= 1 {
		v.client = l.client
		for c := range clients {
			v.client = c
		}
	}
	return v, nil
}

// resolvePlan is a NEED_PLAN step's plan: the cache's, else the resolver's
// within the policy's deadline, else "" (the default plan).
func (l *LivePolicy) resolvePlan(ctx context.Context, p *HTTPPolicy, tenant string) string {
	if plan, ok := l.CachedPlan(tenant); ok {
		return plan
	}
	if l.resolver == nil {
		return ""
	}
	timeout := time.Duration(C.polylimit_http_policy_resolver_timeout_ms(p.h)) * time.Millisecond
	if timeout <= 0 {
		return ""
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	type answer struct {
		plan string
		err  error
	}
	ch := make(chan answer, 1) // the resolver never blocks on it, even late
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- answer{err: fmt.Errorf("the plan resolver panicked: %v", r)}
			}
		}()
		plan, err := l.resolver(rctx, tenant)
		ch <- answer{plan, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil || rctx.Err() != nil {
			return ""
		}
		_ = l.CachePlan(tenant, a.plan)
		return a.plan
	case <-rctx.Done():
		return ""
	case <-ctx.Done(): // the request is gone: any plan will do
		return ""
	}
}

// CachedPlan returns the resolver's cached, fresh answer for tenant.
func (l *LivePolicy) CachedPlan(tenant string) (string, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil || tenant == "" {
		return "", false
	}
	var buf [256]C.char
	t := C.CString(tenant)
	defer C.free(unsafe.Pointer(t))
	if C.polylimit_http_live_cached_plan(l.h, t, C.size_t(len(tenant)), &buf[0], C.size_t(len(buf))) != 1 {
		return "", false
	}
	return C.GoString(&buf[0]), true
}

// CachePlan caches a resolver's answer for tenant (the document's
// resolver.cache_ttl_ms and cache_size bound the cache).
func (l *LivePolicy) CachePlan(tenant, plan string) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return errLiveClosed()
	}
	t := C.CBytes(append([]byte(tenant), 0))
	defer C.free(t)
	pl := C.CBytes(append([]byte(plan), 0))
	defer C.free(pl)
	var cerr C.polylimit_error
	if st := C.polylimit_http_live_cache_plan(l.h, (*C.char)(t), C.size_t(len(tenant)), (*C.char)(pl), C.size_t(len(plan)),
		&cerr); st != C.POLYLIMIT_OK {
		return cError(st, &cerr)
	}
	return nil
}

// Reload replaces the policy by document, or refuses it
// (ErrInvalidArgument, the message naming the line): the old one stays.
func (l *LivePolicy) Reload(document string) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return errLiveClosed()
	}
	l.client.mu.RLock() // the reload makes limiters on the client
	defer l.client.mu.RUnlock()
	if l.client.h == nil {
		return errClientClosed()
	}
	doc := C.CBytes(append([]byte(document), 0))
	defer C.free(doc)
	var cerr C.polylimit_error
	if st := C.polylimit_http_live_reload(l.h, (*C.char)(doc), C.size_t(len(document)), &cerr); st != C.POLYLIMIT_OK {
		return cError(st, &cerr)
	}
	return nil
}

// ReloadMap is Reload for a document given as Go values (encoded as JSON).
func (l *LivePolicy) ReloadMap(document map[string]any) error {
	text, err := json.Marshal(document)
	if err != nil {
		return err
	}
	return l.Reload(string(text))
}

// ReloadFile reads the file again (OpenLivePolicy only) and reloads it.
func (l *LivePolicy) ReloadFile() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return errLiveClosed()
	}
	l.client.mu.RLock()
	defer l.client.mu.RUnlock()
	if l.client.h == nil {
		return errClientClosed()
	}
	var cerr C.polylimit_error
	if st := C.polylimit_http_live_reload_file(l.h, &cerr); st != C.POLYLIMIT_OK {
		return cError(st, &cerr)
	}
	return nil
}

// Generation is 1 after creation, plus one per accepted reload (0 once
// closed).
func (l *LivePolicy) Generation() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return 0
	}
	return uint64(C.polylimit_http_live_generation(l.h))
}

// LastError is the last refused reload's message ("" since an accepted one).
func (l *LivePolicy) LastError() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return ""
	}
	var out *C.char
	var n C.size_t
	var cerr C.polylimit_error
	if C.polylimit_http_live_last_error(l.h, &out, &n, &cerr) != C.POLYLIMIT_OK {
		return ""
	}
	defer C.polylimit_free(unsafe.Pointer(out))
	return C.GoStringN(out, C.int(n))
}

// MetricsPrometheus returns the current policy's requests per rule and
// outcome and polylimit_http_policy_reloads_total, in the Prometheus text
// format.
func (l *LivePolicy) MetricsPrometheus() (string, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return "", errLiveClosed()
	}
	var out *C.char
	var n C.size_t
	var cerr C.polylimit_error
	if st := C.polylimit_http_live_metrics_prometheus(l.h, &out, &n, &cerr); st != C.POLYLIMIT_OK {
		return "", cError(st, &cerr)
	}
	defer C.polylimit_free(unsafe.Pointer(out))
	return C.GoStringN(out, C.int(n)), nil
}
