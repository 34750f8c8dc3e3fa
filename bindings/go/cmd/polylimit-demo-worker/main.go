// Command polylimit-demo-worker is the demo's Go worker, the twin of
// tools/demo/worker.c: it hammers one shared key and prints how many of its
// attempts were admitted, as "<name> admitted=<n> attempts=<m>".
//
//	polylimit-demo-worker URL KEY LIMIT WINDOW_MS ATTEMPTS NAME
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

func main() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) }

// run is main with its exit code returned: 0 done, 1 library error, 2 usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 7 {
		fmt.Fprintf(stderr, "usage: %s URL KEY LIMIT WINDOW_MS ATTEMPTS NAME\n", args[0])
		return 2
	}
	url, key, name := args[1], args[2], args[6]
	var nums [3]int64
	for i, arg := range args[3:6] {
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %q is not an integer\n", name, arg)
			return 2
		}
		nums[i] = n
	}
	limit, windowMS, attempts := nums[0], nums[1], nums[2]

	fail := func(err error) int {
		// Print the library's own message, as the C worker does.
		var e *polylimit.Error
		if errors.As(err, &e) {
			fmt.Fprintf(stderr, "%s: %s\n", name, e.Msg)
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
		}
		return 1
	}
	client, err := polylimit.Open(url)
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	limiter, err := client.LimiterFor(int(limit), time.Duration(windowMS)*time.Millisecond, polylimit.WithPrefix("demo"))
	if err != nil {
		return fail(err)
	}
	defer limiter.Close()

	waitForStart()
	ctx := context.Background()
	var admitted int64
	for i := int64(0); i < attempts; i++ {
		r, err := limiter.Allow(ctx, key)
		if err != nil {
			return fail(err)
		}
		if r.Allowed {
			admitted++
		}
	}
	fmt.Fprintf(stdout, "%s admitted=%d attempts=%d\n", name, admitted, attempts)
	return 0
}

// waitForStart waits until POLYLIMIT_DEMO_START_AT_MS (Unix ms), when set, so that
// workers of every language start together.
func waitForStart() {
	at, err := strconv.ParseInt(os.Getenv("POLYLIMIT_DEMO_START_AT_MS"), 10, 64)
	if err != nil {
		return
	}
	time.Sleep(time.Until(time.UnixMilli(at)))
}
