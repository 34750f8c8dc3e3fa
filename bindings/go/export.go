//go:build cgo
// +build cgo

package polylimit

/*
#include <stdlib.h>
#include <polylimit.h>
*/
import "C"

import (
	"net/http"
	"sort"
	"strings"
	"unsafe"
)

// Headers returns the standard HTTP rate-limit response headers for r, a
// Result this limiter returned. The library formats them, the same in every
// language polylimit binds (polylimit_limiter_headers); this method only
// splits its lines:
//
//	Retry-After: <s>            denials only: seconds, rounded up, at least 1
//	RateLimit-Limit: <n>        the limit that decided
//	RateLimit-Remaining: <n>    units left, never negative
//	RateLimit-Reset: <s>        seconds until the key is back to full capacity
//	RateLimit-Policy: "<name>";q=<limit>;w=<window s>[, ...]   every limit
//	RateLimit: "<name>";r=<remaining>;t=<reset s>              the deciding one
//
// The last two are the IETF httpapi draft's structured fields. A
// single-limit limiter's policy is named "default", a spec's limits
// "<limit>-per-<window>" (e.g. "100-per-60s"); a Result of AllowWithLimit has
// no RateLimit-Policy.
//
// The keys of the http.Header are canonical, as Header.Set makes them
// ("Ratelimit-Limit"): header names are case-insensitive (RFC 9110), and
// only canonical keys work with Header.Get. Copy them into a response with
//
//	for name, values := range hs {
//		w.Header()[name] = values
//	}
//
// or use the httplimit middleware, which does it for every request.
func (l *Limiter) Headers(r Result) (http.Header, error) {
	text, err := l.HeaderText(r)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 6)
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		i := strings.Index(line, ": ")
		if i <= 0 {
			return nil, newError(ErrInternal, "polylimit_limiter_headers returned a malformed line %q", line)
		}
		h.Add(line[:i], line[i+2:])
	}
	return h, nil
}

// HeaderText is Headers as the library formats them: one "Name: value\n"
// line each, names spelled as above (e.g. "RateLimit-Limit"), for servers
// that write headers themselves.
func (l *Limiter) HeaderText(r Result) (string, error) {
	d := cDecision(r)

	l.client.mu.RLock()
	defer l.client.mu.RUnlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return "", errLimiterClosed()
	}
	var out *C.char
	var n C.size_t
	var cerr C.polylimit_error
	if st := C.polylimit_limiter_headers(l.h, &d, &out, &n, &cerr); st != C.POLYLIMIT_OK {
		return "", cError(st, &cerr)
	}
	defer C.polylimit_free(unsafe.Pointer(out))
	return C.GoStringN(out, C.int(n)), nil
}

// PrometheusText returns the counters of several clients on one page of the
// Prometheus text exposition format: each metric's HELP and TYPE once, then
// one sample per client labelled client="<name>". With more than one client
// every client needs a distinct name (WithName); the library refuses a
// missing or repeated one (ErrInvalidArgument, naming clients[i]). One
// client gives the same page as its StatsPrometheus.
//
// Concatenating single clients' StatsPrometheus pages is not valid
// exposition (HELP and TYPE would repeat, which scrapers reject): this is the
// way to serve several clients.
func PrometheusText(clients ...*Client) (string, error) {
	// Lock every distinct client once, in address order, so that concurrent
	// calls with the clients in other orders cannot deadlock with Close.
	locked := make([]*Client, 0, len(clients))
	for i, c := range clients {
		if c == nil {
			return "", newError(ErrInvalidArgument, "clients[%d] is nil", i)
		}
		locked = append(locked, c)
	}
	sort.Slice(locked, func(i, j int) bool {
		return uintptr(unsafe.Pointer(locked[i])) < uintptr(unsafe.Pointer(locked[j]))
	})
	for i, c := range locked {
		if i > 0 && c == locked[i-1] {
			continue
		}
		c.mu.RLock()
		defer c.mu.RUnlock()
	}
	// C pointers in Go memory: allowed (no Go pointer is passed). One slot
	// at least, so that n = 0 reaches the library, which says what is wrong.
	hs := make([]*C.polylimit_client, len(clients)+1)
	for i, c := range clients {
		if c.h == nil {
			return "", newError(ErrClosed, "clients[%d]: the client is closed", i)
		}
		hs[i] = c.h
	}
	var out *C.char
	var n C.size_t
	var cerr C.polylimit_error
	if st := C.polylimit_clients_stats_prometheus(&hs[0], C.size_t(len(clients)), &out, &n, &cerr); st != C.POLYLIMIT_OK {
		return "", cError(st, &cerr)
	}
	defer C.polylimit_free(unsafe.Pointer(out))
	return C.GoStringN(out, C.int(n)), nil
}

// cDecision is a Result given back to the library.
func cDecision(r Result) C.polylimit_decision {
	var d C.polylimit_decision
	if r.Allowed {
		d.allowed = 1
	}
	if r.Cached {
		d.cached = 1
	}
	if r.Degraded {
		d.degraded = 1
	}
	if r.Shadowed {
		d.shadowed = 1
	}
	d.limit = C.int64_t(r.Limit)
	d.remaining = C.int64_t(r.Remaining)
	d.retry_after_ms = C.int64_t(millis(r.RetryAfter))
	d.reset_after_ms = C.int64_t(millis(r.ResetAfter))
	d.granted = C.int64_t(r.Granted)
	return d
}
