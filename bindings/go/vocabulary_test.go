package polylimit

import (
	"bytes"
	"go/format"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Durations convert to whole units rounded up, as the Python and Java
// bindings do; a negative duration stays negative so the library refuses it.
func TestDurationRounding(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{
		{1200 * time.Microsecond, 2},
		{time.Millisecond, 1},
		{1, 1},
		{999 * time.Microsecond, 1},
		{1001 * time.Microsecond, 2},
		{0, 0},
		{-1, -1},
		{-1200 * time.Microsecond, -2},
		{-time.Millisecond, -1},
		{math.MaxInt64, math.MaxInt64/int64(time.Millisecond) + 1},
		{math.MinInt64, math.MinInt64/int64(time.Millisecond) - 1},
	} {
		if got := millis(tc.d); got != tc.want {
			t.Errorf("millis(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
	if got := ceilDiv(time.Millisecond, time.Second); got != 1 {
		t.Errorf("keepalive 1ms = %ds, want 1s", got)
	}
	var c clientConfig
	WithCommandTimeout(1200 * time.Microsecond)(&c)
	WithKeepAlive(1500 * time.Millisecond)(&c)
	if c.commandTimeout != 2 || c.keepalive != 2 {
		t.Errorf("command timeout 1.2ms = %dms, keepalive 1.5s = %ds; want 2 and 2", c.commandTimeout, c.keepalive)
	}
	var l limiterConfig
	WithBlock(1200 * time.Microsecond)(&l)
	WithCircuitBreaker(1, 1200*time.Microsecond)(&l)
	if l.block != 2 || l.breakerCooldown != 2 {
		t.Errorf("block 1.2ms = %dms, cool-down 1.2ms = %dms; want 2", l.block, l.breakerCooldown)
	}
}

// A value beyond a C int is clamped, never wrapped, to a value that every
// int field's bound refuses, so the library's message reports it.
func TestCIntClamps(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{0, 0}, {5000, 5000}, {-1, -1},
		{math.MaxInt32, math.MaxInt32}, {math.MaxInt32 + 1, math.MaxInt32}, {math.MaxInt64, math.MaxInt32},
		{1 << 32, math.MaxInt32}, // wrapping would give 0: the default
		{math.MinInt32, math.MinInt32}, {math.MinInt32 - 1, math.MinInt32}, {math.MinInt64, math.MinInt32},
	} {
		if got := cInt(tc.in); int64(got) != tc.want {
			t.Errorf("cInt(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
	// The bounds of the C int fields (polylimit_client_options and the int
	// fields of polylimit_limiter_options) are inside the int32 range, so a
	// clamped value is always out of range.
	for name, b := range map[string][2]int64{
		"pool_size":           {MinPoolSize, MaxPoolSize},
		"connect_timeout_ms":  {MinConnectTimeoutMs, MaxConnectTimeoutMs},
		"command_timeout_ms":  {MinCommandTimeoutMs, MaxCommandTimeoutMs},
		"acquire_timeout_ms":  {MinAcquireTimeoutMs, MaxAcquireTimeoutMs},
		"keepalive_s":         {MinKeepaliveS, MaxKeepaliveS},
		"idle_check_ms":       {MinIdleCheckMs, MaxIdleCheckMs},
		"deny_cache_size":     {MinDenyCacheSize, MaxDenyCacheSize},
		"breaker_failures":    {MinBreakerFailures, MaxBreakerFailures},
		"breaker_cooldown_ms": {MinBreakerCooldownMs, MaxBreakerCooldownMs},
	} {
		if b[0] <= math.MinInt32 || b[1] >= math.MaxInt32 {
			t.Errorf("%s: bounds %d..%d reach the int32 limits: clamping would give a valid value", name, b[0], b[1])
		}
	}
	for _, n := range [][]string{algorithmNames[:], clockNames[:], failurePolicyNames[:]} {
		if len(n) >= math.MaxInt32 {
			t.Error("an enum reaches MaxInt32")
		}
	}
}

func TestVocabularyNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{SlidingLog.String(), "sliding_log"}, {GCRA.String(), "gcra"}, {Algorithm(7).String(), "Algorithm(7)"},
		{ClockClient.String(), "client"}, {Clock(-1).String(), "Clock(-1)"},
		{FailOpen.String(), "open"}, {FailurePolicy(4).String(), "FailurePolicy(4)"},
		{ErrTimeout.String(), "POLYLIMIT_ETIMEOUT"}, {ErrCode(-99).String(), "POLYLIMIT_UNKNOWN(-99)"},
		{ErrClosed.Error(), "polylimit: closed"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for i, name := range algorithmNames {
		if a, err := ParseAlgorithm(name); err != nil || a != Algorithm(i) {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", name, a, err)
		}
	}
	if _, err := ParseAlgorithm("token_bucket"); err == nil || err.(*Error).Code != ErrInvalidArgument {
		t.Errorf("ParseAlgorithm(token_bucket): %v", err)
	}
	// Every code from -1 down is known, retryable exactly when it is an outage here.
	for c := ErrCode(-1); c >= ErrNotDurable; c-- {
		info, ok := codeInfos[c]
		if !ok || info.name == "" || info.text == "" {
			t.Errorf("code %d: %+v", c, info)
		}
		if c.Temporary() != info.retryable {
			t.Errorf("%s: Temporary() = %v", c, c.Temporary())
		}
	}
	if !ErrTimeout.Temporary() || !ErrPoolExhausted.Temporary() || ErrInvalidArgument.Temporary() {
		t.Error("Temporary")
	}
}

// vocabulary_gen.go is committed: it must be what gofmt prints and what the
// generator writes from capi/vocabulary/vocabulary.json (CI runs
// `generate.py go --check` too; this runs it where python3 and the
// repository are at hand).
func TestVocabularyGenerated(t *testing.T) {
	src, err := os.ReadFile("vocabulary_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	formatted, err := format.Source(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, formatted) {
		t.Error("vocabulary_gen.go is not gofmt-clean: fix capi/vocabulary/gen_go.py")
	}
	gen := filepath.Join("..", "..", "capi", "vocabulary", "generate.py")
	if _, err := os.Stat(gen); err != nil {
		t.Skip("no generator here (the package is used outside its repository)")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	if out, err := exec.Command(python, gen, "go", "--check").CombinedOutput(); err != nil {
		t.Fatalf("generate.py go --check: %v\n%s", err, out)
	}
}
