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
	Stats() (redlimit.Stats, error)
	StatsPrometheus() (string, error)
} = (*redlimit.Client)(nil)

var _ interface {
	Limit() int
	Window() time.Duration
	Spec() string
	Close() error
	Allow(context.Context, string) (redlimit.Result, error)
	AllowN(context.Context, string, int) (redlimit.Result, error)
	AllowBytes(context.Context, []byte, int) (redlimit.Result, error)
	AllowAt(context.Context, string, int, time.Time) (redlimit.Result, error)
	Peek(context.Context, string) (redlimit.Result, error)
	PeekBytes(context.Context, []byte) (redlimit.Result, error)
	AllowAtMost(context.Context, string, int) (redlimit.Result, error)
	AllowWithLimit(context.Context, string, int, int, time.Duration) (redlimit.Result, error)
	Acquire(context.Context, string, int) (redlimit.Result, error)
	Refund(context.Context, string, int) (redlimit.Result, error)
	Reset(context.Context, string) error
	ResetBytes(context.Context, []byte) error
	AllowMany(context.Context, []string, int) ([]redlimit.Result, []error)
} = (*redlimit.Limiter)(nil)

var _ = redlimit.Open
var _ = []redlimit.Algorithm{redlimit.SlidingLog, redlimit.SlidingCounter, redlimit.FixedWindow, redlimit.GCRA}
var _ = []redlimit.FailurePolicy{redlimit.FailError, redlimit.FailOpen, redlimit.FailClosed, redlimit.FailLocal}
var _ = []redlimit.LimiterOption{
	redlimit.WithPrefix("p"), redlimit.WithClientClock(), redlimit.WithAlgorithm(redlimit.GCRA), redlimit.WithBurst(2),
	redlimit.WithDenyCache(10), redlimit.WithFailurePolicy(redlimit.FailOpen),
	redlimit.WithCircuitBreaker(3, time.Second), redlimit.WithShadow(), redlimit.WithBlock(time.Second),
}
var _ = redlimit.Stats{Latency: []redlimit.LatencyBucket{{UpperBound: time.Millisecond, Count: 1}}}
var _ = redlimit.Result{Granted: 1, Shadowed: true}
var _ = redlimit.Version
var _ = redlimit.HeaderVersion
