package redlimit_test

import (
	"context"
	"time"

	redlimit "github.com/redlimit/redlimit/bindings/go"
)

// The cgo and the !cgo builds must offer the same API; both compile this.
var _ interface {
	Close() error
	Limiter(string, ...redlimit.LimiterOption) (*redlimit.Limiter, error)
	LimiterFor(int, time.Duration, ...redlimit.LimiterOption) (*redlimit.Limiter, error)
} = (*redlimit.Client)(nil)

var _ interface {
	Limit() int
	Window() time.Duration
	Close() error
	Allow(context.Context, string) (redlimit.Result, error)
	AllowN(context.Context, string, int) (redlimit.Result, error)
	AllowBytes(context.Context, []byte, int) (redlimit.Result, error)
	AllowAt(context.Context, string, int, time.Time) (redlimit.Result, error)
	Peek(context.Context, string) (redlimit.Result, error)
	PeekBytes(context.Context, []byte) (redlimit.Result, error)
	Reset(context.Context, string) error
	ResetBytes(context.Context, []byte) error
	AllowMany(context.Context, []string, int) ([]redlimit.Result, []error)
} = (*redlimit.Limiter)(nil)

var _ = redlimit.Open
var _ = redlimit.Version
var _ = redlimit.HeaderVersion
