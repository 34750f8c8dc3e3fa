// Command bench compares the polylimit Go binding (cgo over libpolylimit)
// with github.com/go-redis/redis_rate (pure Go, GCRA) on one redis-server
// that it starts itself, and prints a table: calls per second on the allow
// path and on the deny path, at each concurrency, as the median (min..max)
// of interleaved repetitions, with the ratio to redis_rate in the same run.
//
// polylimit runs in the ways Allow can run (the default, which blocks an OS
// thread while at most 2 checks are in flight and batches the others; the
// same with the others queued; every check blocking; every check queued;
// every check batched; a cancelable context), so that the default can be
// chosen by measurement.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
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
	goroutines = flag.String("goroutines", "1,64", "comma-separated concurrency levels")
	paths      = flag.String("paths", "allow,deny", "allow, deny or both")
	only       = flag.String("only", "", "run only the contenders whose name and algorithm contain this (or one of a|b|c), and redis_rate")
	url        = flag.String("url", "", "use this Redis (redis://host:port) instead of starting redis-server")
	cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the whole run (go tool pprof) to this file")
)

// op is one decision; it reports whether it was admitted.
type op func(ctx context.Context, key string) (bool, error)

type contender struct {
	name, algorithm string
	cancelable      bool // a context that can end (context.WithCancel)
	allow, deny     op   // on a limit far above the load; on an exhausted one
}

type cell struct {
	callsPerSec float64 // calls completed / measured wall time
	p50, p99    time.Duration
	max         time.Duration // the slowest call: a stall shows here
	denied      float64       // fraction of calls denied
	clientCPU   float64       // this process's CPU µs (user+sys) per call
	serverCPU   float64       // redis-server's CPU µs per call; 0 if unknown
}

