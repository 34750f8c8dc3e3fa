package redlimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	redlimit "github.com/redlimit/redlimit/bindings/go"
)

// Compiled, not run (no Output comment): it needs a Redis server.
func Example() {
	client, err := redlimit.Open("redis://127.0.0.1:6379", redlimit.WithCommandTimeout(500*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	limiter, err := client.Limiter("100/minute", redlimit.WithPrefix("api"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer limiter.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := limiter.Allow(ctx, "user:42")
	switch {
	case errors.Is(err, redlimit.ErrTimeout), errors.Is(err, redlimit.ErrUnavailable):
		fmt.Println("redis is slow or down; failing open")
	case err != nil:
		fmt.Println(err)
	case res.Allowed:
		fmt.Println("admitted,", res.Remaining, "left")
	default:
		fmt.Println("denied; retry in", res.RetryAfter)
	}
}
