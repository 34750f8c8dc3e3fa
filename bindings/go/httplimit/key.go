package httplimit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

// KeyFunc returns the rate-limit key of a request: requests with the same
// key share one limit.
//
// The key functions of this package (KeyByIP, KeyByHeader, KeyByAPIKey)
// stand for key parts of the library's request policy (docs/integrations/
// contract.md, "Keys"): given to WithKeyFunc, the middleware asks the policy
// for the key, as every language's middleware does, and the function itself
// is never called. Called directly, they answer what the policy would.
//
// A function of your own is the policy's "app" key part: the middleware
// calls it when the rule needs it, and the key is used as returned. An error
// that is ErrNoKey (errors.Is; ErrNoCredential is one too) means the request
// has no key: 400 Bad Request, or going on unchecked with
// WithMissingKey(MissingKeySkip). Any other error goes to the error handler.
type KeyFunc func(r *http.Request) (string, error)

// ErrNoKey: the request has no rate-limit key (the policy answered 400, or a
// KeyFunc found none).
var ErrNoKey = errors.New("httplimit: the request has no rate-limit key")

// ErrNoCredential: the rule's key is a credential (an API key, a user, a
// tenant) and the request has none (the policy answered 401). It is also
// ErrNoKey (errors.Is).
var ErrNoCredential error = noCredential{}

type noCredential struct{}

func (noCredential) Error() string {
	return "httplimit: the request has no credential to rate-limit it by"
}

// Is makes a missing credential a missing key too.
func (noCredential) Is(target error) bool { return target == ErrNoKey }

// ErrForbidden: the client is on the policy's deny list (403).
var ErrForbidden = errors.New("httplimit: the client is on the deny list")

// ErrInvalidCost: the request's cost header is not a whole number from 1 to
// the rule's max (400).
var ErrInvalidCost = errors.New("httplimit: invalid request cost")

// probeRequest is what the middleware calls a KeyFunc with, once, to learn
// the key part it stands for: this package's functions answer a *keyPart
// error. An application's function sees a plain GET / from no address.
var probeRequest = &http.Request{Method: "GET", URL: &url.URL{Path: "/"}, Proto: "HTTP/1.1", ProtoMajor: 1,
	ProtoMinor: 1, Header: http.Header{}, Host: "probe.invalid", RequestURI: "/"}

// keyPart is the policy key a KeyFunc of this package stands for.
type keyPart struct {
	key     []string // alternatives, each a composition
	trusted []string // trusted proxies it brings
	app     KeyFunc  // the "app" part's function, if any
}

func (*keyPart) Error() string { return "httplimit: a key part" }

// partOf returns the key part f stands for: its own, or "app" for a
// function of the application.
func partOf(f KeyFunc) (kp *keyPart) {
	app := &keyPart{key: []string{"app"}, app: f}
	defer func() {
		if recover() != nil { // an application's function that cannot take the probe
			kp = app
		}
	}()
	if _, err := f(probeRequest); errors.As(err, &kp) {
		return kp
	}
	return app
}

func (kp *keyPart) keyFunc() KeyFunc {
	return func(r *http.Request) (string, error) {
		if r == probeRequest {
			return "", kp
		}
		return kp.compute(r)
	}
}

// The policies that compute keys for direct calls: one per key part, on a
// memory:// limiter that is never checked (Prepare does no I/O).
var probes struct {
	mu       sync.Mutex
	limiter  *polylimit.Limiter
	err      error
	policies map[string]*polylimit.HTTPPolicy
}

func probePolicy(doc string) (*polylimit.HTTPPolicy, error) {
	probes.mu.Lock()
	defer probes.mu.Unlock()
	if p, ok := probes.policies[doc]; ok {
		return p, nil
	}
	if probes.limiter == nil && probes.err == nil {
		c, err := polylimit.Open("memory://")
		if err == nil {
			probes.limiter, err = c.Limiter("1/s")
		}
		probes.err = err
	}
	if probes.err != nil {
		return nil, probes.err
	}
	p, err := polylimit.NewHTTPPolicy(doc, probes.limiter)
	if err != nil {
		return nil, err
	}
	if probes.policies == nil {
		probes.policies = make(map[string]*polylimit.HTTPPolicy)
	}
	probes.policies[doc] = p
	return p, nil
}

// keyValue is a policy's "key" field: a composition, or alternatives.
func keyValue(alts []string) any {
	if len(alts) == 1 {
		return alts[0]
	}
	return alts
}

