// Command bench compares the polylimit Go binding (cgo over libpolylimit)
// with github.com/go-redis/redis_rate (pure Go, GCRA, over go-redis) on one
// redis-server that it starts itself, and prints a table: checks per second
// on the allow, deny and hot-key paths at each number of checks in flight,
// as the median (min..max) of interleaved repetitions, with what kept the
// machine busy (the client's and the Redis main thread's CPU per check, the
// share of the machine's cores and of Redis's one thread they add up to),
// the ratio to redis_rate and, for the rows with coalescing, the ratio to the
// same client without it.
//
// The rows by default: Limiter.Allow as it comes (blocking while at most 2
// checks of the client are in flight, then batched: check_many); the queued
// mode, the binding's non-blocking path (every check submitted to the
// library's completion queue), with coalescing and keys calls on and off;
// and redis_rate. -only selects others: the other ways Allow can wait (every
// check blocking, every check batched, queued past 2, a cancelable
// context) and the sliding log.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

var (
	duration   = flag.Duration("duration", 2*time.Second, "measured time per cell")
	warmup     = flag.Duration("warmup", 300*time.Millisecond, "unmeasured time before each cell")
	reps       = flag.Int("reps", 3, "repetitions, interleaved; the table shows median (min..max)")
	poolSize   = flag.Int("pool", 0, "polylimit pool size (WithPoolSize; 0: the library's default)")
	redisPool  = flag.Int("redis-pool", 64, "go-redis PoolSize for redis_rate (0: go-redis's default, 10 per GOMAXPROCS)")
	goroutines = flag.String("goroutines", "1,64", "comma-separated numbers of checks in flight (goroutines)")
	paths      = flag.String("paths", "allow,deny,hot", "allow, deny, hot (one key; run at the levels above 1), comma-separated")
	numKeys    = flag.Int("keys", 2000, "distinct keys of the allow and deny paths, shared out among the goroutines")
	only       = flag.String("only", "", "run only the rows whose name and algorithm contain this (or one of a|b|c), and redis_rate; empty: the default rows")
	url        = flag.String("url", "", "use this Redis (redis://host:port) instead of starting redis-server")
	cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the whole run (go tool pprof) to this file")
	withPeer   = flag.Bool("peer", true, "run redis_rate too (-peer=false: the polylimit rows alone, for perf)")
)

const peerName = "redis_rate v10"

// op is one decision; it reports whether it was admitted.
type op func(ctx context.Context, key string) (bool, error)

type contender struct {
	name, algorithm string
	byDefault       bool              // one of the default rows
	cancelable      bool              // a context that can end (context.WithCancel)
	client          *polylimit.Client // its client, for script_calls; nil for redis_rate
	off             string            // the name of the same row without coalescing, if any
	allow, deny     op                // on a limit far above the load; on an exhausted one
}

type cell struct {
	checksPerSec float64 // checks completed / measured wall time
	p50, p99     time.Duration
	denied       float64 // fraction of checks denied
	clientCPU    float64 // this process's CPU µs (user+sys, every thread) per check
	serverCPU    float64 // the Redis main thread's CPU µs per check (INFO cpu)
	scriptCalls  float64 // script calls sent per check (client stats); NaN for redis_rate
}

// cpuUsed is the share of the machine's cores the cell kept busy.
func (c cell) cpuUsed() float64 {
	return c.checksPerSec * (c.clientCPU + c.serverCPU) / 1e6 / float64(runtime.NumCPU())
}

// redisBusy is the share of one core (the Redis main thread's) the cell kept busy.
func (c cell) redisBusy() float64 { return c.checksPerSec * c.serverCPU / 1e6 }

// Keys: the allow and deny paths' keys, and the hot key (deny path, used up).
var allowKeys, denyKeys []string

const hotKey = "hot"

