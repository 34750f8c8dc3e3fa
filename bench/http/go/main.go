// Command peer is bench/http's Go peer: net/http with ulule/limiter's
// net/http middleware on its Redis store (go-redis v9), keyed by the
// X-API-Key header, as its README shows. The same server, handler and config
// file as polylimit's service (tests/http/services/go):
//
//	peer CONFIG_FILE PORT        (POLYLIMIT_URL: the Redis)
//
// CONFIG_FILE: {"limiters": [{"rate": "1000000/hour", "prefix": "..."}], ...}
// (only the first limiter is read). Prints "ready" once it accepts
// connections; exits cleanly on SIGTERM.
//
// go-chi/httprate-redis, the first choice, is not served by the module
// proxy this project uses; ulule/limiter is the most used Redis-backed
// net/http middleware that is.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

type config struct {
	Limiters []struct {
		Rate   string `json:"rate"`
		Prefix string `json:"prefix"`
	} `json:"limiters"`
}

var windows = map[string]time.Duration{
	"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
}

func parseRate(text string) (limiter.Rate, error) {
	n, unit, ok := strings.Cut(text, "/")
	limit, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || windows[unit] == 0 {
		return limiter.Rate{}, fmt.Errorf("unsupported rate %q", text)
	}
	return limiter.Rate{Period: windows[unit], Limit: limit}, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 3 {
		return fmt.Errorf("usage: %s CONFIG_FILE PORT", os.Args[0])
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		return err
	}
	var cfg config
	if err := json.Unmarshal(data, &cfg); err != nil || len(cfg.Limiters) == 0 {
		return fmt.Errorf("%s: no limiter (%v)", os.Args[1], err)
	}
	rate, err := parseRate(cfg.Limiters[0].Rate)
	if err != nil {
		return err
	}
	opts, err := redis.ParseURL(os.Getenv("POLYLIMIT_URL"))
	if err != nil {
		return err
	}
	client := redis.NewClient(opts)
	defer client.Close()
	store, err := sredis.NewStoreWithOptions(client, limiter.StoreOptions{
		Prefix:   cfg.Limiters[0].Prefix,
		MaxRetry: limiter.DefaultMaxRetry,
	})
	if err != nil {
		return err
	}
	mw := stdlib.NewMiddleware(limiter.New(store, rate),
		stdlib.WithKeyGetter(func(r *http.Request) string { return r.Header.Get("X-API-Key") }))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })

	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Args[2])
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mw.Handler(ok)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Println("ready")

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	select {
	case <-stop:
		return srv.Shutdown(context.Background())
	case err := <-done:
		return err
	}
}
