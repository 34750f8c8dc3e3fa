// Command service is the Go service of the cross-language HTTP suite
// (tests/http/cross_language.py): net/http with package httplimit, its
// policy made by httplimit.FromDocument from a config file.
//
//	service CONFIG_FILE PORT        (POLYLIMIT_URL: the Redis to share)
//
// CONFIG_FILE: {"limiters": [{"rate": "5/minute", "prefix": "xl:ip",
// "algorithm": "gcra"}, ...], "policy": {...}}, or {"policy_file": PATH,
// "watch_ms": 100}: a live policy opened from that file (TOML or JSON),
// watched for changes, with no application limiters. The user id is the request's
// X-User header and the tenant its X-Tenant (the application's identities,
// not policy headers). Every request that goes on gets 200 "ok\n". Prints
// "ready" once it accepts connections; exits cleanly on SIGTERM.
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
	"syscall"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
)

type config struct {
	Limiters []struct {
		Rate      string `json:"rate"`
		Prefix    string `json:"prefix"`
		Algorithm string `json:"algorithm"`
	} `json:"limiters"`
	Policy     json.RawMessage `json:"policy"`
	PolicyFile string          `json:"policy_file"`
	WatchMS    *int            `json:"watch_ms"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "service:", err)
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
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("%s: %v", os.Args[1], err)
	}
	client, err := polylimit.Open("") // POLYLIMIT_URL
	if err != nil {
		return err
	}
	defer client.Close()
	var m *httplimit.Middleware
	if cfg.PolicyFile != "" {
		watch := 100
		if cfg.WatchMS != nil {
			watch = *cfg.WatchMS
		}
		live, err := polylimit.OpenLivePolicy(client, cfg.PolicyFile,
			polylimit.WithWatch(time.Duration(watch)*time.Millisecond))
		if err != nil {
			return err
		}
		defer live.Close()
		m = httplimit.FromLive(live)
	} else if m, err = fromDocument(client, &cfg); err != nil {
		return err
	}
	m = m.With(
		httplimit.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }),
		httplimit.WithTenant(func(r *http.Request) string { return r.Header.Get("X-Tenant") }))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })

	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Args[2])
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: m.Handler(ok)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Println("ready") // stdout is unbuffered in Go: written at once

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	select {
	case <-stop:
		if err := srv.Shutdown(context.Background()); err != nil {
			return err
		}
		return nil
	case err := <-done:
		return err
	}
}

// fromDocument is the middleware of the config's limiters and policy.
func fromDocument(client *polylimit.Client, cfg *config) (*httplimit.Middleware, error) {
	var limiters []*polylimit.Limiter
	for _, l := range cfg.Limiters {
		opts := []polylimit.LimiterOption{polylimit.WithPrefix(l.Prefix)}
		if l.Algorithm != "" {
			a, err := polylimit.ParseAlgorithm(l.Algorithm)
			if err != nil {
				return nil, err
			}
			opts = append(opts, polylimit.WithAlgorithm(a))
		}
		lim, err := client.Limiter(l.Rate, opts...)
		if err != nil {
			return nil, err
		}
		limiters = append(limiters, lim)
	}
	return httplimit.FromDocument(string(cfg.Policy), limiters...)
}
