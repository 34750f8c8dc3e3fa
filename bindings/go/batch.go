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
	"runtime"
	"sync"
	"sync/atomic"
)

// Batched checks (WaitBatched): an Allow call past WithBlockingChecks hands
// its key and cost to its limiter's batcher and waits on a channel. Up to
// batchesInFlight batch goroutines per limiter each take everything queued
// (at most maxBatchedChecks), decide it in one blocking
// polylimit_limiter_check_many (one pipelined round trip on the library's
// shared connection) and hand every caller its own result or per-key error.
// A batch goroutine lives while there is work and ends when the queue is
// empty. Once a client batches, its checks stay off the blocking call while
// batches run and for batchHoldoff after (async.go, mayBlock). The keys are
// copied into C memory for the call (newManyCall), so no Go pointer reaches
// C beyond the call's own arguments.
//
// check_many decides each key as check does (the deny cache, the failure
// policy, shadow mode, the metrics), with two exceptions that the binding
// routes around, so that answers and counters stay those of single checks:
//   - the circuit breaker counts one success or failure per batch, not per
//     check, and lets a whole batch through as its half-open probe: a
//     limiter with WithCircuitBreaker queues its checks instead (WaitQueued);
//   - a key the library refuses (empty, longer than MaxKeyLen) is counted as
//     an error in the client's metrics by check_many but not by check: such
//     calls, and costs below 1, make the blocking call, which fails before
//     any I/O with check's error.
// Different costs in one batch are decided in one check_many per cost; a
// cost beyond the limit fails its own check_many before any I/O, with
// check's error and, as for check, no count in the metrics.

// batchesInFlight is how many batches of one limiter may wait for Redis at
// once: with two, one batch's results are handed out (and its callers come
// back) while the next is on the wire.
const batchesInFlight = 2

// maxBatchedChecks caps the keys of one check_many.
const maxBatchedChecks = 256

// batcher is a limiter's queue of batched checks.
type batcher struct {
	mu      sync.Mutex
	queue   []*batchReq
	running int // batch goroutines
	// pending counts the checks queued or in a batch in flight, until
	// delivered or dropped (the tests' view).
	pending atomic.Int32
}

// batchReq is one batched call. Pooled: it is reused only once neither its
// caller nor a batch goroutine can touch it. Its state decides who that is:
// the caller, once the result is delivered; the batch goroutine, once the
// caller has given up.
type batchReq struct {
	key   string // a copy for AllowBytes: the caller may reuse its slice when it returns
	cost  int64
	state atomic.Int32
	ready chan struct{} // 1 slot: delivery never blocks
	res   Result
	err   error
}

const (
	reqWaiting   = iota // queued or in a batch in flight
	reqDelivered        // res and err are set; ready has (or will have) a token
	reqAbandoned        // the caller's ctx ended first: the batch goroutine drops it
)

var batchReqs = sync.Pool{New: func() interface{} { return &batchReq{ready: make(chan struct{}, 1)} }}

// batchable says whether a check may be batched: the limiter has no circuit
// breaker, and the library would not refuse the key or the cost alone.
func (l *Limiter) batchable(c *call) bool {
	return !l.hasBreaker && c.klen >= MinKeyLen && c.klen <= MaxKeyLen && c.cost >= 1
}

