//go:build cgo
// +build cgo

// OutcomeUnknown: true when a call failed after its command was sent (it may
// have consumed units), false when it failed before the send.

package polylimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

func TestOutcomeUnknownIsFalseForARefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("redis://%s", ln.Addr().String())
	ln.Close() // nobody listens: connections are refused
	c := open(t, url, polylimit.WithPoolSize(1))
	l := limiter(t, c, "5/s")
	_, err = l.Allow(context.Background(), "k")
	wantCode(t, "refused", err, polylimit.ErrUnavailable)
	var e *polylimit.Error
	if !errors.As(err, &e) || e.OutcomeUnknown || polylimit.OutcomeUnknown(err) {
		t.Fatalf("refused: %#v, want a *Error with OutcomeUnknown false", err)
	}
	_, errs := l.AllowMany(context.Background(), []string{"a", "b"}, 1)
	for i, err := range errs {
		if err == nil || polylimit.OutcomeUnknown(err) {
			t.Fatalf("refused batch, key %d: %v (OutcomeUnknown %v), want an error with a known outcome",
				i, err, polylimit.OutcomeUnknown(err))
		}
	}
	if polylimit.OutcomeUnknown(nil) || polylimit.OutcomeUnknown(errors.New("other")) {
		t.Fatal("OutcomeUnknown of nil or a foreign error is true")
	}
}

func TestOutcomeUnknownIsTrueForATimeoutAfterTheSend(t *testing.T) {
	ctx := context.Background()
	srv := newRedis(t)
	// Each client makes one failing call on its warm connection; a second
	// call would need a new connection, whose handshake times out before
	// anything of the call is sent (a known outcome).
	opts := []polylimit.Option{polylimit.WithPoolSize(1), polylimit.WithCommandTimeout(300 * time.Millisecond)}
	single := limiter(t, open(t, srv.URL, opts...), "5/s")
	batch := limiter(t, open(t, srv.URL, opts...), "5/s")
	abandoned := limiter(t, open(t, srv.URL, polylimit.WithPoolSize(1), polylimit.WithCommandTimeout(5*time.Second)), "5/s")
	keys := []string{"a", "b", "c"}
	for _, l := range []*polylimit.Limiter{single, batch, abandoned} {
		if _, errs := l.AllowMany(ctx, keys, 1); errs != nil {
			t.Fatalf("warm: %v", errs)
		}
	}
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer srv.Signal(syscall.SIGCONT)

	_, err := single.Allow(ctx, "k")
	wantCode(t, "paused", err, polylimit.ErrTimeout)
	var e *polylimit.Error
	if !errors.As(err, &e) || !e.OutcomeUnknown || !polylimit.OutcomeUnknown(err) {
		t.Fatalf("paused: %#v, want a *Error with OutcomeUnknown true", err)
	}

	_, errs := batch.AllowMany(ctx, keys, 1)
	if len(errs) != len(keys) {
		t.Fatalf("paused batch: errs %v", errs)
	}
	for i, err := range errs {
		if !errors.Is(err, polylimit.ErrTimeout) || !polylimit.OutcomeUnknown(err) {
			t.Fatalf("paused batch, key %d: %v (OutcomeUnknown %v), want a timeout with an unknown outcome",
				i, err, polylimit.OutcomeUnknown(err))
		}
	}

	// A context that ends while the call runs: the call goes on in the
	// background and may still consume.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = abandoned.Allow(short, "k")
	var ce *polylimit.ContextError
	if !errors.As(err, &ce) || !polylimit.OutcomeUnknown(err) {
		t.Fatalf("abandoned: %#v, want a *ContextError with an unknown outcome", err)
	}
}

