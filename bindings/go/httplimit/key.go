package httplimit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// KeyFunc returns the rate-limit key of a request: requests with the same
// key share one limit. Returning an error answers the request through the
// error handler without consulting the limiter. An error that is ErrNoKey
// (errors.Is) means the request has no key: 400 Bad Request by default, or
// 401 Unauthorized when it is ErrNoCredential; WithMissingKey(MissingKeySkip)
// lets such requests through unlimited instead.
type KeyFunc func(r *http.Request) (string, error)

// ErrNoKey is the error of a KeyFunc that finds no key in a request, e.g. a
// missing tenant header. The default error handler answers it with 400 Bad
// Request.
var ErrNoKey = errors.New("httplimit: the request has no rate-limit key")

// ErrNoCredential is the error of a KeyFunc whose key is a credential (an
// API key, a token, a user id) and that finds none: the default error
// handler answers it with 401 Unauthorized. It is also ErrNoKey (errors.Is),
// so WithMissingKey applies to it. KeyByAPIKey returns it; a KeyFunc of your
// own wraps it: fmt.Errorf("%w: no bearer token", httplimit.ErrNoCredential).
var ErrNoCredential error = noCredential{}

type noCredential struct{}

func (noCredential) Error() string {
	return "httplimit: the request has no credential to rate-limit it by"
}

// Is makes a missing credential a missing key too.
func (noCredential) Is(target error) bool { return target == ErrNoKey }

// KeyByIP keys requests by client IP address: "ip:" followed by the address
// (IPv4 dotted, IPv6 in its canonical form, an IPv4-mapped IPv6 address as
// IPv4). The address is that of the TCP peer (Request.RemoteAddr) unless the
// peer is one of the trusted proxies: then X-Forwarded-For is read from the
// right, skipping trusted proxies, and the first address that is not one is
// the client. See ClientIP.
//
// Never trust proxies you do not run: X-Forwarded-For is written by the
// client first, so a client that talks to the server directly could claim
// any address and spread its requests over as many limits as it likes.
func KeyByIP(trustedProxies ...netip.Prefix) KeyFunc {
	trusted := append([]netip.Prefix(nil), trustedProxies...)
	return func(r *http.Request) (string, error) {
		ip, err := ClientIP(r, trusted)
		if err != nil {
			return "", err
		}
		return "ip:" + ip.String(), nil
	}
}

// ClientIP returns the client address of a request: the TCP peer's
// (RemoteAddr), or, when the peer is a trusted proxy, the rightmost address of
// X-Forwarded-For (all its header lines, in order, comma-separated) that is
// not a trusted proxy. When every hop is trusted, the leftmost one is the
// client; when a hop cannot be parsed, the trusted hop to its right is (what
// lies further left could be forged). A RemoteAddr that is no address (only
// a server that sets it wrongly) is ErrNoKey.
func ClientIP(r *http.Request, trustedProxies []netip.Prefix) (netip.Addr, error) {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q is not an IP address", ErrNoKey, r.RemoteAddr)
	}
	if !trusted(peer, trustedProxies) {
		return peer, nil
	}
	var hops []string
	for _, line := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(line, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseAddr(strings.TrimSpace(hops[i]))
		if !ok {
			break
		}
		client = a
		if !trusted(a, trustedProxies) {
			break
		}
	}
	return client, nil
}

// parseAddr reads "1.2.3.4", "1.2.3.4:80", "::1", "[::1]:80" or
// "[fe80::1%eth0]:80", without its zone and with an IPv4-mapped address
// unmapped.
func parseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		host, _, serr := net.SplitHostPort(s)
		if serr != nil {
			return netip.Addr{}, false
		}
		if a, err = netip.ParseAddr(host); err != nil {
			return netip.Addr{}, false
		}
	}
	return a.WithZone("").Unmap(), true
}

func trusted(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
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
			// An IPv4-mapped prefix would never match: addresses are unmapped.
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("httplimit: trusted proxy %q: %v", s, err)
		}
		a = a.WithZone("").Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// KeyByHeader keys requests by the value of a header, typically an API key:
// "key:" followed by the first 32 hex digits of the value's SHA-256, so that
// the secret never appears in a Redis key name. A request without the header
// (or with an empty one) is keyed by fallback; with a nil fallback it is
// ErrNoKey (400 Bad Request by default).
func KeyByHeader(name string, fallback KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		v := r.Header.Get(name)
		if v == "" {
			if fallback != nil {
				return fallback(r)
			}
			return "", fmt.Errorf("%w: header %s is missing", ErrNoKey, http.CanonicalHeaderKey(name))
		}
		return hashedKey(v), nil
	}
}

// KeyByAPIKey keys requests by an API key in a header, as KeyByHeader does
// ("key:" and 32 hex digits of its SHA-256), and treats the key as a
// credential: a request without the header (or with an empty one) is
// ErrNoCredential, 401 Unauthorized by default.
func KeyByAPIKey(header string) KeyFunc {
	return func(r *http.Request) (string, error) {
		v := r.Header.Get(header)
		if v == "" {
			return "", fmt.Errorf("%w: header %s is missing", ErrNoCredential, http.CanonicalHeaderKey(header))
		}
		return hashedKey(v), nil
	}
}

// hashedKey keeps a secret out of Redis key names.
func hashedKey(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "key:" + hex.EncodeToString(sum[:16])
}
