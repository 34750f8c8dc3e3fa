// Package redistest starts throwaway redis-server processes for the tests of
// this module and of the modules beside it (httplimit, promcollector): each
// on a free loopback port, in a temporary directory, in the foreground so
// that the test owns the process (and can SIGSTOP it). It needs redis-server
// on PATH; it is no part of the binding's API.
package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Server is one redis-server process.
type Server struct {
	URL  string // redis://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT
	cmd  *exec.Cmd
	dir  string
	done chan struct{} // closed once the process has exited and been reaped
}

// Start starts a server and waits until it answers PING.
func Start() (*Server, error) {
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
			os.RemoveAll(dir)
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
		s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, dir: dir, done: exited}
		s.URL = "redis://" + s.Addr
		if s.waitReady(5 * time.Second) {
			return s, nil
		}
		lastErr = fmt.Errorf("redis-server did not answer PING on %s (attempt %d)", s.Addr, attempt+1)
		cmd.Process.Kill()
		<-exited
		os.RemoveAll(dir)
	}
	return nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls PING until the server answers, exits, or d passes.
func (s *Server) waitReady(d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		select {
		case <-s.done:
			return false
		default:
		}
		if _, err := s.Do("PING"); err == nil {
			return true
		}
	}
	return false
}

// Do sends one command (inline form: arguments without spaces) and returns
// its first reply line, e.g. "+PONG" or ":3".
func (s *Server) Do(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte(strings.Join(args, " ") + "\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return line, fmt.Errorf("redis: %s", line[1:])
	}
	return line, nil
}

// Keys returns the names of the keys matching pattern (KEYS pattern; a
// pattern without spaces).
func (s *Server) Keys(pattern string) ([]string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("KEYS " + pattern + "\r\n")); err != nil {
		return nil, err
	}
	rd := bufio.NewReader(conn)
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	var n int
	if _, err := fmt.Sscanf(line, "*%d\r\n", &n); err != nil {
		return nil, fmt.Errorf("KEYS: unexpected reply %q", line)
	}
	keys := make([]string, 0, n)
	for i := 0; i < n; i++ {
		var size int
		if line, err = rd.ReadString('\n'); err != nil {
			return nil, err
		}
		if _, err := fmt.Sscanf(line, "$%d\r\n", &size); err != nil {
			return nil, fmt.Errorf("KEYS: unexpected element %q", line)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		keys = append(keys, string(buf[:size]))
	}
	return keys, nil
}

// Signal sends sig to the server (SIGSTOP makes it unresponsive, SIGCONT
// resumes it).
func (s *Server) Signal(sig syscall.Signal) error { return s.cmd.Process.Signal(sig) }

// Stop resumes (in case a test stopped it), terminates and waits. Idempotent.
func (s *Server) Stop() {
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