func main() {
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	levels, err := parseLevels(*goroutines)
	if err != nil {
		fatal(err)
	}
	var pathList []string
	for _, p := range strings.Split(*paths, ",") {
		if p = strings.TrimSpace(p); p != "allow" && p != "deny" && p != "hot" {
			fatal(fmt.Errorf("bad -paths %q", *paths))
		}
		pathList = append(pathList, p)
	}
	for _, g := range levels {
		if g > *numKeys {
			fatal(fmt.Errorf("-keys %d: fewer keys than goroutines (%d)", *numKeys, g))
		}
	}
	for i := 0; i < *numKeys; i++ {
		allowKeys = append(allowKeys, fmt.Sprintf("allow:user:%d", i))
		denyKeys = append(denyKeys, fmt.Sprintf("deny:user:%d", i))
	}

	addr := strings.TrimPrefix(*url, "redis://")
	if *url == "" {
		srv, err := startRedis()
		if err != nil {
			fatal(err)
		}
		defer srv.stop()
		stopOnSignal(srv)
		addr = srv.addr
	}
	redisURL := "redis://" + addr

	// One client per way of running Allow; each has its own pool.
	openClient := func(extra ...polylimit.Option) *polylimit.Client {
		opts := extra
		if *poolSize > 0 {
			opts = append(opts, polylimit.WithPoolSize(*poolSize))
		}
		c, err := polylimit.Open(redisURL, opts...)
		if err != nil {
			fatal(err)
		}
		return c
	}
	// limiters makes the allow and deny limiters of one client and
	// algorithm: a limit far above what one server can serve, so nothing is
	// denied, and 1 a day, used up before the first cell, so everything is.
	limiters := func(c *polylimit.Client, prefix string, alg polylimit.Algorithm) (op, op) {
		allow, err := c.LimiterFor(1000000, time.Second, polylimit.WithPrefix(prefix+"-a"),
			polylimit.WithAlgorithm(alg), polylimit.WithBurst(burstFor(alg, 1000000)))
		if err != nil {
			fatal(err)
		}
		deny, err := c.LimiterFor(1, 24*time.Hour, polylimit.WithPrefix(prefix+"-d"), polylimit.WithAlgorithm(alg),
			polylimit.WithBurst(burstFor(alg, 1)))
		if err != nil {
			fatal(err)
		}
		wrap := func(l *polylimit.Limiter) op {
			return func(ctx context.Context, k string) (bool, error) {
				r, err := l.Allow(ctx, k)
				return r.Allowed, err
			}
		}
		return wrap(allow), wrap(deny)
	}
	queuedOpts := []polylimit.Option{polylimit.WithBlockingChecks(0), polylimit.WithWaitStrategy(polylimit.WaitQueued)}
	def := openClient()
	defer def.Close()
	// The queued mode: every check submitted to the library's queue
	// (polylimit_limiter_submit_check), one poller goroutine per client.
	queued := openClient(queuedOpts...)
	defer queued.Close()
	queuedOff := openClient(append(queuedOpts, polylimit.WithoutCoalescing())...)
	defer queuedOff.Close()
	// The other ways (-only).
	defOff := openClient(polylimit.WithoutCoalescing())
	defer defOff.Close()
	blocking := openClient(polylimit.WithBlockingChecks(1 << 20))
	defer blocking.Close()
	queuedPast := openClient(polylimit.WithWaitStrategy(polylimit.WaitQueued))
	defer queuedPast.Close()
	batched := openClient(polylimit.WithBlockingChecks(0), polylimit.WithWaitStrategy(polylimit.WaitBatched))
	defer batched.Close()

	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: *redisPool})
	defer rdb.Close()
	rate := redis_rate.NewLimiter(rdb)
	rateOp := func(limit redis_rate.Limit) op {
		return func(ctx context.Context, k string) (bool, error) {
			r, err := rate.Allow(ctx, k, limit)
			if err != nil {
				return false, err
			}
			return r.Allowed > 0, nil
		}
	}
	// INFO cpu goes through a connection of its own, outside the measured pool.
	info := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer info.Close()

	var all []contender
	add := func(name, alg string, byDefault bool, c *polylimit.Client, off, prefix string, a polylimit.Algorithm) {
		allow, deny := limiters(c, prefix, a)
		all = append(all, contender{name, alg, byDefault, false, c, off, allow, deny})
	}
	all = append(all, contender{peerName, "GCRA", true, false, nil, "",
		rateOp(redis_rate.Limit{Rate: 1000000, Burst: 1000000, Period: time.Second}),
		rateOp(redis_rate.Limit{Rate: 1, Burst: 1, Period: 24 * time.Hour})})
	add("polylimit", "fixed window", true, def, "polylimit, no coalescing", "fw", polylimit.FixedWindow)
	add("polylimit", "GCRA", true, def, "polylimit, no coalescing", "gcra", polylimit.GCRA)
	add("polylimit, queued", "fixed window", true, queued, "polylimit, queued, no coalescing", "fw-q",
		polylimit.FixedWindow)
	add("polylimit, queued", "GCRA", true, queued, "polylimit, queued, no coalescing", "gcra-q", polylimit.GCRA)
	add("polylimit, queued, no coalescing", "fixed window", true, queuedOff, "", "fw-q-off", polylimit.FixedWindow)
	add("polylimit, queued, no coalescing", "GCRA", true, queuedOff, "", "gcra-q-off", polylimit.GCRA)
	add("polylimit", "sliding log", false, def, "polylimit, no coalescing", "sl", polylimit.SlidingLog)
	add("polylimit, no coalescing", "fixed window", false, defOff, "", "fw-off", polylimit.FixedWindow)
	add("polylimit, no coalescing", "GCRA", false, defOff, "", "gcra-off", polylimit.GCRA)
	add("polylimit, no coalescing", "sliding log", false, defOff, "", "sl-off", polylimit.SlidingLog)
	add("polylimit, all blocking", "GCRA", false, blocking, "", "gcra-blocking", polylimit.GCRA)
	add("polylimit, queued past 2", "GCRA", false, queuedPast, "", "gcra-queued-past", polylimit.GCRA)
	add("polylimit, all batched", "GCRA", false, batched, "", "gcra-batched", polylimit.GCRA)
	ctxAllow, ctxDeny := limiters(def, "gcra-ctx", polylimit.GCRA)
	all = append(all, contender{"polylimit, cancelable ctx", "GCRA", false, true, def, "", ctxAllow, ctxDeny})
	var contenders []*contender
	for i := range all {
		c := &all[i]
		if c.name == peerName && !*withPeer {
			continue
		}
		if c.name == peerName || (*only == "" && c.byDefault) {
			contenders = append(contenders, c)
			continue
		}
		if *only == "" {
			continue
		}
		for _, o := range strings.Split(*only, "|") {
			if strings.Contains(c.name+" "+c.algorithm, o) {
				contenders = append(contenders, c)
				break
			}
		}
	}

	// Use up the deny path's keys and the hot key of every row.
	for _, c := range contenders {
		if err := useUp(c.deny); err != nil {
			fatal(fmt.Errorf("%s %s: using up the deny keys: %w", c.name, c.algorithm, err))
		}
	}

	ourPool := fmt.Sprintf("library default (%d)", polylimit.DefaultPoolSize)
	if *poolSize > 0 {
		ourPool = strconv.Itoa(*poolSize)
	}
	theirPool := strconv.Itoa(*redisPool)
	if *redisPool == 0 {
		theirPool = fmt.Sprintf("go-redis default (%d)", 10*runtime.GOMAXPROCS(0))
	}
	strategy := map[polylimit.WaitStrategy]string{polylimit.WaitQueued: "queued", polylimit.WaitBatched: "batched"}
	fmt.Printf("polylimit %s (Allow: blocking while <= %d in flight, then %s), redis_rate %s over go-redis %s, "+
		"redis-server %s, %s, GOMAXPROCS %d, %d cores\n", polylimit.Version(), polylimit.DefaultBlockingChecks,
		strategy[polylimit.DefaultWaitStrategy], moduleVersion("github.com/go-redis/redis_rate/v10"),
		moduleVersion("github.com/redis/go-redis/v9"), serverVersion(info), runtime.Version(), runtime.GOMAXPROCS(0),
		runtime.NumCPU())
	fmt.Printf("pool sizes: polylimit %s per client, go-redis PoolSize %s; allow: %d keys under 1000000/s; "+
		"deny: %d keys over 1/day, used up; hot: one used-up key\n", ourPool, theirPool, *numKeys, *numKeys)
	fmt.Printf("%v per cell after %v warm-up, %d interleaved repetitions; goroutine i of g checks keys i, i+g, "+
		"i+2g, ... (no two in flight share a key)\n", *duration, *warmup, *reps)

	type cellKey struct {
		name, algorithm, path string
		g                     int
	}
	results := map[cellKey][]cell{}
	for r := 0; r < *reps; r++ {
		for _, path := range pathList {
			for _, g := range levels {
				if path == "hot" && g == 1 {
					continue // nothing to coalesce
				}
				// Rotate the order each repetition, so that drift and
				// position hit every row alike.
				for i := range contenders {
					c := contenders[(i+r)%len(contenders)]
					res, err := measure(c, info, path, g)
					if err != nil {
						fatal(fmt.Errorf("%s %s, %s, %d goroutines: %w", c.name, c.algorithm, path, g, err))
					}
					k := cellKey{c.name, c.algorithm, path, g}
					results[k] = append(results[k], res)
					fmt.Fprintf(os.Stderr, "rep %d: %-5s %3d  %-33s %-12s %9.0f checks/s\n", r+1, path, g, c.name,
						c.algorithm, res.checksPerSec)
				}
			}
		}
	}

	// ratio is the ratio of the medians of two rows' checks/s, with the
	// range of the per-repetition ratios (the repetitions are paired).
	ratio := func(a, b []cell) (string, float64) {
		if len(a) == 0 || len(b) != len(a) {
			return "-", math.NaN()
		}
		per := make([]float64, len(a))
		for i := range a {
			per[i] = a[i].checksPerSec / b[i].checksPerSec
		}
		sort.Float64s(per)
		r := median(a, func(c cell) float64 { return c.checksPerSec }) /
			median(b, func(c cell) float64 { return c.checksPerSec })
		return fmt.Sprintf("%.2fx (%.2f..%.2f)", r, per[0], per[len(per)-1]), r
	}
	rows := [][]string{{"path", "in flight", "implementation", "algorithm", "checks/s median (min..max)",
		"vs redis_rate", "on/off", "p50", "p99", "CPU us/check", "Redis CPU us/check", "CPU used", "Redis busy",
		"script calls/check", "denied"}}
	type verdict struct {
		what   string
		value  float64
		target string
		met    bool
	}
	var verdicts []verdict
	for _, path := range pathList {
		for _, g := range levels {
			base := results[cellKey{peerName, "GCRA", path, g}]
			for _, c := range contenders {
				cs := results[cellKey{c.name, c.algorithm, path, g}]
				if len(cs) == 0 {
					continue // hot at 1 in flight: not run
				}
				ops := stats(cs, func(i int) float64 { return cs[i].checksPerSec })
				vsPeer := "-"
				if c.name != peerName && len(base) > 0 {
					vsPeer, _ = ratio(cs, base)
				}
				onOff := "-"
				if c.off != "" {
					var r float64
					onOff, r = ratio(cs, results[cellKey{c.off, c.algorithm, path, g}])
					if !math.IsNaN(r) && path != "hot" {
						verdicts = append(verdicts, verdict{fmt.Sprintf("%s %s, %s, %d in flight: on/off", c.name,
							c.algorithm, path, g), r, ">= 0.97x", r >= 0.97})
					}
				}
				calls := "-"
				if c.client != nil {
					sc := median(cs, func(c cell) float64 { return c.scriptCalls })
					calls = fmt.Sprintf("%.3f", sc)
					if path == "hot" && c.off != "" {
						verdicts = append(verdicts, verdict{fmt.Sprintf("%s %s, hot key, %d in flight: script calls/check",
							c.name, c.algorithm, g), sc, "<= 0.1", sc <= 0.1})
					}
				}
				used := median(cs, cell.cpuUsed)
				busy := median(cs, cell.redisBusy)
				if c.name == "polylimit, queued" && g == levels[len(levels)-1] && g > 1 && path != "hot" {
					verdicts = append(verdicts, verdict{fmt.Sprintf("%s %s, %s, %d in flight: CPU used, Redis busy",
						c.name, c.algorithm, path, g), used, ">= 85 % or Redis busy ~100 %", used >= 0.85 || busy >= 0.95})
				}
				rows = append(rows, []string{path, strconv.Itoa(g), c.name, c.algorithm,
					fmt.Sprintf("%.0f (%.0f..%.0f)", ops.med, ops.min, ops.max), vsPeer, onOff,
					round(time.Duration(median(cs, func(c cell) float64 { return float64(c.p50) }))),
					round(time.Duration(median(cs, func(c cell) float64 { return float64(c.p99) }))),
					fmt.Sprintf("%.1f", median(cs, func(c cell) float64 { return c.clientCPU })),
					fmt.Sprintf("%.1f", median(cs, func(c cell) float64 { return c.serverCPU })),
					fmt.Sprintf("%.0f %%", 100*used), fmt.Sprintf("%.0f %%", 100*busy), calls,
					fmt.Sprintf("%.0f %%", 100*median(cs, func(c cell) float64 { return c.denied }))})
			}
		}
	}
	fmt.Println()
	printTable(rows)
	fmt.Println()
	fmt.Println("checks/s: checks completed / measured wall time (from the first check to the last goroutine's end).")
	fmt.Println("vs redis_rate, on/off (with coalescing / the same client without it): ratio of the medians;")
	fmt.Println("  in brackets the range of the per-repetition ratios.")
	fmt.Println("CPU us/check: this process's CPU (user+system, every thread) per check; Redis CPU us/check: the")
	fmt.Println("  Redis main thread's (INFO cpu). CPU used = checks/s x (both) / cores; Redis busy = checks/s x")
	fmt.Println("  Redis CPU per check (share of one core). Medians of the per-repetition values.")
	fmt.Println("script calls/check: the client's script_calls / checks (Stats); redis_rate sends one EVALSHA a check.")
	if len(verdicts) > 0 {
		fmt.Println()
		fmt.Println("targets:")
		for _, v := range verdicts {
			met := "met"
			if !v.met {
				met = "MISSED"
			}
			val := fmt.Sprintf("%.2fx", v.value)
			if strings.HasSuffix(v.what, "calls/check") {
				val = fmt.Sprintf("%.3f", v.value)
			} else if strings.HasSuffix(v.what, "busy") {
				val = fmt.Sprintf("%.0f %%", 100*v.value)
			}
			fmt.Printf("  %-72s %9s  target %-28s %s\n", v.what, val, v.target, met)
		}
	}
}

