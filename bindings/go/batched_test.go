//go:build cgo
// +build cgo

// Batched checks (batch.go, WaitBatched): concurrent Allow calls decided
// together in one polylimit_limiter_check_many. Each caller must get its own
// answer, the one a single check would have given; contexts and Close must
// behave as for the other paths.

package polylimit_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

// waitFor polls cond until it holds, failing the test after 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool, state ...func() string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			for _, s := range state {
				what += " (" + s() + ")"
			}
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// batcherIdle waits until l has no batched check left and no batch goroutine.
func batcherIdle(t *testing.T, what string, l *polylimit.Limiter) {
	t.Helper()
	waitFor(t, what+": the batcher empty and its goroutines gone", func() bool {
		return polylimit.BatchedChecks(l) == 0 && polylimit.BatchGoroutines(l) == 0
	})
}

// twoBatchesInFlight makes call(0) and call(1) (each on a goroutine of its
// own) and waits until each is the one check of a batch in flight on l, so
// that the calls made next are queued behind them.
func twoBatchesInFlight(t *testing.T, l *polylimit.Limiter, call func(i int)) {
	t.Helper()
	for i := 0; i < polylimit.BatchesInFlight; i++ {
		before := polylimit.BatchedChecks(l)
		go call(i)
		waitFor(t, fmt.Sprintf("batch %d in flight", i+1), func() bool {
			return polylimit.BatchedChecks(l) == before+1 && polylimit.BatchGoroutines(l) == i+1 && polylimit.BatchQueue(l) == 0
		}, func() string {
			return fmt.Sprintf("%d batched checks, %d goroutines, %d queued", polylimit.BatchedChecks(l),
				polylimit.BatchGoroutines(l), polylimit.BatchQueue(l))
		})
	}
}

