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
