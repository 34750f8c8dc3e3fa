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
	"time"
	"unsafe"
)

// AllowAtMost admits as many units as fit now, up to n; Result.Granted says
// how many (Allowed when at least one was). It never over-admits; it may take
// two round trips.
func (l *Limiter) AllowAtMost(ctx context.Context, key string, n int) (Result, error) {
	return l.do(ctx, &call{op: opCheckAtMost, cost: int64(n)}, key, nil, false)
}

// AllowWithLimit admits n units for key under limit units per window given
// for this call only (limits that change at run time), with the limiter's
// algorithm (GCRA: burst = limit). It replaces all of the limiter's limits
// for the call and does not use the deny cache. The window must be a whole
// number of milliseconds.
func (l *Limiter) AllowWithLimit(ctx context.Context, key string, n, limit int, window time.Duration) (Result, error) {
	windowMS, err := exactMillis("window", window)
	if err != nil {
		return Result{}, err
	}
	return l.do(ctx, &call{op: opCheckLimit, cost: int64(n), limit: int64(limit), window: windowMS}, key, nil, false)
}

// Refund gives back up to n units taken earlier (say, the operation they paid
// for failed) and returns what Peek would then answer. It clears the key's
// deny-cache entry.
func (l *Limiter) Refund(ctx context.Context, key string, n int) (Result, error) {
	return l.do(ctx, &call{op: opRefund, cost: int64(n)}, key, nil, false)
}

// acquireSlice bounds one library call of Acquire, so that neither a
// canceled ctx nor Close (which waits for calls in flight) is held up by a
// long wait inside C: a longer wait sleeps in Go, between library calls.
const acquireSlice = time.Second

// Acquire waits until n units for key are admitted, sleeping the retry-after
// between tries. The context's deadline bounds the wait: when admission would
// come later than the deadline, Acquire returns at once with a denied Result
// (RetryAfter says when) and no error. A context that ends (cancel, or a
// deadline passing mid-call) returns a *ContextError. Without a deadline it
// waits as long as it takes.
func (l *Limiter) Acquire(ctx context.Context, key string, n int) (Result, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		timeout := acquireSlice
		dl, hasDeadline := ctx.Deadline()
		last := false // the library's answer is final: the deadline is within this slice
		if hasDeadline {
			if left := time.Until(dl); left <= acquireSlice {
				timeout, last = left, true
				if timeout < 0 {
					timeout = 0
				}
			}
		}
		r, err := l.do(ctx, &call{op: opAcquire, cost: int64(n), window: millis(timeout)}, key, nil, false)
		if err != nil || r.Allowed || r.Degraded || last {
			return r, err
		}
		// Admission is further off than one slice. Past the deadline: denied
		// now. Otherwise sleep until just before it, then let the library
		// take over again.
		if hasDeadline && r.RetryAfter > time.Until(dl) {
			return r, nil
		}
		wait := r.RetryAfter - acquireSlice/2
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Result{}, &ContextError{Op: "acquire", Err: ctx.Err()}
		}
	}
}

// manyCall is one polylimit_limiter_check_many call. Everything C reads or
// writes is in C memory (keys, their pointer and length arrays, decisions,
// statuses, per-key errors), one malloc'd block, so no Go pointer is passed
// inside C memory and the call may outlive its caller.
type manyCall struct {
	n        int
	cost     int64
	block    unsafe.Pointer  // the C block holding everything below
	keys     *unsafe.Pointer // n C pointers into the key bytes
	lens     *C.size_t
	out      *C.polylimit_decision
	statuses *C.int
	keyErrs  *C.polylimit_error // n per-key errors: code and message
	closed   bool
	st       C.int
	cerr     C.polylimit_error
}

// untouched marks a status polylimit_limiter_check_many did not write (no POLYLIMIT_* code is positive).
const untouched = 1

// manyAlign aligns each array of a manyCall's block.
const manyAlign = 16

func alignUp(n uintptr) uintptr { return (n + manyAlign - 1) &^ (manyAlign - 1) }

