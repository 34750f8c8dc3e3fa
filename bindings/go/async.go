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
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Checks that do not hold an OS thread while they wait.
//
// A blocking C call keeps its OS thread for the whole round trip: N
// concurrent Allow calls need N threads, and every reply is a thread wake-up
// plus a hand-off of the P. Yet for a lone caller it is the fastest path (the
// reply is read on the caller's own thread; bench/go measures about twice
// the throughput of the queued path at one and two goroutines). So a check
// makes the blocking call only while few checks of its client are in flight
// (WithBlockingChecks, default 2) and, with WaitBatched, no batch of its
// client runs or ended less than batchHoldoff ago (mayBlock says why); past
// that it waits one of two ways (WithWaitStrategy):
//
//   - Batched (WaitBatched, the default; batch.go): the check joins its
//     limiter's batcher. At most two batch goroutines per limiter each take
//     everything queued (up to 256 checks), decide it in one blocking
//     polylimit_limiter_check_many (one pipelined round trip on the
//     library's shared connection) and hand each caller its result. Two OS
//     threads wait for Redis however many checks are in flight, and the
//     library encodes, writes and reads a whole batch at once.
//   - Queued (WaitQueued): each check is submitted alone
//     (polylimit_limiter_submit_check, a short cgo call) and waits on a
//     channel. One poller goroutine per client, made on first use, takes the
//     completions and hands each to its waiter by token; tokens are plain
//     integers, so no Go pointer reaches C. The poller waits for the queue's
//     fd in the Go netpoller, which holds no OS thread and, measured
//     against a poller blocked in polylimit_queue_poll, wakes waiters sooner
//     (no P hand-off after a cgo call); where the fd cannot be polled it
//     blocks in polylimit_queue_poll.
//
// Why batched by default: at 64 goroutines a queued check pays an I/O-thread
// hop, an eventfd and a goroutine wake-up of its own, a batch one cgo call
// and one pipelined round trip for all its checks (bench/go/README.md has
// the tables: batched beat queued at 8 and 64 goroutines in every cell, at
// 5-9 µs of client CPU per call against 19-22 µs queued). Measured again
// with the batching hold-off (bench/go, 2-core shared VM at load 4-9, two
// runs of 3 interleaved repetitions each way, before and after it): at 64
// goroutines the default did 2.68x and 2.88x redis_rate on the allow path
// and 2.65x and 2.21x on the deny path with GCRA (before: 2.48x / 2.34x
// and 3.06x / 2.23x), 1.24x / 1.27x and 2.10x / 2.26x with the sliding log,
// at 3.9-7.7 µs of client CPU per call against redis_rate's 11.6-13.9 µs;
// at 8 goroutines 0.82-0.95x with GCRA in two more runs of 5 each way
// (before: 0.75-0.96x); at 1 goroutine, where every call blocks,
// 1.26-1.34x. The batch goroutine yields after handing out a batch (runtime.Gosched), so
// that the callers it woke queue their next checks before it takes the
// next batch (without it batches averaged 1 check at 8 goroutines and 6 at
// 64 instead of 3 and 21-23, at twice the client CPU per call). At most two
// batches per limiter are in flight, so that Redis has the next batch while
// one is handed out. Under an HTTP service (bench/http: wrk -c64 on the
// same two cores) batches average 13-14 checks whether one or two are in
// flight; about half of them are single checks sent while the other batch
// is on the wire, which carries most checks (a variant that sent a second
// batch only once 4 checks waited cut the single ones to 12% and changed
// neither the script calls per request nor requests/s).
//
// Costs of batching: a check may wait for the batch before its own (one
// round trip), and Client.Close waits for the batches in flight as it does
// for blocking calls. Limiters with a circuit breaker keep the queued path
// (batch.go says why).

// DefaultBlockingChecks is WithBlockingChecks' default.
const DefaultBlockingChecks = 2

// DefaultWaitStrategy is WithWaitStrategy's default.
const DefaultWaitStrategy = WaitBatched

