// Command go-http is a small HTTP server whose requests are rate limited by
// polylimit through the httplimit middleware. Run several copies against one
// Redis and they share every limit.
//
//	POLYLIMIT_URL=redis://127.0.0.1:6379 go run . -addr 127.0.0.1:8080
//
// Routes: "/" (the default limit, per client IP), "/login" (a stricter
// limit of its own), "/healthz" and "/metrics" (exempt; /metrics is the
// client's counters in the Prometheus text format). Every limited response
// carries the RateLimit-* headers; a denied one is 429 with Retry-After.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("go-http", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (port 0: any free port)")
	url := fs.String("url", "", "Redis URL (default: $POLYLIMIT_URL; memory:// for a limit local to this process)")
	name := fs.String("name", "go-http", "client name: the client=\"...\" label of /metrics")
	limit := fs.String("limit", "10/minute", "default limit per client IP (a rate spec)")
	loginLimit := fs.String("login-limit", "3/minute", "limit of /login per client IP")
	prefix := fs.String("prefix", "go-http", "Redis key prefix; servers that share it share the limits")
	proxies := fs.String("trusted-proxies", "", "comma-separated addresses or CIDRs whose X-Forwarded-For is believed")
	timeout := fs.Duration("timeout", 500*time.Millisecond, "longest wait for a decision (then 503)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "go-http:", err)
		return 1
	}

	// "" reads POLYLIMIT_URL; without it Open fails: there is no silent
	// local default.
	client, err := polylimit.Open(*url, polylimit.WithName(*name), polylimit.WithCommandTimeout(time.Second))
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	perIP, err := client.Limiter(*limit, polylimit.WithPrefix(*prefix))
	if err != nil {
		return fail(err)
	}
	defer perIP.Close()
	login, err := client.Limiter(*loginLimit, polylimit.WithPrefix(*prefix+"-login"))
	if err != nil {
		return fail(err)
	}
	defer login.Close()
	var trusted []string
	if *proxies != "" {
		trusted = strings.Split(*proxies, ",")
	}
	prefixes, err := httplimit.ParseTrustedProxies(trusted...)
	if err != nil {
		return fail(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		res, _ := httplimit.FromContext(r.Context())
		fmt.Fprintf(w, "hello; %d of %d left\n", res.Remaining, res.Limit)
	})
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "login ok\n") })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		text, err := polylimit.PrometheusText(client)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		io.WriteString(w, text)
	})
	limited := httplimit.New(perIP,
		httplimit.WithTrustedProxies(prefixes...),
		httplimit.WithRoute("/login", login),
		httplimit.WithExempt("/healthz", "/metrics"),
		httplimit.WithTimeout(*timeout),
	)(mux)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(err)
	}
	srv := &http.Server{Handler: limited, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fail(err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		// Requests still running (or connections that never sent one) after
		// the grace period: close them; stopping was asked for, not an error.
		if errors.Is(err, context.DeadlineExceeded) {
			srv.Close()
			return 0
		}
		return fail(err)
	}
	return 0
}
