// Command bench compares the polylimit Go binding (cgo over libpolylimit)
// with github.com/go-redis/redis_rate (pure Go, GCRA) on one redis-server
// that it starts itself, and prints a table of throughput and latency.
//
// The default algorithms differ: polylimit's is an exact sliding-window log (a
// ZSET per key), redis_rate's is GCRA (one string per key); the "polylimit
// GCRA" row runs polylimit's GCRA for a like-for-like comparison. Limits are set so that
// neither ever denies, so both do their full admit path on every call.
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
	duration   = flag.Duration("duration", 3*time.Second, "measured time per cell")
	warmup     = flag.Duration("warmup", 500*time.Millisecond, "unmeasured time before each cell")
	runs       = flag.Int("runs", 3, "runs; the table shows medians")
	poolSize   = flag.Int("pool", 64, "connection pool size for both clients")
	goroutines = flag.String("goroutines", "1,64", "comma-separated concurrency levels")
	url        = flag.String("url", "", "use this Redis (redis://host:port) instead of starting redis-server")
)

// op is one decision; it reports whether it was admitted.
type op func(ctx context.Context, key string) (bool, error)

type contender struct {
	name, algorithm string
	ctx             func() (context.Context, context.CancelFunc)
	op              op
	serverStats     bool // has an EVALSHA whose server time INFO commandstats shows
}

type cell struct {
	opsPerSec float64
	p50, p99  time.Duration
	denied    int64
	serverUS  float64 // server-side µs per EVALSHA, from INFO commandstats
	clientCPU float64 // this process's CPU µs (user+sys) per op
	serverCPU float64 // redis-server's CPU µs per op (network and script); 0 if unknown
}

// serverPID is the redis-server this run started (0 with -url).
var serverPID int

// cpuSelf returns this process's user+sys CPU time.
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuOf returns a process's user+sys CPU time from /proc (clock ticks of 10ms).
func cpuOf(pid int) time.Duration {
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

func main() {
	flag.Parse()
	levels, err := parseLevels(*goroutines)
	if err != nil {
		fatal(err)
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

	client, err := polylimit.Open(redisURL, polylimit.WithPoolSize(*poolSize))
	if err != nil {
		fatal(err)
	}
	defer client.Close()
	// Limit far above what one server can do, so nothing is ever denied.
	lim, err := client.LimiterFor(1000000, time.Second, polylimit.WithPrefix("bench"))
	if err != nil {
		fatal(err)
	}
	defer lim.Close()
	// The same algorithm as redis_rate, for a like-for-like row.
	gcraLim, err := client.LimiterFor(1000000, time.Second, polylimit.WithPrefix("bench-gcra"),
		polylimit.WithAlgorithm(polylimit.GCRA), polylimit.WithBurst(1000000))
	if err != nil {
		fatal(err)
	}
	defer gcraLim.Close()
	mem, err := polylimit.Open("memory://")
	if err != nil {
		fatal(err)
	}
	defer mem.Close()
	// In process it outruns a million a second: a shorter window keeps it admitting.
	memLim, err := mem.LimiterFor(1000000, 100*time.Millisecond)
	if err != nil {
		fatal(err)
	}
	defer memLim.Close()

	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: *poolSize, MinIdleConns: 0})
	defer rdb.Close()
	rate := redis_rate.NewLimiter(rdb)
	rateLimit := redis_rate.Limit{Rate: 1000000, Burst: 1000000, Period: time.Second}
	ceiling := redis.NewScript("return 1")

	background := func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }
	cancelable := func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }
	contenders := []contender{
		{"polylimit", "sliding log", background, func(ctx context.Context, k string) (bool, error) {
			r, err := lim.Allow(ctx, k)
			return r.Allowed, err
		}, true},
		{"polylimit, cancelable ctx", "sliding log", cancelable, func(ctx context.Context, k string) (bool, error) {
			r, err := lim.Allow(ctx, k)
			return r.Allowed, err
		}, true},
		{"polylimit GCRA", "GCRA", background, func(ctx context.Context, k string) (bool, error) {
			r, err := gcraLim.Allow(ctx, k)
			return r.Allowed, err
		}, true},
		{"redis_rate v10", "GCRA", background, func(ctx context.Context, k string) (bool, error) {
			r, err := rate.Allow(ctx, k, rateLimit)
			if err != nil {
				return false, err
			}
			return r.Allowed > 0, nil
		}, true},
		{"go-redis EVALSHA 'return 1'", "none (ceiling)", background, func(ctx context.Context, k string) (bool, error) {
			err := ceiling.Run(ctx, rdb, []string{k}).Err()
			return err == nil, err
		}, true},
		{"polylimit memory://", "sliding log, no Redis", background, func(ctx context.Context, k string) (bool, error) {
			r, err := memLim.Allow(ctx, k)
			return r.Allowed, err
		}, false},
	}

	fmt.Printf("polylimit %s, redis-server at %s, pool %d, %v per cell, %d runs (medians), GOMAXPROCS %d\n",
		polylimit.Version(), addr, *poolSize, *duration, *runs, runtimeProcs())
	results := map[string][]cell{}
	for r := 0; r < *runs; r++ {
		for _, g := range levels {
			for _, c := range contenders { // interleaved, so drift hits everyone alike
				res, err := measure(rdb, c, g, r)
				if err != nil {
					fatal(fmt.Errorf("%s, %d goroutines: %w", c.name, g, err))
				}
				k := fmt.Sprintf("%s|%d", c.name, g)
				results[k] = append(results[k], res)
				fmt.Fprintf(os.Stderr, "run %d: %-28s %3d goroutines %9.0f ops/s\n", r+1, c.name, g, res.opsPerSec)
			}
		}
	}

	fmt.Println()
	fmt.Printf("%-28s %-22s %4s %9s %8s %9s %9s %9s %9s %8s %6s\n", "implementation", "algorithm", "gor.",
		"ops/s", "vs rate", "p50", "p99", "script/op", "srvCPU/op", "cliCPU/op", "denied")
	for _, g := range levels {
		base := median(results[fmt.Sprintf("redis_rate v10|%d", g)], func(c cell) float64 { return c.opsPerSec })
		for _, c := range contenders {
			cs := results[fmt.Sprintf("%s|%d", c.name, g)]
			ops := median(cs, func(c cell) float64 { return c.opsPerSec })
			p50 := time.Duration(median(cs, func(c cell) float64 { return float64(c.p50) }))
			p99 := time.Duration(median(cs, func(c cell) float64 { return float64(c.p99) }))
			script, srvCPU := "-", "-"
			if c.serverStats {
				script = fmt.Sprintf("%.1fµs", median(cs, func(c cell) float64 { return c.serverUS }))
				if serverPID != 0 {
					srvCPU = fmt.Sprintf("%.1fµs", median(cs, func(c cell) float64 { return c.serverCPU }))
				}
			}
			cliCPU := fmt.Sprintf("%.1fµs", median(cs, func(c cell) float64 { return c.clientCPU }))
			var denied int64
			for _, x := range cs {
				denied += x.denied
			}
			fmt.Printf("%-28s %-22s %4d %9.0f %7.2fx %9s %9s %9s %9s %9s %6d\n", c.name, c.algorithm, g, ops,
				ops/base, round(p50), round(p99), script, srvCPU, cliCPU, denied)
		}
	}
	fmt.Println("\nvs rate: ops/s over redis_rate's. script/op: Redis time inside EVALSHA (INFO commandstats).")
	fmt.Println("srvCPU/op: redis-server CPU per op, network included. cliCPU/op: this process's CPU per op.")
	fmt.Println("Algorithms differ: sliding log keeps a ZSET entry per admitted unit (exact); GCRA keeps one value (smooth).")
}