func printTable(rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, s := range r {
			if n := len([]rune(s)); n > widths[i] {
				widths[i] = n
			}
		}
	}
	for i, r := range rows {
		var b strings.Builder
		b.WriteString("|")
		for j, s := range r {
			pad := widths[j] - len([]rune(s))
			if j >= 4 && j != 6 && j != 5 { // numbers: right-aligned
				fmt.Fprintf(&b, " %s%s |", strings.Repeat(" ", pad), s)
			} else {
				fmt.Fprintf(&b, " %s%s |", s, strings.Repeat(" ", pad))
			}
		}
		fmt.Println(b.String())
		if i == 0 {
			b.Reset()
			b.WriteString("|")
			for _, w := range widths {
				b.WriteString(strings.Repeat("-", w+2) + "|")
			}
			fmt.Println(b.String())
		}
	}
}

// moduleVersion is the version of a module this program was built with.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				if m.Replace != nil {
					return m.Replace.Version
				}
				return m.Version
			}
		}
	}
	return "?"
}

// burstFor is the GCRA burst of a limiter (other algorithms ignore it).
func burstFor(alg polylimit.Algorithm, limit int) int {
	if alg == polylimit.GCRA {
		return limit
	}
	return 0
}

// useUp checks every deny key and the hot key once, 64 at a time, so that
// each is over its limit of 1 a day.
func useUp(deny op) error {
	keys := append(append([]string(nil), denyKeys...), hotKey)
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(keys); i += 64 {
				if _, err := deny(context.Background(), keys[i]); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// measure runs one cell: g goroutines for the duration, each checking its
// share of the path's keys in turn (goroutine i: keys i, i+g, i+2g, ...), or
// all the hot key.
func measure(c *contender, info *redis.Client, path string, g int) (cell, error) {
	do, keys := c.allow, allowKeys
	switch path {
	case "deny":
		do, keys = c.deny, denyKeys
	case "hot":
		do, keys = c.deny, []string{hotKey}
	}
	loop := func(i int, until time.Time, lat []time.Duration) ([]time.Duration, int64, int64, error) {
		ctx := context.Background()
		if c.cancelable {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
		}
		step := g
		if len(keys) == 1 {
			i, step = 0, 0
		}
		var calls, denied int64
		for k := i; ; k += step {
			if k >= len(keys) {
				k = i
			}
			start := time.Now()
			if !start.Before(until) {
				return lat, calls, denied, nil
			}
			ok, err := do(ctx, keys[k])
			if err != nil {
				return lat, calls, denied, err
			}
			calls++
			if !ok {
				denied++
			}
			if lat != nil {
				lat = append(lat, time.Since(start))
			}
		}
	}

	var wg sync.WaitGroup
	until := time.Now().Add(*warmup)
	errs := make([]error, g)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func(i int) { defer wg.Done(); _, _, _, errs[i] = loop(i, until, nil) }(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return cell{}, err
		}
	}

	lats := make([][]time.Duration, g)
	calls := make([]int64, g)
	denied := make([]int64, g)
	scripts0 := scriptCalls(c.client)
	srv0, err := serverCPU(info)
	if err != nil {
		return cell{}, err
	}
	cpu0 := cpuSelf()
	start := time.Now()
	until = start.Add(*duration)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lats[i], calls[i], denied[i], errs[i] = loop(i, until, make([]time.Duration, 0, 1<<15))
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuSelf() - cpu0
	srv1, err := serverCPU(info)
	if err != nil {
		return cell{}, err
	}
	scripts := scriptCalls(c.client) - scripts0
	var all []time.Duration
	var n, nd int64
	for i := range lats {
		if errs[i] != nil {
			return cell{}, errs[i]
		}
		all = append(all, lats[i]...)
		n += calls[i]
		nd += denied[i]
	}
	if n == 0 {
		return cell{}, fmt.Errorf("no check completed")
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	return cell{
		checksPerSec: float64(n) / elapsed.Seconds(),
		p50:          all[len(all)/2],
		p99:          all[len(all)*99/100],
		denied:       float64(nd) / float64(n),
		clientCPU:    float64(cpu) / float64(time.Microsecond) / float64(n),
		serverCPU:    (srv1 - srv0) / float64(n),
		scriptCalls:  scripts / float64(n),
	}, nil
}

// scriptCalls is a client's script_calls so far; NaN for none (redis_rate).
func scriptCalls(c *polylimit.Client) float64 {
	if c == nil {
		return math.NaN()
	}
	s, err := c.Stats()
	if err != nil {
		return math.NaN()
	}
	return float64(s.ScriptCalls)
}

// serverCPU is the Redis main thread's CPU time so far, in µs (INFO cpu:
// used_cpu_user_main_thread + used_cpu_sys_main_thread; the process's
// used_cpu_user + used_cpu_sys where the server has no main-thread fields).
func serverCPU(info *redis.Client) (float64, error) {
	text, err := info.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0, err
	}
	fields := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				fields[k] = f
			}
		}
	}
	u, okU := fields["used_cpu_user_main_thread"]
	s, okS := fields["used_cpu_sys_main_thread"]
	if !okU || !okS {
		u, okU = fields["used_cpu_user"]
		s, okS = fields["used_cpu_sys"]
	}
	if !okU || !okS {
		return 0, fmt.Errorf("INFO cpu has no used_cpu_user / used_cpu_sys")
	}
	return (u + s) * 1e6, nil
}

