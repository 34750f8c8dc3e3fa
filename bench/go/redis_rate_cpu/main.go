// Command redis_rate_cpu measures the Redis CPU per decision of
// github.com/go-redis/redis_rate (v10, GCRA), the peer of polylimit's GCRA
// script, for bench_script_cpu (bench/README.md), which runs it once per
// repetition against its own redis-server:
//
//	bench_script_cpu 5 "" "bench/go/redis_rate_cpu/redis_rate_cpu"
//
// It runs bench_script_cpu's GCRA scenarios: admit and deny paths, keys
// holding ~10 / 100 / 1000 units, window 1 h (Rate = Burst = the limit, as
// polylimit's GCRA with no burst). Per scenario: fresh keys, an untimed
// prefill (which also loads redis_rate's script), CONFIG RESETSTAT, the
// timed calls of cost 1, then INFO commandstats: cmdstat_evalsha usec /
// calls. Each decision is one EVALSHA; a count that differs from the calls
// made is an error. Prints one line per scenario: peer name, scenario,
// usec per decision, calls. A program that prints, not a test.
//
// By hand: redis_rate_cpu --port PORT [--calls 4000] [--prefix p] [--batch N]
// (--batch N: N timed calls in flight at once, from N goroutines, so the
// server stays busy as with bench_script_cpu's pipelines of its own calls;
// bench_script_cpu passes 100)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// evalsha reads cmdstat_evalsha's calls and usec.
func evalsha(ctx context.Context, rdb *redis.Client) (calls, usec int64, err error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return calls, usec, nil
}

// measure returns usec per timed decision: keys filled with `units`, then
// `calls` decisions of cost 1 that must all be admitted (or all denied).
func measure(ctx context.Context, rdb *redis.Client, l *redis_rate.Limiter, name string, units int, admit bool,
	calls, inflight int, prefix string) (float64, error) {
	limit := units
	keys := 4 // deny: full keys take any number of calls
	if admit {
		limit = 2 * units // room for `units` more per key
		keys = (calls + units - 1) / units
	}
	rl := redis_rate.Limit{Rate: limit, Burst: limit, Period: time.Hour}
	names := make([]string, keys)
	for k := range names {
		names[k] = fmt.Sprintf("%s:%s:%d", prefix, strings.ReplaceAll(name, " ", "-"), k)
		res, err := l.AllowN(ctx, names[k], rl, units)
		if err != nil {
			return 0, err
		}
		if res.Allowed != units {
			return 0, fmt.Errorf("%s: prefill not admitted", name)
		}
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		return 0, err
	}
	// inflight goroutines take the calls in turn: with more than one the
	// server is kept busy, as bench_script_cpu's pipelines keep it.
	var next atomic.Int64
	errs := make(chan error, inflight)
	for g := 0; g < inflight; g++ {
		go func() {
			for i := int(next.Add(1) - 1); i < calls; i = int(next.Add(1) - 1) {
				res, err := l.Allow(ctx, names[i%keys], rl)
				if err == nil && (res.Allowed == 1) != admit {
					err = fmt.Errorf("%s: a timed call was not %s", name, map[bool]string{true: "admitted", false: "denied"}[admit])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < inflight; g++ {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	n, usec, err := evalsha(ctx, rdb)
	if err != nil {
		return 0, err
	}
	if n != int64(calls) {
		return 0, fmt.Errorf("%s: Redis counted %d EVALSHA for %d calls", name, n, calls)
	}
	return float64(usec) / float64(n), nil
}

func main() {
	port := flag.Int("port", 0, "redis-server port on 127.0.0.1 (required)")
	calls := flag.Int("calls", 4000, "timed decisions per scenario")
	prefix := flag.String("prefix", "redis_rate", "key prefix")
	batch := flag.Int("batch", 1, "timed calls in flight at once (goroutines; redis_rate makes one call per round trip)")
	flag.Parse()
	inflight := *batch
	if inflight < 1 {
		inflight = 1
	}
	if *port == 0 {
		fmt.Fprintln(os.Stderr, "redis_rate_cpu: --port is required")
		os.Exit(2)
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", *port)})
	defer rdb.Close()
	l := redis_rate.NewLimiter(rdb)
	for _, admit := range []bool{true, false} {
		for _, units := range []int{10, 100, 1000} {
			path := "deny"
			if admit {
				path = "admit"
			}
			name := fmt.Sprintf("gcra %s %d", path, units)
			us, err := measure(ctx, rdb, l, name, units, admit, *calls, inflight, *prefix)
			if err != nil {
				fmt.Fprintln(os.Stderr, "redis_rate_cpu:", err)
				os.Exit(1)
			}
			fmt.Printf("redis_rate v10 GCRA\t%s\t%.3f\t%d\n", name, us, *calls)
		}
	}
}
