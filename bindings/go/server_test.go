//go:build cgo
// +build cgo

package polylimit_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// redisServer is a throwaway redis-server on a free loopback port, in a
// temporary directory, run in the foreground so that the test owns the
// process (and can SIGSTOP it).
type redisServer struct {
	URL  string
	Addr string
	cmd  *exec.Cmd
	dir  string
	done chan struct{} // closed once the process has exited and been reaped
}

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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startRedis() (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ { // another process may grab the port first
		dir, err := os.MkdirTemp("", "polylimit-go-redis-")
		if err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", dir, "--protected-mode", "no",
			"--logfile", filepath.Join(dir, "redis.log"))
		// If the test binary dies, so does its server.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		srv := &redisServer{Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, dir: dir, done: exited}
		srv.URL = "redis://" + srv.Addr
		if srv.waitReady(5 * time.Second) {
			return srv, nil
		}
		lastErr = fmt.Errorf("redis-server did not answer PING on %s (attempt %d)", srv.Addr, attempt+1)
		cmd.Process.Kill()
		<-exited
		os.RemoveAll(dir)
	}
	return nil, lastErr
}

// waitReady polls PING until the server answers, exits, or d passes.
func (s *redisServer) waitReady(d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		select {
		case <-s.done:
			return false
		default:
		}
		if s.ping() {
			return true
		}
	}
	return false
}

func (s *redisServer) ping() bool {
	conn, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

func (s *redisServer) Signal(sig syscall.Signal) error { return s.cmd.Process.Signal(sig) }

// Stop resumes (in case a test stopped it), terminates and waits.
func (s *redisServer) Stop() {
	s.cmd.Process.Signal(syscall.SIGCONT)
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.dir)
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