func newManyCall(keys []string, cost int64) *manyCall {
	n := len(keys)
	m := &manyCall{n: n, cost: cost}
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	// One block: pointers, lengths, decisions, errors, statuses, key bytes.
	// Nothing needs zeroing: C writes every decision, status and error it
	// reports, and a status left untouched is recognized.
	un := uintptr(n)
	offLens := alignUp(un * unsafe.Sizeof(unsafe.Pointer(nil)))
	offOut := offLens + alignUp(un*unsafe.Sizeof(C.size_t(0)))
	offErrs := offOut + alignUp(un*unsafe.Sizeof(C.polylimit_decision{}))
	offSts := offErrs + alignUp(un*unsafe.Sizeof(C.polylimit_error{}))
	offBytes := offSts + alignUp(un*unsafe.Sizeof(C.int(0)))
	m.block = C.malloc(C.size_t(offBytes + uintptr(total) + 1))
	if m.block == nil {
		panic("polylimit: out of C memory")
	}
	m.keys = (*unsafe.Pointer)(m.block)
	m.lens = (*C.size_t)(unsafe.Add(m.block, offLens))
	m.out = (*C.polylimit_decision)(unsafe.Add(m.block, offOut))
	m.keyErrs = (*C.polylimit_error)(unsafe.Add(m.block, offErrs))
	m.statuses = (*C.int)(unsafe.Add(m.block, offSts))
	buf := unsafe.Add(m.block, offBytes)
	bytes := unsafe.Slice((*byte)(buf), total+1)
	ptrs := unsafe.Slice(m.keys, n)
	lens := unsafe.Slice(m.lens, n)
	sts := unsafe.Slice(m.statuses, n)
	off := 0
	for i, k := range keys {
		copy(bytes[off:], k)
		ptrs[i] = unsafe.Add(buf, off)
		lens[i] = C.size_t(len(k))
		sts[i] = untouched
		off += len(k)
	}
	return m
}

func (m *manyCall) free() { C.free(m.block) }

func (l *Limiter) invokeMany(m *manyCall) {
	l.client.mu.RLock()
	defer l.client.mu.RUnlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		m.closed = true
		return
	}
	m.st = C.polylimit_limiter_check_many(l.h, m.keys, m.lens, C.size_t(m.n), C.int64_t(m.cost), m.out, m.statuses,
		m.keyErrs, &m.cerr)
}

// results turns a finished call into AllowMany's answer (before m is freed):
// each key's own status and message, as the library reported them.
func (m *manyCall) results() ([]Result, []error) {
	results := make([]Result, m.n)
	if m.closed {
		return results, sameError(m.n, errLimiterClosed())
	}
	var errs []error
	var whole error // the call's own error, for keys it did not reach
	for i := range results {
		r, err := m.at(i, &whole)
		results[i] = r
		if err == nil {
			continue
		}
		if errs == nil {
			errs = make([]error, m.n)
		}
		errs[i] = err
	}
	return results, errs
}

// at is key i's answer in a finished call (before m is freed). *whole
// caches the call's own error, made once for the keys it did not reach.
func (m *manyCall) at(i int, whole *error) (Result, error) {
	if m.closed {
		return Result{}, errLimiterClosed()
	}
	st := unsafe.Slice(m.statuses, m.n)[i]
	if st == C.POLYLIMIT_OK {
		return decision(&unsafe.Slice(m.out, m.n)[i]), nil
	}
	if st != untouched {
		return Result{}, cError(st, &unsafe.Slice(m.keyErrs, m.n)[i])
	}
	// The library refused the call as a whole before looking at any key
	// (e.g. more keys than MaxBatch): every key gets its error.
	if *whole == nil {
		if m.st != C.POLYLIMIT_OK {
			*whole = cError(m.st, &m.cerr)
		} else {
			*whole = newError(ErrInternal, "polylimit_limiter_check_many left a status unset")
		}
	}
	return Result{}, *whole
}

func sameError(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// AllowMany admits n units for each key, independently (all or nothing per
// key, not across keys), pipelined: one round trip to Redis for the whole
// batch. results[i] and errs[i] belong to keys[i]; errs is nil when every key
// was decided. errs[i] is the library's error for that key, with its own
// code and message (e.g. an empty key among good ones fails alone, with
// ErrInvalidArgument); an error of the whole call (a bad cost, a closed
// client) is every key's. If ctx ends first, every key gets the *ContextError (the batch
// still runs to completion in the background).
func (l *Limiter) AllowMany(ctx context.Context, keys []string, n int) ([]Result, []error) {
	if err := ctx.Err(); err != nil {
		return make([]Result, len(keys)), sameError(len(keys), err)
	}
	if len(keys) == 0 {
		return []Result{}, nil
	}
	m := newManyCall(keys, int64(n))
	if ctx.Done() == nil {
		defer m.free()
		l.invokeMany(m)
		return m.results()
	}
	type answer struct {
		rs   []Result
		errs []error
	}
	done := make(chan answer, 1)
	go func() {
		l.invokeMany(m)
		rs, errs := m.results()
		m.free()
		done <- answer{rs, errs}
	}()
	select {
	case a := <-done:
		return a.rs, a.errs
	case <-ctx.Done():
		select {
		case a := <-done:
			return a.rs, a.errs
		default:
		}
		return make([]Result, len(keys)), sameError(len(keys), &ContextError{Op: "allow many", Err: ctx.Err(), abandoned: true})
	}
}