// measure runs one cell: g goroutines, each on its own key, for the duration.
func measure(rdb *redis.Client, c contender, g, run int) (cell, error) {
	ctx := context.Background()
	loop := func(until time.Time, key string, lat []time.Duration) ([]time.Duration, int64, error) {
		octx, cancel := c.ctx()
		defer cancel()
		var denied int64
		for {
			start := time.Now()
			if !start.Before(until) {
				return lat, denied, nil
			}
			ok, err := c.op(octx, key)
			if err != nil {
				return lat, denied, err
			}
			if !ok {
				denied++
			}
			if lat != nil {
				lat = append(lat, time.Since(start))
			}
		}
	}
	keyFor := func(i int) string { return fmt.Sprintf("bench:%s:%d:%d:%d", strings.Fields(c.name)[0], g, run, i) }

	// Warm-up: connections, script loading, key creation.
	var wg sync.WaitGroup
	until := time.Now().Add(*warmup)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func(i int) { defer wg.Done(); loop(until, keyFor(i), nil) }(i)
	}
	wg.Wait()

	if c.serverStats {
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			return cell{}, err
		}
	}
	lats := make([][]time.Duration, g)
	denied := make([]int64, g)
	errs := make([]error, g)
	cpu0, scpu0 := cpuSelf(), cpuOf(serverPID)
	start := time.Now()
	until = start.Add(*duration)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lats[i], denied[i], errs[i] = loop(until, keyFor(i), make([]time.Duration, 0, 1<<16))
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, scpu := cpuSelf()-cpu0, cpuOf(serverPID)-scpu0
	var all []time.Duration
	var res cell
	for i := range lats {
		if errs[i] != nil {
			return cell{}, errs[i]
		}
		all = append(all, lats[i]...)
		res.denied += denied[i]
	}
	if len(all) == 0 {
		return cell{}, fmt.Errorf("no operation completed")
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	res.opsPerSec = float64(len(all)) / elapsed.Seconds()
	res.p50 = all[len(all)/2]
	res.p99 = all[len(all)*99/100]
	res.clientCPU = float64(cpu) / float64(time.Microsecond) / float64(len(all))
	if serverPID != 0 && c.serverStats {
		res.serverCPU = float64(scpu) / float64(time.Microsecond) / float64(len(all))
	}
	if c.serverStats {
		us, err := evalshaUsec(rdb)
		if err != nil {
			return cell{}, err
		}
		res.serverUS = us
	}
	return res, nil
}

// evalshaUsec reads usec_per_call of EVALSHA from INFO commandstats.
func evalshaUsec(rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") {
			continue
		}
		for _, f := range strings.Split(strings.TrimSpace(strings.TrimPrefix(line, "cmdstat_evalsha:")), ",") {
			if v := strings.TrimPrefix(f, "usec_per_call="); v != f {
				return strconv.ParseFloat(v, 64)
			}
		}
	}
	return 0, nil
}

func median(cs []cell, f func(cell) float64) float64 {
	v := make([]float64, len(cs))
	for i, c := range cs {
		v[i] = f(c)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func round(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	}
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

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