// pollBatch is how many completions one polylimit_queue_poll may return.
const pollBatch = 256

// WithBlockingChecks sets when an Allow call (Allow, AllowN, AllowBytes)
// waits for Redis in a blocking C call, on an OS thread of its own: while at
// most n checks of the client, itself included, are in flight (default
// DefaultBlockingChecks; with WaitBatched, not while a batch of the client
// runs or ended within the last millisecond). Past that, checks are
// submitted without waiting and wait on a channel, all served by one
// goroutine, so that thousands in flight hold a few OS threads. 0: every check is queued. The other methods
// always make the blocking call.
func WithBlockingChecks(n int) Option {
	return func(c *clientConfig) {
		if n < 0 {
			c.fail("WithBlockingChecks(%d): the count must be 0 or more", n)
			return
		}
		c.blockingChecks = int32(n) + 1 // 0 stays "unset"
	}
}

// WaitStrategy is how an Allow call waits once more checks of its client
// are in flight than WithBlockingChecks lets block.
type WaitStrategy int

const (
	// WaitQueued submits each check alone (polylimit_limiter_submit_check)
	// and waits on a channel; the client's poller goroutine hands out the
	// completions.
	WaitQueued WaitStrategy = 1
	// WaitBatched hands the check to its limiter's batcher: a batch
	// goroutine (at most two per limiter in flight) takes every check
	// queued, decides them in one blocking polylimit_limiter_check_many
	// (one pipelined round trip) and hands each caller its own result.
	// Limiters with a circuit breaker queue their checks as WaitQueued
	// does (batch.go says why).
	WaitBatched WaitStrategy = 2
)

// WithWaitStrategy sets how Allow calls past WithBlockingChecks wait
// (default DefaultWaitStrategy).
func WithWaitStrategy(s WaitStrategy) Option {
	return func(c *clientConfig) {
		if s != WaitQueued && s != WaitBatched {
			c.fail("WithWaitStrategy(%d): not WaitQueued (1) or WaitBatched (2)", int(s))
			return
		}
		c.waitStrategy = int32(s)
	}
}

// asyncState is the part of a Client that chooses between the blocking and
// the queued or batched check, and owns the queue.
type asyncState struct {
	maxBlocking int32        // a check blocks while at most this many are in flight
	batched     bool         // past maxBlocking: WaitBatched
	inflight    atomic.Int32 // checks in flight: queued, or blocking until C returns
	batching    atomic.Int32 // batch goroutines running, all limiters
	batchEnd    atomic.Int64 // when the last batch goroutine ended (monoNow)
	mu          sync.Mutex   // serializes making the queue
	cq          atomic.Pointer[completionQueue]
}

func (a *asyncState) init(cfg *clientConfig) {
	a.maxBlocking = DefaultBlockingChecks
	if cfg.blockingChecks > 0 {
		a.maxBlocking = cfg.blockingChecks - 1
	}
	s := DefaultWaitStrategy
	if cfg.waitStrategy != 0 {
		s = WaitStrategy(cfg.waitStrategy)
	}
	a.batched = s == WaitBatched
}

// enter counts a check in flight and says whether it makes the blocking
// call. If so, c carries the count, which invoke drops once C returns (an
// abandoned call goes on counting while it holds its thread); otherwise the
// caller queues the check and calls leave when it is done with it.
func (a *asyncState) enter(c *call) bool {
	n := a.inflight.Add(1)
	if n <= a.maxBlocking && a.mayBlock() {
		c.inflight = &a.inflight
		return true
	}
	return false
}

func (a *asyncState) leave() { a.inflight.Add(-1) }

