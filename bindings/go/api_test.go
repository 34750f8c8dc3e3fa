package polylimit_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

// The cgo and the !cgo builds must offer the same API; both compile this.
var _ interface {
	Close() error
	Limiter(string, ...polylimit.LimiterOption) (*polylimit.Limiter, error)
	LimiterFor(int, time.Duration, ...polylimit.LimiterOption) (*polylimit.Limiter, error)
	Stats() (polylimit.Stats, error)
	StatsPrometheus() (string, error)
	Name() string
} = (*polylimit.Client)(nil)

var _ interface {
	Limit() int
	Window() time.Duration
	Spec() string
	Close() error
	Allow(context.Context, string) (polylimit.Result, error)
	AllowN(context.Context, string, int) (polylimit.Result, error)
	AllowBytes(context.Context, []byte, int) (polylimit.Result, error)
	AllowAt(context.Context, string, int, time.Time) (polylimit.Result, error)
	Peek(context.Context, string) (polylimit.Result, error)
	PeekBytes(context.Context, []byte) (polylimit.Result, error)
	AllowAtMost(context.Context, string, int) (polylimit.Result, error)
	AllowWithLimit(context.Context, string, int, int, time.Duration) (polylimit.Result, error)
	Acquire(context.Context, string, int) (polylimit.Result, error)
	Refund(context.Context, string, int) (polylimit.Result, error)
	Reset(context.Context, string) error
	ResetBytes(context.Context, []byte) error
	AllowMany(context.Context, []string, int) ([]polylimit.Result, []error)
	Headers(polylimit.Result) (http.Header, error)
	HeaderText(polylimit.Result) (string, error)
} = (*polylimit.Limiter)(nil)

var _ func(...*polylimit.Client) (string, error) = polylimit.PrometheusText
var _ = []polylimit.Option{
	polylimit.WithName("n"), polylimit.WithTLSCAFile("f"), polylimit.WithTLSCADir("d"),
	polylimit.WithTLSClientCert("c", "k"), polylimit.WithTLSServerName("s"), polylimit.WithTLSInsecureSkipVerify(),
}

var _ = polylimit.Open
var _ = []polylimit.Algorithm{polylimit.SlidingLog, polylimit.SlidingCounter, polylimit.FixedWindow, polylimit.GCRA}
var _ = []polylimit.FailurePolicy{polylimit.FailError, polylimit.FailOpen, polylimit.FailClosed, polylimit.FailLocal}
var _ = []polylimit.Clock{polylimit.ClockServer, polylimit.ClockClient}
var _ = []fmt.Stringer{polylimit.GCRA, polylimit.ClockClient, polylimit.FailOpen, polylimit.ErrTimeout}
var _ func(string) (polylimit.Algorithm, error) = polylimit.ParseAlgorithm
var _ = []int64{polylimit.MinPoolSize, polylimit.MaxPoolSize, polylimit.DefaultPoolSize, polylimit.MaxWindowMs, polylimit.MaxBatch}
var _ = []polylimit.LimiterOption{
	polylimit.WithPrefix("p"), polylimit.WithClientClock(), polylimit.WithClock(polylimit.ClockServer),
	polylimit.WithAlgorithm(polylimit.GCRA), polylimit.WithBurst(2),
	polylimit.WithDenyCache(10), polylimit.WithFailurePolicy(polylimit.FailOpen),
	polylimit.WithCircuitBreaker(3, time.Second), polylimit.WithShadow(), polylimit.WithBlock(time.Second),
}
var _ = polylimit.Stats{Latency: []polylimit.LatencyBucket{{UpperBound: time.Millisecond, Count: 1}}}
var _ = polylimit.Result{Granted: 1, Shadowed: true}
var _ = polylimit.Version
var _ = polylimit.HeaderVersion