// frozen stops srv (SIGSTOP) and resumes it at the end of the test if the
// test did not.
func frozen(t *testing.T, srv *redisServer) (resume func()) {
	t.Helper()
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { srv.Signal(syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// N goroutines x M calls: a shared key admits exactly its limit, and every
// caller gets its own key's answers (the remaining count its own calls
// leave, with its own cost), whether the batch mixes costs, binary keys and
// cancelable contexts or not.
func TestBatchedShareOneLimitExactly(t *testing.T) {
	const limit, goroutines, attempts = 150, 64, 8
	for _, m := range []struct {
		name string
		opts []polylimit.Option
	}{
		{"default (batched past the blocking checks)", []polylimit.Option{polylimit.WithPoolSize(8)}},
		{"all batched", allBatched},
	} {
		c := open(t, shared.URL, m.opts...)
		l := limiter(t, c, fmt.Sprintf("%d/minute", limit))
		before, err := c.Stats()
		if err != nil {
			t.Fatal(err)
		}
		// Besides the hot key, every goroutine checks a key of its own with a
		// cost of its own (so that batches mix costs), always admitted.
		own := func(ctx context.Context, g, i int) error {
			key, cost := fmt.Sprint("own", g), 1+g%3
			var r polylimit.Result
			var err error
			if g%4 == 1 {
				r, err = l.AllowBytes(ctx, []byte(key), cost)
			} else {
				r, err = l.AllowN(ctx, key, cost)
			}
			if want := limit - cost*(i+1); err != nil || !r.Allowed || r.Remaining != want || r.Granted != cost {
				return fmt.Errorf("goroutine %d, own call %d (cost %d): %+v, %v; want allowed, remaining %d",
					g, i, cost, r, err, want)
			}
			return nil
		}
		admitted, denied := allowHot(t, m.name, l, goroutines, attempts, func(g int) bool { return g%4 == 3 }, own)
		if admitted != limit || denied != goroutines*attempts-limit {
			t.Fatalf("%s: admitted %d, denied %d; want exactly %d admitted", m.name, admitted, denied, limit)
		}
		batcherIdle(t, m.name, l)
		after, err := c.Stats()
		if err != nil {
			t.Fatal(err)
		}
		checks, trips := after.Checks-before.Checks, after.RoundTrips-before.RoundTrips
		t.Logf("%s: %d checks in %d round trips", m.name, checks, trips)
		if checks != 2*goroutines*attempts {
			t.Fatalf("%s: %d checks counted, want %d", m.name, checks, 2*goroutines*attempts)
		}
		// All batched, the callers wait on channels, so the others run and
		// join the batches. (By default a caller blocks in C while at most
		// two checks are in flight: when the goroutines happen to run one
		// or two at a time, nothing is batched.)
		if m.name == "all batched" && trips >= checks {
			t.Fatalf("%s: %d round trips for %d checks: nothing was batched", m.name, trips, checks)
		}
	}
}

// Decisions and the client's counters are those of single blocking checks,
// for every limiter feature check_many handles per key: the deny cache,
// shadow mode, several limits, a block, the failure policy; and for calls
// the binding keeps out of batches (bad keys and costs). A limiter with a
// circuit breaker is never batched.
func TestBatchedAnswersAndCountsAsBlocking(t *testing.T) {
	refused := func() string {
		srv := newRedis(t)
		srv.Stop()
		return srv.URL
	}()
	type counts struct{ checks, admitted, denied, errors, cacheHits, degraded, nearLimit uint64 }
	// An unreachable server's messages depend on timing (a connect error,
	// or the reconnect backoff): only their codes are compared.
	codesOnly := regexp.MustCompile(`(error -?\d+) ".*" (errno)`)
	cases := []struct {
		name  string
		url   string
		spec  string
		lopts []polylimit.LimiterOption
	}{
		{"plain", shared.URL, "3/minute", nil},
		{"gcra", shared.URL, "3/minute", []polylimit.LimiterOption{polylimit.WithAlgorithm(polylimit.GCRA)}},
		{"deny cache", shared.URL, "3/minute", []polylimit.LimiterOption{polylimit.WithDenyCache(16)}},
		{"shadow", shared.URL, "3/minute", []polylimit.LimiterOption{polylimit.WithShadow()}},
		{"shadow and deny cache", shared.URL, "3/minute", []polylimit.LimiterOption{polylimit.WithShadow(), polylimit.WithDenyCache(16)}},
		{"two limits", shared.URL, "3/minute; 4/hour", nil},
		{"block", shared.URL, "3/minute", []polylimit.LimiterOption{polylimit.WithBlock(time.Minute)}},
		{"fail open", refused, "3/minute", []polylimit.LimiterOption{polylimit.WithFailurePolicy(polylimit.FailOpen)}},
		{"fail closed", refused, "3/minute", []polylimit.LimiterOption{polylimit.WithFailurePolicy(polylimit.FailClosed)}},
		{"fail error", refused, "3/minute", nil},
		{"breaker", shared.URL, "3/minute", []polylimit.LimiterOption{polylimit.WithCircuitBreaker(2, time.Second)}},
	}
	for _, tc := range cases {
		var want []string
		var wantCounts counts
		for _, m := range []struct {
			name string
			opts []polylimit.Option
		}{{"blocking", allBlocking}, {"batched", allBatched}} {
			c := open(t, tc.url, with(m.opts, polylimit.WithConnectTimeout(300*time.Millisecond))...)
			l := limiter(t, c, tc.spec, tc.lopts...)
			ctx := context.Background()
			var got []string
			add := func(r polylimit.Result, err error) { got = append(got, describe(r, err)) }
			for i := 0; i < 5; i++ {
				add(l.Allow(ctx, "k"))
			}
			add(l.AllowN(ctx, "n", 2))
			add(l.AllowN(ctx, "n", 2))
			add(l.AllowN(ctx, "n", 4)) // beyond the limit: the library's argument error
			add(l.AllowN(ctx, "n", 0))
			add(l.AllowBytes(ctx, []byte("a\x00b"), 1))
			add(l.AllowBytes(ctx, nil, 1))
			add(l.Allow(ctx, ""))
			add(l.Allow(ctx, strings.Repeat("x", polylimit.MaxKeyLen+1)))
			if m.name == "batched" {
				if tc.name == "breaker" {
					if n := polylimit.QueuedWaiters(c); n != 0 {
						t.Fatalf("%s: a limiter with a circuit breaker: %d queued waiters (-1: it was batched)", tc.name, n)
					}
				} else if n := polylimit.QueuedWaiters(c); n != -1 {
					t.Fatalf("%s: checks were queued beside the batched ones (%d waiters)", tc.name, n)
				}
				batcherIdle(t, tc.name, l)
			}
			s, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			cs := counts{s.Checks, s.Admitted, s.Denied, s.Errors, s.CacheHits, s.Degraded, s.NearLimit}
			if m.name == "blocking" {
				want, wantCounts = got, cs
				continue
			}
			if tc.url == refused {
				for i := range got {
					got[i] = codesOnly.ReplaceAllString(got[i], "$1 $2")
					want[i] = codesOnly.ReplaceAllString(want[i], "$1 $2")
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s: batched answers:\n  %s\nblocking answers:\n  %s", tc.name, strings.Join(got, "\n  "),
					strings.Join(want, "\n  "))
			}
			if cs != wantCounts {
				t.Fatalf("%s: batched counts %+v, blocking counts %+v", tc.name, cs, wantCounts)
			}
		}
	}
}

// In one batch, a key the server refuses (its storage key holds a list:
// WRONGTYPE) and a cost the library refuses fail alone; the other callers
// of the same batch get their answers.
func TestBatchedPerKeyErrors(t *testing.T) {
	srv := newRedis(t)
	c := open(t, srv.URL, with(allBatched, polylimit.WithCommandTimeout(10*time.Second))...)
	l := limiter(t, c, "5/minute")
	ctx := context.Background()
	blocking := limiter(t, open(t, srv.URL, allBlocking...), "5/minute")
	// A key whose storage key holds a list.
	spoil := func(l *polylimit.Limiter, key string) {
		t.Helper()
		if _, err := l.Allow(ctx, key); err != nil {
			t.Fatal(err)
		}
		keys, err := srv.Keys("*" + key + "*")
		if err != nil || len(keys) != 1 {
			t.Fatalf("the storage key of %q: %q, %v", key, keys, err)
		}
		srv.do(t, "DEL", keys[0])
		srv.do(t, "RPUSH", keys[0], "x")
	}
	spoil(l, "wrongtype-batched")
	spoil(blocking, "wrongtype-blocking")
	batcherIdle(t, "after the warm-up", l)
	// What single blocking checks answer, for comparison.
	_, wrongType := blocking.Allow(ctx, "wrongtype-blocking")
	wantError(t, "a WRONGTYPE key, blocking", wrongType, polylimit.ErrScript, "WRONGTYPE")
	_, tooMuch := blocking.AllowN(ctx, "x", 6)
	wantCode(t, "AllowN(6) on 5/minute", tooMuch, polylimit.ErrInvalidArgument)

	// Two batches in flight on a frozen server hold the batch goroutines;
	// the calls made next are queued, and decided in one batch once the
	// server is back.
	resume := frozen(t, srv)
	type answer struct {
		r   polylimit.Result
		err error
	}
	first := make(chan answer, polylimit.BatchesInFlight)
	twoBatchesInFlight(t, l, func(i int) { r, err := l.Allow(ctx, fmt.Sprint("first", i)); first <- answer{r, err} })
	const good = 8
	wrong, over := make(chan answer, 1), make(chan answer, 1)
	goods := make([]chan answer, good)
	go func() { r, err := l.Allow(ctx, "wrongtype-batched"); wrong <- answer{r, err} }()
	go func() { r, err := l.AllowN(ctx, "over", 6); over <- answer{r, err} }()
	for i := range goods {
		goods[i] = make(chan answer, 1)
		go func(i int) { r, err := l.AllowN(ctx, fmt.Sprint("good", i), 1+i%2); goods[i] <- answer{r, err} }(i)
	}
	waitFor(t, "the calls queued", func() bool { return polylimit.BatchQueue(l) == good+2 })
	before, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	resume()
	for i := 0; i < polylimit.BatchesInFlight; i++ {
		if a := <-first; a.err != nil || !a.r.Allowed {
			t.Fatalf("a first call: %+v, %v", a.r, a.err)
		}
	}
	a := <-wrong
	wantError(t, "a WRONGTYPE key, batched", a.err, polylimit.ErrScript, "WRONGTYPE")
	if got, want := describe(a.r, a.err), describe(polylimit.Result{}, wrongType); strings.ReplaceAll(got, "batched", "blocking") != want {
		t.Fatalf("a WRONGTYPE key, batched: %s; blocking: %s", got, want)
	}
	a = <-over
	if describe(a.r, a.err) != describe(polylimit.Result{}, tooMuch) {
		t.Fatalf("AllowN(6) batched: %s; blocking: %s", describe(a.r, a.err), describe(polylimit.Result{}, tooMuch))
	}
	for i, ch := range goods {
		cost := 1 + i%2
		if a := <-ch; a.err != nil || !a.r.Allowed || a.r.Remaining != 5-cost || a.r.Granted != cost {
			t.Fatalf("good%d (cost %d), batched with failing keys: %+v, %v", i, cost, a.r, a.err)
		}
	}
	after, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// One round trip per cost: the good keys of cost 1 with the WRONGTYPE
	// one, those of cost 2 (each a keys call); and one more for the
	// WRONGTYPE key (its keys call answers that its script failed: it goes
	// again alone, where its error is its own). The cost of 6 is refused
	// before any I/O.
	if trips := after.RoundTrips - before.RoundTrips; trips != 3 {
		t.Fatalf("%d round trips for the queued batch, want 3 (one per valid cost, one for the WRONGTYPE key again)", trips)
	}
	batcherIdle(t, "after the batch", l)
}

// A context that ends returns at once, whether its check is still queued
// (then it is never sent) or in a batch in flight (its late answer is
// dropped); nothing is left behind.
func TestBatchedContextEnds(t *testing.T) {
	srv := newRedis(t)
	c := open(t, srv.URL, with(allBatched, polylimit.WithCommandTimeout(10*time.Second))...)
	l := limiter(t, c, "100/minute")
	bg := context.Background()
	if _, err := l.Allow(bg, "warm"); err != nil {
		t.Fatal(err)
	}
	batcherIdle(t, "after the warm-up", l)
	resume := frozen(t, srv)
	wantAbandoned := func(what string, err error, want error) {
		t.Helper()
		var ce *polylimit.ContextError
		if !errors.Is(err, want) || !errors.As(err, &ce) || ce.Op != "allow" || !polylimit.OutcomeUnknown(err) {
			t.Errorf("%s: %v, want a ContextError wrapping %v with an unknown outcome", what, err, want)
		}
	}
	// Batch 1: a call whose deadline passes while it is in flight. Batch 2:
	// a call that waits for its answer.
	inFlight, answered := make(chan error, 1), make(chan error, 1)
	twoBatchesInFlight(t, l, func(i int) {
		if i == 0 {
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			defer cancel()
			_, err := l.Allow(ctx, "inflight")
			inFlight <- err
			return
		}
		r, err := l.Allow(bg, "answered")
		if err == nil && (!r.Allowed || r.Remaining != 99) {
			err = fmt.Errorf("%+v", r)
		}
		answered <- err
	})
	// Queued behind them: calls whose contexts end, by deadline or cancel.
	const queued = 16
	var wg sync.WaitGroup
	for i := 0; i < queued; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
			want := context.DeadlineExceeded
			if i%2 == 1 {
				ctx, cancel = context.WithCancel(bg)
				time.AfterFunc(100*time.Millisecond, cancel)
				want = context.Canceled
			}
			defer cancel()
			start := time.Now()
			_, err := l.Allow(ctx, "queued")
			wantAbandoned(fmt.Sprintf("queued call %d", i), err, want)
			if took := time.Since(start); took > time.Second {
				t.Errorf("queued call %d: returned after %v, want about 100ms", i, took)
			}
		}(i)
	}
	wg.Wait()
	start := time.Now()
	wantAbandoned("the call in flight", <-inFlight, context.DeadlineExceeded)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the call in flight returned %v after the queued ones", took)
	}
	if n := polylimit.BatchedChecks(l); n != 2+queued {
		t.Fatalf("%d batched checks pending while frozen, want %d (abandoned ones stay until dropped)", n, 2+queued)
	}
	resume()
	if err := <-answered; err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
	batcherIdle(t, "after SIGCONT", l)
	// The abandoned calls that were sent consumed their unit; those still
	// queued were never sent.
	for key, remaining := range map[string]int{"inflight": 99, "queued": 100} {
		if r, err := l.Peek(bg, key); err != nil || r.Remaining != remaining {
			t.Fatalf("%q after abandoned calls: %+v, %v; want %d remaining", key, r, err, remaining)
		}
	}
}