// mayBlock says whether a check that finds few checks in flight may make
// the blocking call. With WaitBatched: not while a batch goroutine of the
// client runs, nor within batchHoldoff after the last one ended. The count
// of checks in flight alone is a poor sign of load: under a CPU-bound load
// (an HTTP service sharing its cores with Redis) requests reach the check a
// few at a time, so the count often falls to 2 or less between two batches,
// and a check that then blocks costs a script call of its own where a batch
// shares one among 10-15. The more checks blocked, the more CPU each
// request cost, the fewer reached the check at once and the more blocked
// again: a service settled, per start, on 2-86% of its checks blocking
// (0.09-0.92 EVALSHA per request). Once batching, it stays batching while
// checks keep coming; a lone caller (never more than 2 in flight) never
// starts a batch and keeps the blocking call.
func (a *asyncState) mayBlock() bool {
	if !a.batched {
		return true
	}
	if a.batching.Load() > 0 {
		return false
	}
	end := a.batchEnd.Load()
	return end == 0 || monoNow()-end > int64(batchHoldoff)
}

// batchDone is called by a batch goroutine as it ends.
func (a *asyncState) batchDone() {
	a.batchEnd.Store(monoNow())
	a.batching.Add(-1)
}

// batchHoldoff is how long after the last batch checks stay batched
// (mayBlock): several round trips at load, so that the pause between two
// batches does not let checks through to the blocking call.
const batchHoldoff = time.Millisecond

var monoBase = time.Now()

// monoNow is the monotonic clock in nanoseconds since monoBase (> 0 once
// any time has passed).
func monoNow() int64 { return int64(time.Since(monoBase)) }

// tryBlocking takes one of the client's blocking checks when one is free
// (HTTPPolicy.Decide's one-call path); the caller calls leave after.
func (a *asyncState) tryBlocking() bool {
	if a.inflight.Add(1) <= a.maxBlocking && a.mayBlock() {
		return true
	}
	a.inflight.Add(-1)
	return false
}