func (kp *keyPart) compute(r *http.Request) (string, error) {
	return probeKey(r, map[string]any{"trusted_proxies": nonNil(kp.trusted)}, keyValue(kp.key), kp.app)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// probeKey asks a one-rule policy for a request's key.
func probeKey(r *http.Request, doc map[string]any, key any, app KeyFunc) (string, error) {
	doc["rules"] = []any{map[string]any{"name": "key", "limiter": 0, "key": key}}
	text, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	p, err := probePolicy(string(text))
	if err != nil {
		return "", err
	}
	req := describe(r)
	step, err := p.Prepare(&req)
	if err == nil && step.Action == polylimit.HTTPNeedAppKey {
		if err = appKey(r, app, &req); err == nil {
			step, err = p.Prepare(&req)
		}
	}
	if err != nil {
		return "", err
	}
	switch step.Action {
	case polylimit.HTTPCheck:
		return step.Key, nil
	case polylimit.HTTPRespond:
		return "", statusError(step.Status)
	}
	return "", ErrNoKey
}

// statusError is the error for a status the policy answered at once.
func statusError(status int) error {
	switch status {
	case http.StatusUnauthorized:
		return ErrNoCredential
	case http.StatusForbidden:
		return ErrForbidden
	}
	return ErrNoKey
}

// appKey calls the application's key function for the "app" part: its
// ErrNoKey is an empty key (missing), any other error is returned.
func appKey(r *http.Request, app KeyFunc, req *polylimit.HTTPRequest) error {
	req.HasAppKey = true
	if app == nil {
		return nil
	}
	k, err := app(r)
	if err != nil {
		if errors.Is(err, ErrNoKey) {
			return nil
		}
		return err
	}
	req.AppKey = k
	return nil
}

// describe is a request as the policy reads it.
func describe(r *http.Request) polylimit.HTTPRequest {
	return polylimit.HTTPRequest{Method: r.Method, Path: r.URL.Path, Peer: r.RemoteAddr, Header: r.Header}
}

// KeyByIP keys requests by client address: the policy's "ip" key part
// ("ip:192.0.2.1"; IPv6 by its /64: "ip:2001:db8:1:2::/64"), with these
// trusted proxies added to the policy's (WithTrustedProxies). See ClientIP.
//
// Never trust proxies you do not run: X-Forwarded-For is written by the
// client first, so a client that talks to the server directly could claim
// any address and spread its requests over as many limits as it likes.
func KeyByIP(trustedProxies ...netip.Prefix) KeyFunc {
	return (&keyPart{key: []string{"ip"}, trusted: prefixStrings(trustedProxies)}).keyFunc()
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// ClientIP returns the client address of a request as the policy finds it
// (contract.md, "The client's address"): the peer's (RemoteAddr), or, when
// the peer is a trusted proxy, the first untrusted hop of X-Forwarded-For
// from the right. A RemoteAddr that is no address is ErrNoKey.
func ClientIP(r *http.Request, trustedProxies []netip.Prefix) (netip.Addr, error) {
	key, err := probeKey(r, map[string]any{"trusted_proxies": prefixStrings(trustedProxies), "ipv6_prefix": 128}, "ip", nil)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q is not an IP address", ErrNoKey, r.RemoteAddr)
	}
	return netip.ParseAddr(strings.TrimPrefix(key, "ip:"))
}

// ParseTrustedProxies parses addresses and CIDR prefixes ("10.0.0.0/8",
// "127.0.0.1", "::1", "fd00::/8") for KeyByIP and WithTrustedProxies. A
// single address is a prefix of its full length.
func ParseTrustedProxies(list ...string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("httplimit: trusted proxy %q: %v", s, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("httplimit: trusted proxy %q: %v", s, err)
		}
		out = append(out, netip.PrefixFrom(a.WithZone(""), a.WithZone("").BitLen()))
	}
	return out, nil
}

// KeyByHeader keys requests by the value of a header: the policy's
// "header:<Name>" key part ("header:<lower-case name>:<SHA-256 hex>", so no
// secret reaches Redis). A request without the header (or with an empty
// one) is keyed by fallback; with a nil fallback it has no key (400).
func KeyByHeader(name string, fallback KeyFunc) KeyFunc {
	kp := &keyPart{key: []string{"header:" + name}}
	if fallback != nil {
		f := partOf(fallback)
		kp.key = append(kp.key, f.key...)
		kp.trusted, kp.app = f.trusted, f.app
	}
	return kp.keyFunc()
}

// KeyByAPIKey keys requests by an API key in a header: the policy's
// "api_key:<Header>" key part ("apikey:<SHA-256 hex>"). The key is a
// credential: a request without it is answered 401 Unauthorized.
func KeyByAPIKey(header string) KeyFunc {
	return (&keyPart{key: []string{"api_key:" + header}}).keyFunc()
}