// doBatched queues a check with the limiter's batcher and waits for its
// result or for ctx.
func (l *Limiter) doBatched(ctx context.Context, c *call, skey string, bkey []byte, isBytes bool) (Result, error) {
	r := batchReqs.Get().(*batchReq)
	if isBytes {
		r.key = string(bkey)
	} else {
		r.key = skey
	}
	r.cost = c.cost
	r.state.Store(reqWaiting)
	l.batch.pending.Add(1)
	l.batch.mu.Lock()
	l.batch.queue = append(l.batch.queue, r)
	start := l.batch.running < batchesInFlight
	if start {
		l.batch.running++
	}
	l.batch.mu.Unlock()
	if start {
		go l.runBatches()
	}
	if done := ctx.Done(); done != nil {
		select {
		case <-r.ready:
		case <-done:
			if r.state.CompareAndSwap(reqWaiting, reqAbandoned) {
				// r is the batch goroutine's now: a queued r is never sent, a
				// sent one's result is dropped.
				return Result{}, &ContextError{Op: opNames[c.op], Err: ctx.Err(), abandoned: true}
			}
			<-r.ready // delivered: a finished decision beats a dropped one
		}
	} else {
		<-r.ready
	}
	res, err := r.res, r.err
	r.recycle()
	return res, err
}

func (r *batchReq) recycle() {
	r.key, r.res, r.err = "", Result{}, nil
	batchReqs.Put(r)
}

// deliver hands r its answer, or recycles it when its caller is gone.
func (b *batcher) deliver(r *batchReq, res Result, err error) {
	b.pending.Add(-1)
	r.res, r.err = res, err
	if r.state.CompareAndSwap(reqWaiting, reqDelivered) {
		r.ready <- struct{}{}
		return
	}
	r.recycle()
}

// take moves up to maxBatchedChecks queued checks to dst; none left: the
// goroutine stops being counted as running (under the lock, so a check
// queued meanwhile starts another).
func (b *batcher) take(dst []*batchReq) []*batchReq {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.queue)
	if n > maxBatchedChecks {
		n = maxBatchedChecks
	}
	if n == 0 {
		b.running--
		return dst
	}
	dst = append(dst, b.queue[:n]...)
	rest := copy(b.queue, b.queue[n:])
	for i := rest; i < len(b.queue); i++ {
		b.queue[i] = nil
	}
	b.queue = b.queue[:rest]
	return dst
}

// runBatches is a batch goroutine: it decides batches until the queue is
// empty. While one runs, and for batchHoldoff after the last ends, the
// client's checks join the batches even when few are in flight (mayBlock).
func (l *Limiter) runBatches() {
	a := &l.client.async
	a.batching.Add(1)
	defer a.batchDone()
	var batch []*batchReq
	var keys []string
	for {
		batch = l.batch.take(batch[:0])
		if len(batch) == 0 {
			return
		}
		// Callers that gave up while queued: nothing is sent for them.
		live := batch[:0]
		for _, r := range batch {
			if r.state.Load() == reqAbandoned {
				l.batch.pending.Add(-1)
				r.recycle()
				continue
			}
			live = append(live, r)
		}
		// One check_many per cost (usually one).
		for rest := live; len(rest) > 0; {
			cost, same := rest[0].cost, 0
			for j := range rest {
				if rest[j].cost == cost {
					rest[same], rest[j] = rest[j], rest[same]
					same++
				}
			}
			keys = l.decideBatch(rest[:same], cost, keys[:0])
			rest = rest[same:]
		}
		for i := range batch {
			batch[i] = nil
		}
		for i := range keys {
			keys[i] = ""
		}
		// Let the callers just woken run on this P, and queue their next
		// checks, before the next blocking call parks it: without this the
		// next batch is the few checks queued meanwhile (on average 1 at 8
		// goroutines and 6 at 64 instead of 3 and 21-23, at twice the client
		// CPU per call).
		runtime.Gosched()
	}
}

// decideBatch makes one polylimit_limiter_check_many for reqs, all of one
// cost, and delivers each its result; keys is scratch space.
func (l *Limiter) decideBatch(reqs []*batchReq, cost int64, keys []string) []string {
	for _, r := range reqs {
		keys = append(keys, r.key)
	}
	m := newManyCall(keys, cost)
	l.invokeMany(m)
	var whole error
	for i, r := range reqs {
		res, err := m.at(i, &whole)
		l.batch.deliver(r, res, err)
	}
	m.free()
	return keys
}