// queue returns the client's queue, making it (and its poller) on first use.
// The caller holds the client's shared lock and has checked that it is open,
// so Close cannot run meanwhile.
func (a *asyncState) queue() (*completionQueue, error) {
	if cq := a.cq.Load(); cq != nil {
		return cq, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if cq := a.cq.Load(); cq != nil {
		return cq, nil
	}
	var q *C.polylimit_queue
	var cerr C.polylimit_error
	if st := C.polylimit_queue_new(&q, &cerr); st != C.POLYLIMIT_OK {
		return nil, cError(st, &cerr)
	}
	cq := &completionQueue{q: q, waiters: make(map[uint64]*waiter), done: make(chan struct{})}
	go cq.poll()
	a.cq.Store(cq)
	return cq, nil
}

// stop is called by Client.Close once the C client is closed: every check
// in flight has then completed or will, with an error, and reaches its
// waiter before the poller ends.
func (a *asyncState) stop() {
	if cq := a.cq.Load(); cq != nil {
		cq.stop()
	}
}

// completionQueue is one polylimit_queue and the goroutines waiting on it.
type completionQueue struct {
	q       *C.polylimit_queue
	closing atomic.Bool
	done    chan struct{} // closed when the poller has ended

	mu      sync.Mutex
	next    uint64
	waiters map[uint64]*waiter // by token; a canceled caller removes its own
}

// waiter is one queued check's caller. Pooled: it is only reused once
// neither the poller nor the caller can touch it.
type waiter struct {
	ready chan struct{} // 1 slot: the poller never blocks on it
	res   Result
	err   error
}

var waiters = sync.Pool{New: func() interface{} { return &waiter{ready: make(chan struct{}, 1)} }}

func (cq *completionQueue) add(w *waiter) uint64 {
	cq.mu.Lock()
	cq.next++
	t := cq.next
	cq.waiters[t] = w
	cq.mu.Unlock()
	return t
}

// remove takes the token's waiter out; false when the poller already did
// (its result is then on the way).
func (cq *completionQueue) remove(t uint64) bool {
	cq.mu.Lock()
	_, ok := cq.waiters[t]
	delete(cq.waiters, t)
	cq.mu.Unlock()
	return ok
}

// poll is the poller goroutine: it hands completions to their waiters until
// the client is closed and nothing is in flight. stop frees the queue.
func (cq *completionQueue) poll() {
	defer close(cq.done)
	// C memory: pollBlocking lends it across a blocking call.
	buf := (*[pollBatch]C.polylimit_completion)(C.malloc(C.size_t(unsafe.Sizeof(C.polylimit_completion{})) * pollBatch))
	defer C.free(unsafe.Pointer(buf))
	cq.pollNet(buf, make([]*waiter, 0, pollBatch))
	cq.mu.Lock()
	left := cq.waiters
	cq.waiters = nil
	cq.mu.Unlock()
	for _, w := range left { // none, unless a check never completed
		w.res, w.err = Result{}, errClientClosed()
		w.ready <- struct{}{}
	}
}

// finished reports whether the poller may stop: the client is closed and no
// check is in flight. Completions are queued before they stop counting as
// outstanding (under the queue's lock), so one more poll finds the rest.
func (cq *completionQueue) finished() bool {
	return cq.closing.Load() && C.polylimit_queue_outstanding(cq.q) == 0
}

// pollBlocking waits in polylimit_queue_poll, holding one OS thread.
func (cq *completionQueue) pollBlocking(buf *[pollBatch]C.polylimit_completion, ready []*waiter) {
	for {
		n := int(C.polylimit_queue_poll(cq.q, &buf[0], pollBatch, -1))
		ready = cq.dispatch(buf[:n], ready)
		if cq.finished() {
			for n != 0 {
				n = int(C.polylimit_queue_poll(cq.q, &buf[0], pollBatch, 0))
				ready = cq.dispatch(buf[:n], ready)
			}
			return
		}
		if n > 0 {
			// Let the woken callers run on this P before the next blocking
			// call parks it; completions meanwhile pile up into one batch.
			runtime.Gosched()
		}
	}
}

// pollNet waits for the queue's fd in the Go netpoller, then takes the
// completions without waiting. The fd is readable while completions wait,
// while replies to the queue's calls are in (polylimit_queue_poll reads them
// on this thread) and after polylimit_queue_wake. It is the library's: a dup is registered with the
// netpoller and closed before the queue is freed; nothing reads it.
func (cq *completionQueue) pollNet(buf *[pollBatch]C.polylimit_completion, ready []*waiter) {
	fd := int(C.polylimit_queue_fd(cq.q))
	if fd < 0 {
		cq.pollBlocking(buf, ready)
		return
	}
	fd, err := syscall.Dup(fd)
	if err != nil {
		cq.pollBlocking(buf, ready)
		return
	}
	f := os.NewFile(uintptr(fd), "polylimit_queue") // non-blocking (EFD_NONBLOCK): goes to the netpoller
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		cq.pollBlocking(buf, ready)
		return
	}
	for {
		n, done := 0, false
		err := rc.Read(func(uintptr) bool {
			n = int(C.polylimit_queue_poll(cq.q, &buf[0], pollBatch, 0))
			done = n == 0 && cq.finished()
			return n > 0 || done
		})
		if err != nil { // not pollable here: wait in C instead
			cq.pollBlocking(buf, ready)
			return
		}
		ready = cq.dispatch(buf[:n], ready)
		if done {
			for n = 1; n != 0; {
				n = int(C.polylimit_queue_poll(cq.q, &buf[0], pollBatch, 0))
				ready = cq.dispatch(buf[:n], ready)
			}
			return
		}
	}
}

// dispatch gives each completion to its waiter; a completion whose caller
// gave up is dropped.
func (cq *completionQueue) dispatch(cs []C.polylimit_completion, ready []*waiter) []*waiter {
	if len(cs) == 0 {
		return ready
	}
	ready = ready[:0]
	cq.mu.Lock()
	for i := range cs {
		t := uint64(cs[i].token)
		w := cq.waiters[t]
		delete(cq.waiters, t)
		ready = append(ready, w)
	}
	cq.mu.Unlock()
	for i, w := range ready {
		if w == nil {
			continue
		}
		c := &cs[i]
		if c.status != C.POLYLIMIT_OK {
			w.res, w.err = Result{}, cError(c.status, &c.error)
		} else {
			w.res, w.err = decision(&c.decision), nil
		}
		w.ready <- struct{}{}
		ready[i] = nil
	}
	return ready
}