// Goroutines check (single keys, and batches on every other call of half of
// them) while another connection kills every normal client again and again
// (CLIENT KILL during load). Afterwards the stored state, read through a
// client of its own, holds every admitted unit plus at most one unit per
// error with an unknown outcome: errors with a known outcome consumed
// nothing (docs/error-model.md, "Unknown outcome").
func TestClientKillStormConsumesOnlyThroughUnknownOutcomes(t *testing.T) {
	const (
		workers = 4
		batch   = 4
		limit   = 1000000 // never denies: every unit stored is an admission's or an error's
	)
	ctx := context.Background()
	srv := newRedis(t)
	prefix := fmt.Sprintf("go-storm-%d", runID.Add(1))
	c := open(t, srv.URL, polylimit.WithPoolSize(2), polylimit.WithCommandTimeout(2*time.Second))
	l, err := c.LimiterFor(limit, time.Hour, polylimit.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var keys []string
	for w := 0; w < workers; w++ {
		for k := 0; k < batch; k++ {
			keys = append(keys, fmt.Sprintf("w%dk%d", w, k))
		}
	}

	var admitted, denied, unknown, known, calls atomic.Int64
	count := func(r polylimit.Result, err error) {
		switch {
		case err == nil && r.Allowed:
			admitted.Add(1)
		case err == nil:
			denied.Add(1)
		case polylimit.OutcomeUnknown(err):
			unknown.Add(1)
		default:
			known.Add(1)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		mine := keys[w*batch : (w+1)*batch]
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				calls.Add(1)
				if w%2 == 1 && i%2 == 1 { // a batch of this worker's keys
					results, errs := l.AllowMany(ctx, mine, 1)
					for k := range mine {
						var err error
						if errs != nil {
							err = errs[k]
						}
						var r polylimit.Result
						if k < len(results) {
							r = results[k]
						}
						count(r, err)
					}
					continue
				}
				count(l.Allow(ctx, mine[i%batch]))
			}
		}(w)
	}
	// Kill, then wait until the checkers are back at work (more calls
	// admitted) before the next kill; until enough kills hit calls in
	// flight, or a time limit.
	kills := 0
	giveUp := time.Now().Add(4 * time.Second)
	for time.Now().Before(giveUp) && !(unknown.Load() >= 10 && kills >= 50) {
		srv.do(t, "CLIENT", "KILL", "TYPE", "normal") // not this connection (SKIPME yes)
		kills++
		resumeAt := admitted.Load() + 10
		back := time.Now().Add(500 * time.Millisecond)
		for admitted.Load() < resumeAt && time.Now().Before(back) {
			time.Sleep(time.Millisecond)
		}
	}
	stop.Store(true)
	wg.Wait()

	// The client recovers once the storm ends.
	recoverBy := time.Now().Add(5 * time.Second)
	for {
		r, err := l.Allow(ctx, "after")
		if err == nil {
			if !r.Allowed {
				t.Fatalf("after the storm: %+v, want an admission", r)
			}
			break
		}
		if time.Now().After(recoverBy) {
			t.Fatalf("no recovery 5 s after the storm: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The stored units, through a client of its own (a separate connection).
	peek, err := open(t, srv.URL).LimiterFor(limit, time.Hour, polylimit.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer peek.Close()
	var stored int64
	for _, k := range keys {
		r, err := peek.Peek(ctx, k)
		if err != nil {
			t.Fatalf("peek %s: %v", k, err)
		}
		stored += int64(limit - r.Remaining)
	}
	a, u := admitted.Load(), unknown.Load()
	t.Logf("CLIENT KILL storm: %d kills, %d calls; %d admitted, %d stored; errors: %d with an unknown outcome, "+
		"%d with a known outcome; %d of the unknown ones consumed", kills, calls.Load(), a, stored, u, known.Load(),
		stored-a)
	if denied.Load() != 0 {
		t.Errorf("%d denials under a limit never reached", denied.Load())
	}
	if u == 0 {
		t.Errorf("no kill hit a call in flight (%d kills)", kills)
	}
	if stored < a {
		t.Errorf("an admitted unit is missing: %d stored, %d admitted", stored, a)
	}
	if stored-a > u {
		t.Errorf("an error with a known outcome consumed units: %d stored, %d admitted, %d unknown-outcome errors",
			stored, a, u)
	}
}
