//go:build cgo
// +build cgo

// The calls other than Allow use the library's non-blocking forms when their
// context can end (and Acquire always): they must answer what the blocking
// calls answer, and wait without an OS thread each.

package polylimit_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

func TestOtherCallsQueuedAnswerAsBlocking(t *testing.T) {
	sameAnswers(t, shared.URL, nil, "3/minute", nil, func(ctx context.Context, l *polylimit.Limiter) []string {
		var out []string
		add := func(r polylimit.Result, err error) { out = append(out, describe(r, err)) }
		add(l.Peek(ctx, "k"))
		add(l.AllowN(ctx, "k", 2))
		add(l.Peek(ctx, "k"))
		add(l.AllowAtMost(ctx, "k", 5)) // one unit left: granted 1
		add(l.AllowAtMost(ctx, "k", 5)) // none left: denied
		add(l.Refund(ctx, "k", 2))
		add(l.AllowWithLimit(ctx, "w", 2, 2, time.Minute))
		add(l.AllowWithLimit(ctx, "w", 1, 2, time.Minute)) // over the call's limit
		add(l.Acquire(ctx, "k", 2))                        // fits after the refund
		add(polylimit.Result{}, l.Reset(ctx, "k"))
		add(l.Peek(ctx, "k"))
		add(l.PeekBytes(ctx, []byte("a\x00b")))
		add(l.Refund(ctx, "k", 0)) // the library's argument errors
		add(l.AllowAtMost(ctx, "k", 0))
		add(l.Peek(ctx, ""))
		return out
	})
}

// Peek calls with a cancelable context wait in the client's queue, not on an
// OS thread each; Acquire, queued, still answers a deadline it cannot meet.
func TestQueuedCallsWaitWithoutThreads(t *testing.T) {
	srv := newRedis(t)
	c := open(t, srv.URL, polylimit.WithCommandTimeout(20*time.Second))
	l := limiter(t, c, "1/minute")
	if r, err := l.Allow(context.Background(), "k"); err != nil || !r.Allowed {
		t.Fatal(r, err)
	}
	const calls = 64
	before := threadsNow(t)
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := l.Peek(ctx, fmt.Sprint("p", i)); err != nil {
				errs <- err.Error()
			}
		}(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for polylimit.QueuedWaiters(c) < calls && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	waiting, during := polylimit.QueuedWaiters(c), threadsNow(t)
	srv.Signal(syscall.SIGCONT)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal("peek after SIGCONT:", e)
	}
	if waiting != calls {
		t.Fatalf("%d of %d Peek calls with a cancelable context waited in the queue", waiting, calls)
	}
	if during-before >= calls/2 {
		t.Fatalf("%d Peek calls in flight added %d OS threads", calls, during-before)
	}

	// Past the context's deadline: denied now, with RetryAfter, no error.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := l.Acquire(ctx, "k", 1)
	if err != nil || r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("Acquire of a used-up key: %s", describe(r, err))
	}
}
