//go:build cgo
// +build cgo

package polylimit_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

// do sends one command to the server on a fresh connection and returns the
// first line of the reply.
func (s *redisServer) do(t *testing.T, args ...string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(line, "\r\n")
}

// Over maxmemory with noeviction, every algorithm's check is refused up
// front with ErrNoMemory, nothing is consumed, and a failure policy does not
// hide it (the server answered).
func TestOutOfMemoryIsDistinctAndConsumesNothing(t *testing.T) {
	srv := newRedis(t)
	srv.do(t, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	blob := strings.Repeat("x", 64*1024)
	for i := 0; i < 64; i++ {
		srv.do(t, "SET", fmt.Sprintf("junk:%d", i), blob)
	}
	srv.do(t, "CONFIG", "SET", "maxmemory", "1mb")
	c, err := polylimit.Open(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, alg := range []polylimit.Algorithm{polylimit.SlidingLog, polylimit.SlidingCounter, polylimit.FixedWindow,
		polylimit.GCRA} {
		l := limiter(t, c, "5/minute; 50/hour", polylimit.WithAlgorithm(alg),
			polylimit.WithFailurePolicy(polylimit.FailOpen))
		_, err := l.Allow(context.Background(), "k")
		if !errors.Is(err, polylimit.ErrNoMemory) {
			t.Fatalf("%v: %v, want ErrNoMemory", alg, err)
		}
		if got := srv.do(t, "DBSIZE"); got != ":64" {
			t.Fatalf("%v: DBSIZE %s after a refused check, want :64 (nothing written)", alg, got)
		}
	}
	srv.do(t, "CONFIG", "SET", "maxmemory", "0")
	l := limiter(t, c, "5/minute")
	if r, err := l.Allow(context.Background(), "k"); err != nil || !r.Allowed {
		t.Fatalf("memory back: %+v, %v", r, err)
	}
}