// serverPID is the redis-server this run started (0 with -url).
var serverPID int

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
		if p = strings.TrimSpace(p); p != "allow" && p != "deny" {
			fatal(fmt.Errorf("bad -paths %q", *paths))
		}
		pathList = append(pathList, strings.TrimSpace(p))
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
		serverPID = srv.pid
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
	// denied, and 1 per hour, exhausted by the warm-up, so everything is.
	limiters := func(c *polylimit.Client, prefix string, alg polylimit.Algorithm) (op, op) {
		allow, err := c.LimiterFor(1000000, time.Second, polylimit.WithPrefix(prefix+"-a"),
			polylimit.WithAlgorithm(alg), polylimit.WithBurst(burstFor(alg, 1000000)))
		if err != nil {
			fatal(err)
		}
		deny, err := c.LimiterFor(1, time.Hour, polylimit.WithPrefix(prefix+"-d"), polylimit.WithAlgorithm(alg),
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
	def := openClient()
	defer def.Close()
	blocking := openClient(polylimit.WithBlockingChecks(1 << 20))
	defer blocking.Close()
	queued := openClient(polylimit.WithBlockingChecks(0), polylimit.WithWaitStrategy(polylimit.WaitQueued))
	defer queued.Close()
	queuedPast := openClient(polylimit.WithWaitStrategy(polylimit.WaitQueued))
	defer queuedPast.Close()
	batched := openClient(polylimit.WithBlockingChecks(0), polylimit.WithWaitStrategy(polylimit.WaitBatched))
	defer batched.Close()
	batchedPast := openClient(polylimit.WithWaitStrategy(polylimit.WaitBatched))
	defer batchedPast.Close()
	// The default without coalescing: a batch is one pipelined script call
	// per key (before keys calls), every check of a hot key a call of its own.
	uncoalesced := openClient(polylimit.WithoutCoalescing())
	defer uncoalesced.Close()
	// Every check queued without coalescing: what lanes cost or gain there.
	queuedUncoalesced := openClient(polylimit.WithBlockingChecks(0), polylimit.WithWaitStrategy(polylimit.WaitQueued),
		polylimit.WithoutCoalescing())
	defer queuedUncoalesced.Close()

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

	var all []contender
	add := func(name, alg string, cancelable bool, c *polylimit.Client, prefix string, a polylimit.Algorithm) {
		allow, deny := limiters(c, prefix, a)
		all = append(all, contender{name, alg, cancelable, allow, deny})
	}
	all = append(all, contender{"redis_rate v10", "GCRA", false,
		rateOp(redis_rate.Limit{Rate: 1000000, Burst: 1000000, Period: time.Second}),
		rateOp(redis_rate.Limit{Rate: 1, Burst: 1, Period: time.Hour})})
	add("polylimit", "sliding log", false, def, "sl", polylimit.SlidingLog)
	add("polylimit", "GCRA", false, def, "gcra", polylimit.GCRA)
	add("polylimit, cancelable ctx", "GCRA", true, def, "gcra-ctx", polylimit.GCRA)
	add("polylimit, all blocking", "GCRA", false, blocking, "gcra-blocking", polylimit.GCRA)
	add("polylimit, all queued", "GCRA", false, queued, "gcra-queued", polylimit.GCRA)
	add("polylimit, queued past 2", "GCRA", false, queuedPast, "gcra-queued-past", polylimit.GCRA)
	add("polylimit, all batched", "GCRA", false, batched, "gcra-batched", polylimit.GCRA)
	add("polylimit, batched past 2", "GCRA", false, batchedPast, "gcra-batched-past", polylimit.GCRA)
	add("polylimit, without coalescing", "GCRA", false, uncoalesced, "gcra-uncoalesced", polylimit.GCRA)
	add("polylimit, without coalescing", "sliding log", false, uncoalesced, "sl-uncoalesced", polylimit.SlidingLog)
	add("polylimit, all queued, without coalescing", "GCRA", false, queuedUncoalesced, "gcra-queued-uncoalesced",
		polylimit.GCRA)
	var contenders []contender
	for _, c := range all {
		if *only == "" || c.name == "redis_rate v10" {
			contenders = append(contenders, c)
			continue
		}
		for _, o := range strings.Split(*only, "|") {
			if strings.Contains(c.name+" "+c.algorithm, o) {
				contenders = append(contenders, c)
				break
			}
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
	fmt.Printf("polylimit %s (default blocking checks %d, then %s), redis-server %s, GOMAXPROCS %d\n", polylimit.Version(),
		polylimit.DefaultBlockingChecks, strategy[polylimit.DefaultWaitStrategy], serverVersion(rdb), runtime.GOMAXPROCS(0))
	fmt.Printf("pool sizes: polylimit %s per client, go-redis PoolSize %s\n", ourPool, theirPool)
	fmt.Printf("%v per cell after %v warm-up, %d interleaved repetitions, each goroutine on its own key\n",
		*duration, *warmup, *reps)

	results := map[string][]cell{}
	key := func(c contender, path string, g int) string {
		return fmt.Sprintf("%s|%s|%s|%d", c.name, c.algorithm, path, g)
	}
	for r := 0; r < *reps; r++ {
		for _, path := range pathList {
			for _, g := range levels {
				// Rotate the order each repetition, so that drift and
				// position hit every contender alike.
				for i := range contenders {
					c := contenders[(i+r)%len(contenders)]
					res, err := measure(c, path, g, r)
					if err != nil {
						fatal(fmt.Errorf("%s %s, %s, %d goroutines: %w", c.name, c.algorithm, path, g, err))
					}
					results[key(c, path, g)] = append(results[key(c, path, g)], res)
					fmt.Fprintf(os.Stderr, "rep %d: %-5s %3d gor. %-28s %-11s %9.0f calls/s, max %v\n", r+1, path, g, c.name,
						c.algorithm, res.callsPerSec, res.max)
				}
			}
		}
	}

	fmt.Println()
	fmt.Printf("%-5s %4s  %-28s %-11s %-26s %-24s %9s %9s %9s %9s %9s %7s\n", "path", "gor.", "implementation",
		"algorithm", "calls/s median (min..max)", "vs redis_rate", "p50", "p99", "max", "cliCPU", "srvCPU", "denied")
	for _, path := range pathList {
		for _, g := range levels {
			base := results[key(contenders[0], path, g)]
			for _, c := range contenders {
				cs := results[key(c, path, g)]
				ops := stats(cs, func(i int) float64 { return cs[i].callsPerSec })
				ratio := "-"
				if c.name != "redis_rate v10" {
					// Ratio of the medians, then the range of the
					// per-repetition ratios (each against the same repetition).
					per := stats(cs, func(i int) float64 { return cs[i].callsPerSec / base[i].callsPerSec })
					ratio = fmt.Sprintf("%.2fx (%.2f..%.2f)", ops.med/median(base, func(c cell) float64 { return c.callsPerSec }),
						per.min, per.max)
				}
				srv := "-"
				if serverPID != 0 {
					srv = fmt.Sprintf("%.1fµs", median(cs, func(c cell) float64 { return c.serverCPU }))
				}
				fmt.Printf("%-5s %4d  %-28s %-11s %-26s %-24s %9s %9s %9s %9s %9s %6.0f%%\n", path, g, c.name, c.algorithm,
					fmt.Sprintf("%.0f (%.0f..%.0f)", ops.med, ops.min, ops.max), ratio,
					round(time.Duration(median(cs, func(c cell) float64 { return float64(c.p50) }))),
					round(time.Duration(median(cs, func(c cell) float64 { return float64(c.p99) }))),
					round(time.Duration(stats(cs, func(i int) float64 { return float64(cs[i].max) }).max)),
					fmt.Sprintf("%.1fµs", median(cs, func(c cell) float64 { return c.clientCPU })), srv,
					100*median(cs, func(c cell) float64 { return c.denied }))
			}
		}
	}
	fmt.Println("\ncalls/s: calls completed / measured wall time (from the first call to the last goroutine's end).")
	fmt.Println("vs redis_rate: ratio of the medians; in brackets the range of per-repetition ratios.")
	fmt.Println("p50, p99: medians over repetitions; max: the slowest call of all repetitions.")
	fmt.Println("cliCPU, srvCPU: this process's and redis-server's CPU per call (medians).")
}

// burstFor is the GCRA burst of a limiter (other algorithms ignore it).
func burstFor(alg polylimit.Algorithm, limit int) int {
	if alg == polylimit.GCRA {
		return limit
	}
	return 0
}

// measure runs one cell: g goroutines, each on its own key, for the duration.
func measure(c contender, path string, g, rep int) (cell, error) {
	do := c.allow
	if path == "deny" {
		do = c.deny
	}
	loop := func(until time.Time, key string, lat []time.Duration) ([]time.Duration, int64, int64, error) {
		ctx := context.Background()
		if c.cancelable {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
		}
		var calls, denied int64
		for {
			start := time.Now()
			if !start.Before(until) {
				return lat, calls, denied, nil
			}
			ok, err := do(ctx, key)
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
	// A fresh key per goroutine, cell and repetition: the allow path starts
	// empty, the deny path is exhausted by the warm-up's first call.
	keyFor := func(i int) string {
		return fmt.Sprintf("bench:%s:%s:%s:%d:%d:%d", strings.ReplaceAll(c.name, " ", ""), c.algorithm, path, g, rep, i)
	}

	var wg sync.WaitGroup
	until := time.Now().Add(*warmup)
	errs := make([]error, g)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func(i int) { defer wg.Done(); _, _, _, errs[i] = loop(until, keyFor(i), nil) }(i)
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
	cpu0, scpu0 := cpuSelf(), cpuOf(serverPID)
	start := time.Now()
	until = start.Add(*duration)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lats[i], calls[i], denied[i], errs[i] = loop(until, keyFor(i), make([]time.Duration, 0, 1<<15))
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, scpu := cpuSelf()-cpu0, cpuOf(serverPID)-scpu0
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
		return cell{}, fmt.Errorf("no call completed")
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	res := cell{
		callsPerSec: float64(n) / elapsed.Seconds(),
		p50:         all[len(all)/2],
		p99:         all[len(all)*99/100],
		max:         all[len(all)-1],
		denied:      float64(nd) / float64(n),
		clientCPU:   float64(cpu) / float64(time.Microsecond) / float64(n),
	}
	if serverPID != 0 {
		res.serverCPU = float64(scpu) / float64(time.Microsecond) / float64(n)
	}
	return res, nil
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

// cpuOf returns a process's user+sys CPU time from /proc (clock ticks of 10ms).
func cpuOf(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 (state) on
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
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