// Closing: Client.Close waits for the batches in flight (as for blocking
// calls: the command timeout bounds them), fails the checks still queued
// with ErrClosed, and the batch goroutines end. Limiter.Close lets the
// batches in flight complete; checks queued behind them fail with ErrClosed
// (the limiter is closed), as a call made after Close does.
func TestBatchedChecksAndClose(t *testing.T) {
	srv := newRedis(t)
	const commandTimeout = 800 * time.Millisecond
	c, err := polylimit.Open(srv.URL, with(allBatched, polylimit.WithCommandTimeout(commandTimeout))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := limiter(t, c, "100/minute")
	freed := limiter(t, c, "100/minute")
	bg := context.Background()
	for _, x := range []*polylimit.Limiter{l, freed} {
		if _, err := x.Allow(bg, "warm"); err != nil {
			t.Fatal(err)
		}
		batcherIdle(t, "after the warm-up", x)
	}
	type answer struct {
		r   polylimit.Result
		err error
	}
	const n = 16

	// Limiter.Close under batched checks; the server comes back meanwhile.
	resume := frozen(t, srv)
	fromFreed := make(chan answer, n)
	call := func(int) { r, err := freed.Allow(bg, "k"); fromFreed <- answer{r, err} }
	twoBatchesInFlight(t, freed, call)
	for i := polylimit.BatchesInFlight; i < n; i++ {
		go call(i)
	}
	waitFor(t, "the checks batched", func() bool { return polylimit.BatchedChecks(freed) == n })
	time.AfterFunc(200*time.Millisecond, resume)
	if err := freed.Close(); err != nil {
		t.Fatal(err)
	}
	var allowed, closed int
	for i := 0; i < n; i++ {
		switch a := <-fromFreed; {
		case a.err == nil && a.r.Allowed:
			allowed++
		case errors.Is(a.err, polylimit.ErrClosed):
			wantError(t, "a queued check at Limiter.Close", a.err, polylimit.ErrClosed, "the limiter is closed")
			closed++
		default:
			t.Fatalf("a check at Limiter.Close: %+v, %v", a.r, a.err)
		}
	}
	if allowed != polylimit.BatchesInFlight || closed != n-allowed {
		t.Fatalf("Limiter.Close: %d allowed, %d closed; want the %d in flight allowed, the others closed",
			allowed, closed, polylimit.BatchesInFlight)
	}
	batcherIdle(t, "after Limiter.Close", freed)

	// Client.Close with a frozen server: the batches in flight time out,
	// the queued checks fail with ErrClosed.
	resume = frozen(t, srv)
	fromL := make(chan answer, n)
	call = func(i int) { r, err := l.Allow(bg, fmt.Sprint("k", i)); fromL <- answer{r, err} }
	twoBatchesInFlight(t, l, call)
	for i := polylimit.BatchesInFlight; i < n; i++ {
		go call(i)
	}
	waitFor(t, "the checks batched", func() bool { return polylimit.BatchedChecks(l) == n })
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > commandTimeout+time.Second {
		t.Fatalf("Client.Close with batched checks took %v (command timeout %v)", took, commandTimeout)
	}
	var timedOut int
	closed = 0
	for i := 0; i < n; i++ {
		select {
		case a := <-fromL:
			switch {
			case errors.Is(a.err, polylimit.ErrTimeout):
				timedOut++
			case errors.Is(a.err, polylimit.ErrClosed):
				closed++
			default:
				t.Fatalf("a check in flight at Client.Close: %+v, %v, want ErrTimeout or ErrClosed", a.r, a.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d checks still waiting after Client.Close", n-i, n)
		}
	}
	if timedOut != polylimit.BatchesInFlight || closed != n-timedOut {
		t.Fatalf("Client.Close: %d timed out, %d closed; want the %d in flight timed out, the others closed",
			timedOut, closed, polylimit.BatchesInFlight)
	}
	batcherIdle(t, "after Client.Close", l)
	resume()
	_, err = l.Allow(bg, "k")
	wantError(t, "Allow after Client.Close", err, polylimit.ErrClosed, "the client is closed")

	// Close racing a stream of batched calls on a live server: every call
	// is decided or fails with ErrClosed, and nothing is left behind.
	for round := 0; round < 3; round++ {
		cc, err := polylimit.Open(srv.URL, allBatched...)
		if err != nil {
			t.Fatal(err)
		}
		ls := []*polylimit.Limiter{limiter(t, cc, "1000000/minute"), limiter(t, cc, "1000000/minute")}
		var ok, closedN int64
		var wg sync.WaitGroup
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				ctx := bg
				if g%2 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(bg)
					defer cancel()
				}
				for i := 0; i < 50; i++ {
					_, err := ls[g%2].Allow(ctx, fmt.Sprint("k", g))
					switch {
					case err == nil:
						atomic.AddInt64(&ok, 1)
					case errors.Is(err, polylimit.ErrClosed):
						atomic.AddInt64(&closedN, 1)
					default:
						t.Errorf("Allow: %v", err)
						return
					}
				}
			}(g)
		}
		waitCalls(&ok, &closedN)
		if round == 1 {
			ls[0].Close() // a limiter first, then its client
		}
		cc.Close()
		wg.Wait()
		if ok+closedN != 16*50 {
			t.Fatalf("round %d: ok %d + closed %d != %d", round, ok, closedN, 16*50)
		}
		for _, x := range ls {
			batcherIdle(t, fmt.Sprintf("round %d", round), x)
		}
	}
}

