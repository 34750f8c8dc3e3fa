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
	"fmt"
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
// for the call and does not use the deny cache. The window is a whole number
// of milliseconds.
func (l *Limiter) AllowWithLimit(ctx context.Context, key string, n, limit int, window time.Duration) (Result, error) {
	if window%time.Millisecond != 0 {
		return Result{}, newError(ErrInvalidArgument, "window %v is not a whole number of milliseconds", window)
	}
	return l.do(ctx, &call{op: opCheckLimit, cost: int64(n), limit: int64(limit), window: int64(window / time.Millisecond)},
		key, nil, false)
}

// Refund gives back up to n units taken earlier (say, the operation they paid
// for failed) and returns what Peek would then answer. It clears the key's
// deny-cache entry.
func (l *Limiter) Refund(ctx context.Context, key string, n int) (Result, error) {
	return l.do(ctx, &call{op: opRefund, cost: int64(n)}, key, nil, false)
}

// acquireSlice bounds one library call of Acquire when ctx has no deadline,
// so that a canceled ctx leaves no long call behind.
const acquireSlice = time.Second

// maxAcquireTimeout is the most polylimit_acquire accepts: POLYLIMIT_MAX_WINDOW_MS.
const maxAcquireTimeout = time.Duration(C.POLYLIMIT_MAX_WINDOW_MS) * time.Millisecond

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
		if hasDeadline {
			if timeout = time.Until(dl); timeout < 0 {
				timeout = 0
			}
			// No wait is longer than the longest window or block, so a
			// farther deadline changes nothing (and the library rejects it).
			if timeout > maxAcquireTimeout {
				timeout = maxAcquireTimeout
			}
		}
		r, err := l.do(ctx, &call{op: opAcquire, cost: int64(n), window: int64(timeout / time.Millisecond)}, key, nil, false)
		if err != nil || r.Allowed || hasDeadline || r.Degraded {
			return r, err
		}
		// No deadline: admission is further off than one slice. Sleep until
		// just before it, then let the library take over again.
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

// manyCall is one polylimit_check_many call. Everything C reads or writes is in C
// memory (keys, their pointer and length arrays, decisions, statuses), so no
// Go pointer is passed inside C memory and the call may outlive its caller.
type manyCall struct {
	n        int
	cost     int64
	keys     *unsafe.Pointer // C array of n C pointers into buf
	lens     *C.size_t
	buf      unsafe.Pointer
	out      *C.polylimit_decision
	statuses *C.int
	closed   bool
	st       C.int
	cerr     C.polylimit_error
}

// untouched marks a status polylimit_check_many did not write (no POLYLIMIT_* code is positive).
const untouched = 1

func newManyCall(keys []string, cost int64) *manyCall {
	n := len(keys)
	m := &manyCall{n: n, cost: cost}
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	m.buf = C.malloc(C.size_t(total + 1))
	m.keys = (*unsafe.Pointer)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	m.lens = (*C.size_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.size_t(0)))))
	m.out = (*C.polylimit_decision)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.polylimit_decision{}))))
	m.statuses = (*C.int)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.int(0)))))
	if m.buf == nil || m.keys == nil || m.lens == nil || m.out == nil || m.statuses == nil {
		m.free()
		panic("polylimit: out of C memory")
	}
	bytes := unsafe.Slice((*byte)(m.buf), total+1)
	ptrs := unsafe.Slice(m.keys, n)
	lens := unsafe.Slice(m.lens, n)
	sts := unsafe.Slice(m.statuses, n)
	off := 0
	for i, k := range keys {
		copy(bytes[off:], k)
		ptrs[i] = unsafe.Add(m.buf, off)
		lens[i] = C.size_t(len(k))
		sts[i] = untouched
		off += len(k)
	}
	return m
}

func (m *manyCall) free() {
	C.free(m.buf)
	C.free(unsafe.Pointer(m.keys))
	C.free(unsafe.Pointer(m.lens))
	C.free(unsafe.Pointer(m.out))
	C.free(unsafe.Pointer(m.statuses))
}

func (l *Limiter) invokeMany(m *manyCall) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		m.closed = true
		return
	}
	m.st = C.polylimit_check_many(l.h, m.keys, m.lens, C.size_t(m.n), C.int64_t(m.cost), m.out, m.statuses, &m.cerr)
}

// results turns a finished call into AllowMany's answer (before m is freed).
func (m *manyCall) results() ([]Result, []error) {
	results := make([]Result, m.n)
	if m.closed {
		return results, sameError(m.n, newError(ErrClosed, "limiter is closed"))
	}
	sts := unsafe.Slice(m.statuses, m.n)
	decs := unsafe.Slice(m.out, m.n)
	var errs []error
	first := true
	for i := range results {
		switch st := sts[i]; {
		case st == C.POLYLIMIT_OK:
			results[i] = decision(&decs[i])
		case st == untouched:
			// The call failed as a whole (bad arguments), before any key.
			if errs == nil {
				errs = make([]error, m.n)
			}
			if m.st != C.POLYLIMIT_OK {
				errs[i] = cError(m.st, &m.cerr)
			} else {
				errs[i] = newError(ErrInternal, "keys[%d]: no status", i)
			}
		default:
			if errs == nil {
				errs = make([]error, m.n)
			}
			if first && st == m.st {
				// err names the first key that failed.
				errs[i] = cError(st, &m.cerr)
			} else {
				errs[i] = &Error{Code: ErrCode(st), Msg: fmt.Sprintf("keys[%d]: %s", i, ErrCode(st).describe())}
			}
			first = false
		}
	}
	return results, errs
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
// was decided. If ctx ends first, every key gets the *ContextError (the batch
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
		return make([]Result, len(keys)), sameError(len(keys), &ContextError{Op: "allow many", Err: ctx.Err()})
	}
}