type summary struct{ med, min, max float64 }

func stats(cs []cell, f func(i int) float64) summary {
	v := make([]float64, len(cs))
	for i := range cs {
		v[i] = f(i)
	}
	sort.Float64s(v)
	return summary{medianOf(v), v[0], v[len(v)-1]}
}

func median(cs []cell, f func(cell) float64) float64 {
	v := make([]float64, len(cs))
	for i, c := range cs {
		v[i] = f(c)
	}
	sort.Float64s(v)
	return medianOf(v)
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// cpuSelf returns this process's user+sys CPU time.
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func serverVersion(rdb *redis.Client) string {
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(info, "\n") {
		if v := strings.TrimPrefix(line, "redis_version:"); v != line {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func round(d time.Duration) string {
	if d >= time.Millisecond {
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad -goroutines %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// server is a throwaway redis-server on a free loopback port, started by
// tests/fixture/redisfix (the launcher the test suites share; it needs
// python3). The launcher stops it when told to, or when this process dies
// (its stdin closes).
type server struct {
	addr string
	pid  int
	cmd  *exec.Cmd
	in   io.WriteCloser
	done chan struct{}
	once sync.Once
}

// redisfix is $POLYLIMIT_REDISFIX, else tests/fixture/redisfix of the
// source tree this file is in.
func redisfix() string {
	if p := os.Getenv("POLYLIMIT_REDISFIX"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0) // .../bench/go/main.go
	return filepath.Join(filepath.Dir(file), "..", "..", "tests", "fixture", "redisfix")
}

func startRedis() (*server, error) {
	cmd := exec.Command("python3", redisfix(), "standalone")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, in: in, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	var d struct {
		Error string
		Nodes []struct{ Port, Pid int }
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err == nil {
		err = json.Unmarshal([]byte(line), &d)
	}
	if err == nil && d.Error != "" {
		err = fmt.Errorf("%s", d.Error)
	}
	if err == nil && len(d.Nodes) != 1 {
		err = fmt.Errorf("unexpected description %q", line)
	}
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("redisfix standalone: %w", err)
	}
	s.addr, s.pid = fmt.Sprintf("127.0.0.1:%d", d.Nodes[0].Port), d.Nodes[0].Pid
	return s, nil
}

func (s *server) stop() {
	s.once.Do(func() {
		io.WriteString(s.in, "stop\n")
		s.in.Close()
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	})
}

func stopOnSignal(s *server) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		s.stop()
		os.Exit(130)
	}()
}