// stop ends the poller and frees the queue. The poller may see closing and
// end before the wake below (a completion woke it), so only stop frees.
func (cq *completionQueue) stop() {
	cq.closing.Store(true)
	C.polylimit_queue_wake(cq.q)
	<-cq.done
	C.polylimit_queue_free(cq.q)
}

// doQueued submits a check and waits for its completion or for ctx.
func (l *Limiter) doQueued(ctx context.Context, c *call, skey string, bkey []byte, isBytes bool) (Result, error) {
	w := waiters.Get().(*waiter)
	cq, token, err := l.submit(c, w, skey, bkey, isBytes)
	if err != nil {
		// Only bad arguments and a closed client are refused here; an outage
		// (a failed connect, a full queue) completes through the queue,
		// after the failure policy, as for the blocking call.
		waiters.Put(w)
		return Result{}, err
	}
	select {
	case <-w.ready:
	case <-ctx.Done():
		if cq.remove(token) {
			waiters.Put(w)
			return Result{}, &ContextError{Op: opNames[c.op], Err: ctx.Err(), abandoned: true}
		}
		<-w.ready // the poller has it: a finished decision beats a dropped one
	}
	res, err := w.res, w.err
	w.res, w.err = Result{}, nil
	waiters.Put(w)
	return res, err
}

// submit registers w and submits the check under the shared locks of the
// client and the limiter (the C ABI: no free during a call). The key is
// only read during the call.
func (l *Limiter) submit(c *call, w *waiter, skey string, bkey []byte, isBytes bool) (*completionQueue, uint64, error) {
	l.client.mu.RLock()
	defer l.client.mu.RUnlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return nil, 0, errLimiterClosed()
	}
	if l.client.h == nil {
		return nil, 0, errClientClosed()
	}
	cq, err := l.client.async.queue()
	if err != nil {
		return nil, 0, err
	}
	var key unsafe.Pointer
	if isBytes {
		if len(bkey) > 0 {
			key = unsafe.Pointer(&bkey[0])
		}
	} else if len(skey) > 0 {
		ck := C.CString(skey) // copy: a Go string's bytes are not ours to lend
		defer C.free(unsafe.Pointer(ck))
		key = unsafe.Pointer(ck)
	}
	// Registered first: the completion may arrive before submit returns
	// (deny cache, open breaker).
	token := cq.add(w)
	var cerr C.polylimit_error
	var st C.int
	switch c.op {
	case opPeek:
		st = C.polylimit_limiter_submit_peek(l.h, key, c.klen, cq.q, C.uint64_t(token), &cerr)
	case opReset:
		st = C.polylimit_limiter_submit_reset(l.h, key, c.klen, cq.q, C.uint64_t(token), &cerr)
	case opCheckAtMost:
		st = C.polylimit_limiter_submit_check_at_most(l.h, key, c.klen, C.int64_t(c.cost), cq.q, C.uint64_t(token), &cerr)
	case opCheckLimit:
		st = C.polylimit_limiter_submit_check_limit(l.h, key, c.klen, C.int64_t(c.cost), C.int64_t(c.limit),
			C.int64_t(c.window), cq.q, C.uint64_t(token), &cerr)
	case opRefund:
		st = C.polylimit_limiter_submit_refund(l.h, key, c.klen, C.int64_t(c.cost), cq.q, C.uint64_t(token), &cerr)
	case opAcquire:
		st = C.polylimit_limiter_submit_acquire(l.h, key, c.klen, C.int64_t(c.cost), C.int64_t(c.window), cq.q,
			C.uint64_t(token), &cerr)
	default:
		st = C.polylimit_limiter_submit_check(l.h, key, c.klen, C.int64_t(c.cost), cq.q, C.uint64_t(token), &cerr)
	}
	runtime.KeepAlive(bkey)
	if st != C.POLYLIMIT_OK {
		cq.remove(token) // nothing was queued
		return nil, 0, cError(st, &cerr)
	}
	return cq, token, nil
}