// While a client batches, and for a moment after its last batch, a check
// that finds few checks in flight is batched too: otherwise, under a
// CPU-bound load, a share of the checks (up to most of them) took the
// blocking call between two batches, one script call each.
func TestBatchingHoldsOffTheBlockingCall(t *testing.T) {
	ctx := context.Background()
	c := open(t, shared.URL, polylimit.WithBlockingChecks(0)) // every check batched
	l := limiter(t, c, "100/minute")
	if !polylimit.MayBlock(c) {
		t.Fatal("no batch yet: a check may block")
	}
	if _, err := l.Allow(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the batch goroutine to end", func() bool { n, _ := polylimit.BatchState(c); return n == 0 })
	if _, ago := polylimit.BatchState(c); ago < 0 {
		t.Fatal("the batch goroutine ended without saying when")
	}
	for _, tc := range []struct {
		running int32
		ago     time.Duration
		may     bool
	}{
		{1, -1, false},                     // a batch goroutine runs
		{2, time.Hour, false},              // two run
		{0, 0, false},                      // one just ended
		{0, 200 * time.Microsecond, false}, // within the holdoff
		{0, 50 * time.Millisecond, true},   // long after
		{0, -1, true},                      // never batched
	} {
		polylimit.SetBatchState(c, tc.running, tc.ago)
		if got := polylimit.MayBlock(c); got != tc.may {
			t.Errorf("running %d, last ended %v ago: MayBlock %v, want %v", tc.running, tc.ago, got, tc.may)
		}
	}
	polylimit.SetBatchState(c, 0, -1)

	// WaitQueued has no batches to protect.
	q := open(t, shared.URL, polylimit.WithWaitStrategy(polylimit.WaitQueued))
	polylimit.SetBatchState(q, 1, 0)
	if !polylimit.MayBlock(q) {
		t.Error("WaitQueued: MayBlock false")
	}
	polylimit.SetBatchState(q, 0, -1)
}
