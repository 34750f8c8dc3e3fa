//go:build !cgo
// +build !cgo

package polylimit

// Built with CGO_ENABLED=0 the package still compiles, so code that imports it
// builds everywhere, but Open fails: the library is C and needs cgo.

import (
	"context"
	"time"
)

// HeaderVersion is empty: no polylimit.h was compiled in.
const HeaderVersion = ""

var errNoCgo = newError(ErrInternal, "built without cgo (CGO_ENABLED=0): the Go binding needs cgo and libpolylimit")

// Version returns "" without cgo.
func Version() string { return "" }

// Client is unusable without cgo.
type Client struct{}

// Open always fails without cgo.
func Open(url string, opts ...Option) (*Client, error) { return nil, errNoCgo }

func (c *Client) Close() error { return nil }

func (c *Client) Limiter(spec string, opts ...LimiterOption) (*Limiter, error) {
	return nil, errNoCgo
}

func (c *Client) LimiterFor(limit int, window time.Duration, opts ...LimiterOption) (*Limiter, error) {
	return nil, errNoCgo
}

func (c *Client) Stats() (Stats, error)            { return Stats{}, errNoCgo }
func (c *Client) StatsPrometheus() (string, error) { return "", errNoCgo }

// Limiter is unusable without cgo.
type Limiter struct{}

func (l *Limiter) Limit() int            { return 0 }
func (l *Limiter) Window() time.Duration { return 0 }
func (l *Limiter) Spec() string          { return "" }
func (l *Limiter) Close() error          { return nil }

func (l *Limiter) Allow(ctx context.Context, key string) (Result, error) { return Result{}, errNoCgo }
func (l *Limiter) AllowN(ctx context.Context, key string, n int) (Result, error) {
	return Result{}, errNoCgo
}
func (l *Limiter) AllowBytes(ctx context.Context, key []byte, n int) (Result, error) {
	return Result{}, errNoCgo
}
func (l *Limiter) AllowAt(ctx context.Context, key string, n int, t time.Time) (Result, error) {
	return Result{}, errNoCgo
}
func (l *Limiter) Peek(ctx context.Context, key string) (Result, error) { return Result{}, errNoCgo }
func (l *Limiter) PeekBytes(ctx context.Context, key []byte) (Result, error) {
	return Result{}, errNoCgo
}
func (l *Limiter) AllowAtMost(ctx context.Context, key string, n int) (Result, error) {
	return Result{}, errNoCgo
}
func (l *Limiter) AllowWithLimit(ctx context.Context, key string, n, limit int, window time.Duration) (Result, error) {
	return Result{}, errNoCgo
}
func (l *Limiter) Acquire(ctx context.Context, key string, n int) (Result, error) {
	return Result{}, errNoCgo
}
func (l *Limiter) Refund(ctx context.Context, key string, n int) (Result, error) {
	return Result{}, errNoCgo
}
func (l *Limiter) Reset(ctx context.Context, key string) error      { return errNoCgo }
func (l *Limiter) ResetBytes(ctx context.Context, key []byte) error { return errNoCgo }

func (l *Limiter) AllowMany(ctx context.Context, keys []string, n int) ([]Result, []error) {
	errs := make([]error, len(keys))
	for i := range errs {
		errs[i] = errNoCgo
	}
	return make([]Result, len(keys)), errs
}
