//go:build cgo
// +build cgo

package polylimit_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/polylimit/polylimit/bindings/go/internal/redistest"
)

// redisServer is a throwaway redis-server on a free loopback port, in a
// temporary directory, run in the foreground so that the test owns the
// process (and can SIGSTOP it): internal/redistest, shared with the tests of
// httplimit and promcollector.
type redisServer struct{ *redistest.Server }

var shared *redisServer

func TestMain(m *testing.M) {
	srv, err := startRedis()
	if err != nil {
		fmt.Fprintln(os.Stderr, "polylimit tests need redis-server:", err)
		os.Exit(1)
	}
	shared = srv
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

func startRedis() (*redisServer, error) {
	s, err := redistest.Start()
	if err != nil {
		return nil, err
	}
	return &redisServer{s}, nil
}

// newRedis gives a test its own server, stopped with the test.
func newRedis(t *testing.T) *redisServer {
	t.Helper()
	srv, err := startRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}
