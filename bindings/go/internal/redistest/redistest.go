// Package redistest starts throwaway redis-server processes for the tests of
// the binding and of its subpackages (httplimit, promcollector): each
// on a free loopback port, in a temporary directory, through
// tests/fixture/redisfix, the launcher every language's test fixtures share
// (it needs python3 and redis-server on PATH). The launcher stops the server
// when told to, or when the test binary dies (its stdin closes). It is no
// part of the binding's API.
package redistest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is one redis-server process.
type Server struct {
	URL  string // redis://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT
	pid  int
	fix  *launcher
}

// launcher is one running tests/fixture/redisfix.
type launcher struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	done    chan struct{} // closed once it has exited and been reaped
	stopped sync.Once
}

// description is the launcher's first line.
type description struct {
	Error string `json:"error"`
	Dir   string `json:"dir"`
	URL   string `json:"url"`
	Nodes []struct {
		Port int `json:"port"`
		Pid  int `json:"pid"`
	} `json:"nodes"`
}

// Path is the launcher: $POLYLIMIT_REDISFIX, else tests/fixture/redisfix of
// the source tree this file is in.
func Path() string {
	if p := os.Getenv("POLYLIMIT_REDISFIX"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0) // .../bindings/go/internal/redistest/redistest.go
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "tests", "fixture", "redisfix")
}

// Start starts a server (redis-server with extra arguments, if any) and
// waits until it answers PING.
func Start(extra ...string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, err
	}
	cmd := exec.Command("python3", append([]string{Path(), "standalone", "--"}, extra...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l := &launcher{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), done: make(chan struct{})}
	go func() { cmd.Wait(); close(l.done) }()
	line, err := l.stdout.ReadString('\n')
	var d description
	if err == nil {
		err = json.Unmarshal([]byte(line), &d)
	}
	if err == nil && d.Error != "" {
		err = errors.New(d.Error)
	}
	if err == nil && len(d.Nodes) != 1 {
		err = fmt.Errorf("unexpected description %q", line)
	}
	if err != nil {
		l.stop()
		return nil, fmt.Errorf("redisfix standalone: %w", err)
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", d.Nodes[0].Port), pid: d.Nodes[0].Pid, fix: l}
	s.URL = "redis://" + s.Addr
	return s, nil
}

// stop tells the launcher to stop everything and waits for it. Idempotent.
func (l *launcher) stop() {
	l.stopped.Do(func() {
		io.WriteString(l.stdin, "stop\n")
		l.stdin.Close()
		select {
		case <-l.done:
		case <-time.After(15 * time.Second):
			l.cmd.Process.Kill()
			<-l.done
		}
	})
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

// Bulk sends one command (inline form: arguments without spaces) whose reply
// is a bulk string (INFO, CLIENT LIST) and returns that string.
func (s *Server) Bulk(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(strings.Join(args, " ") + "\r\n")); err != nil {
		return "", err
	}
	rd := bufio.NewReader(conn)
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	var size int
	if _, err := fmt.Sscanf(line, "$%d\r\n", &size); err != nil || size < 0 {
		return "", fmt.Errorf("%s: not a bulk string: %q", args[0], strings.TrimRight(line, "\r\n"))
	}
	buf := make([]byte, size+2)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return "", err
	}
	return string(buf[:size]), nil
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

// Pid is the server's process id.
func (s *Server) Pid() int { return s.pid }

// Signal sends sig to the server (SIGSTOP makes it unresponsive, SIGCONT
// resumes it).
func (s *Server) Signal(sig syscall.Signal) error { return syscall.Kill(s.pid, sig) }

// Stop resumes (in case a test stopped it), terminates and waits; the
// launcher removes the directory. Idempotent.
func (s *Server) Stop() { s.fix.stop() }

// Scan returns the names of every key (SCAN, cursor by cursor).
func (s *Server) Scan() ([]string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(conn)
	readLine := func() (string, error) {
		line, err := rd.ReadString('\n')
		return strings.TrimRight(line, "\r\n"), err
	}
	readBulk := func() (string, error) {
		head, err := readLine()
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(head, "$") {
			return "", fmt.Errorf("redis: SCAN: unexpected %q", head)
		}
		n, err := strconv.Atoi(head[1:])
		if err != nil {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	var keys []string
	cursor := "0"
	for {
		if _, err := conn.Write([]byte("SCAN " + cursor + " COUNT 1000\r\n")); err != nil {
			return nil, err
		}
		if head, err := readLine(); err != nil || head != "*2" {
			return nil, fmt.Errorf("redis: SCAN: unexpected %q (%v)", head, err)
		}
		if cursor, err = readBulk(); err != nil {
			return nil, err
		}
		head, err := readLine()
		if err != nil || !strings.HasPrefix(head, "*") {
			return nil, fmt.Errorf("redis: SCAN: unexpected %q (%v)", head, err)
		}
		n, err := strconv.Atoi(head[1:])
		if err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			k, err := readBulk()
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
		if cursor == "0" {
			return keys, nil
		}
	}
}
