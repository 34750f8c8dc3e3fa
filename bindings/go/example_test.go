package polylimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

// Compiled, not run (no Output comment): it needs a Redis server.
func Example() {
	client, err := polylimit.Open("redis://127.0.0.1:6379", polylimit.WithCommandTimeout(500*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	limiter, err := client.Limiter("100/minute", polylimit.WithPrefix("api"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer limiter.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := limiter.Allow(ctx, "user:42")
	switch {
	case errors.Is(err, polylimit.ErrTimeout), errors.Is(err, polylimit.ErrUnavailable):
		fmt.Println("redis is slow or down; failing open")
	case err != nil:
		fmt.Println(err)
	case res.Allowed:
		fmt.Println("admitted,", res.Remaining, "left")
	default:
		fmt.Println("denied; retry in", res.RetryAfter)
	}
}

// GCRA with a burst, a local deny cache, and failing open while Redis is
// unreachable. Compiled, not run.
func ExampleClient_Limiter_options() {
	client, err := polylimit.Open("redis://127.0.0.1:6379", polylimit.WithCommandTimeout(100*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	limiter, err := client.Limiter("10/s burst 20",
		polylimit.WithAlgorithm(polylimit.GCRA),
		polylimit.WithDenyCache(10000),
		polylimit.WithFailurePolicy(polylimit.FailOpen),
		polylimit.WithCircuitBreaker(5, 2*time.Second))
	if err != nil {
		fmt.Println(err) // a bad spec quotes its bad part
		return
	}
	defer limiter.Close()
	res, err := limiter.Allow(context.Background(), "user:42")
	if err == nil && res.Degraded {
		fmt.Println("Redis is away; admitted by the failure policy")
	}
}

// Many keys, one round trip. Compiled, not run.
func ExampleLimiter_AllowMany() {
	client, err := polylimit.Open("redis://127.0.0.1:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	limiter, err := client.Limiter("100/minute")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer limiter.Close()
	keys := []string{"user:1", "user:2", "user:3"}
	results, errs := limiter.AllowMany(context.Background(), keys, 1)
	for i, key := range keys {
		if errs != nil && errs[i] != nil {
			fmt.Println(key, errs[i])
			continue
		}
		fmt.Println(key, results[i].Allowed)
	}
	if stats, err := client.Stats(); err == nil {
		fmt.Println("round trips:", stats.RoundTrips)
	}
}

// Acquire waits for admission, up to the context's deadline. Compiled, not run.
func ExampleLimiter_Acquire() {
	client, err := polylimit.Open("redis://127.0.0.1:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	limiter, err := client.Limiter("5/s")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer limiter.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := limiter.Acquire(ctx, "crawler", 1)
	switch {
	case err != nil:
		fmt.Println(err)
	case !res.Allowed:
		fmt.Println("would not be admitted before the deadline; retry in", res.RetryAfter)
	default:
		// ... do the work; if it fails, give the unit back:
		limiter.Refund(context.Background(), "crawler", 1)
	}
}
