package httplimit_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The example server, examples/go-http, built the way a user builds it (its
// own module, go build) and run as two processes against one Redis: they
// share every limit exactly.

var (
	exampleOnce sync.Once
	exampleDir  string
	exampleBin  string
	exampleErr  error
)

// removeExample deletes the example's build directory (TestMain, after the
// tests): a test run leaves nothing in the temporary directory.
func removeExample() {
	if exampleDir != "" {
		os.RemoveAll(exampleDir)
	}
}

func buildExample(t *testing.T) string {
	t.Helper()
	exampleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "polylimit-go-http-")
		if err != nil {
			exampleErr = err
			return
		}
		exampleDir = dir
		exampleBin = filepath.Join(dir, "go-http")
		cmd := exec.Command("go", "build", "-o", exampleBin, ".")
		cmd.Dir = filepath.Join("..", "..", "..", "examples", "go-http")
		// The test run's GOEXPERIMENT (cgocheck2) would rebuild the standard
		// library for the example; the example is an ordinary build.
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOEXPERIMENT=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			exampleErr = fmt.Errorf("go build in %s: %v\n%s", cmd.Dir, err, out)
		}
	})
	if exampleErr != nil {
		t.Fatal(exampleErr)
	}
	return exampleBin
}

// startExample runs the example with args and POLYLIMIT_URL=url and returns
// its base URL, from the "listening on" line it prints.
func startExample(t *testing.T, url string, args ...string) string {
	t.Helper()
	cmd := exec.Command(buildExample(t), append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "POLYLIMIT_URL="+url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		cmd.Process.Signal(syscall.SIGTERM) // graceful shutdown: exit status 0
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("example server: %v after SIGTERM; stderr: %s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("example server did not stop on SIGTERM")
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		base := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			t.Fatalf("example server printed %q; stderr: %s", line, stderr.String())
		}
		return base
	case err := <-exited:
		stopped = true
		t.Fatalf("example server exited: %v; stderr: %s", err, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("example server printed nothing in 10 s; stderr: %s", stderr.String())
	}
	return ""
}

func TestExampleTwoProcessesShareOneLimit(t *testing.T) {
	const limit, loginLimit, requests = 7, 3, 24
	pfx := prefix(t, "")
	a := startExample(t, shared.URL, "-name", "proc-a", "-prefix", pfx, "-limit", fmt.Sprintf("%d/minute", limit),
		"-login-limit", fmt.Sprintf("%d per 10 minutes", loginLimit))
	b := startExample(t, shared.URL, "-name", "proc-b", "-prefix", pfx, "-limit", fmt.Sprintf("%d/minute", limit),
		"-login-limit", fmt.Sprintf("%d per 10 minutes", loginLimit))
	bases := []string{a, b}

	var ok, denied atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < requests; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := fetch(bases[i%2], "/")
			if err != nil {
				t.Error(err)
				return
			}
			switch r.status {
			case 200:
				ok.Add(1)
				if r.header.Get("RateLimit-Limit") != fmt.Sprint(limit) {
					t.Errorf("200 with RateLimit-Limit %q", r.header.Get("RateLimit-Limit"))
				}
			case 429:
				denied.Add(1)
				if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
					t.Errorf("429 with Retry-After %q", ra)
				}
			default:
				t.Errorf("status %d: %s", r.status, r.body)
			}
		}(i)
	}
	wg.Wait()
	if ok.Load() != limit || denied.Load() != requests-limit {
		t.Errorf("two processes admitted %d, denied %d; want exactly %d and %d", ok.Load(), denied.Load(), limit,
			requests-limit)
	}

	// /login: its own limit, shared too; the policy names it.
	for i, want := range []int{200, 200, 200, 429} {
		r := get(t, bases[i%2], "/login")
		expectStatus(t, r, want)
		expect(t, r, "RateLimit-Policy", fmt.Sprintf(`"/login";q=%d;w=600`, loginLimit))
	}
	// Exempt: no check, no headers.
	for _, base := range bases {
		r := get(t, base, "/healthz")
		expectStatus(t, r, 200)
		expect(t, r, "RateLimit-Limit", "")
	}
	// Each process's /metrics: its client's name as the label; together they
	// counted every check once.
	var admitted, checks int
	for i, base := range bases {
		r := get(t, base, "/metrics")
		expectStatus(t, r, 200)
		name := []string{"proc-a", "proc-b"}[i]
		admitted += sample(t, r.body, fmt.Sprintf(`polylimit_admitted_total{client=%q}`, name))
		checks += sample(t, r.body, fmt.Sprintf(`polylimit_checks_total{client=%q}`, name))
	}
	if admitted != limit+loginLimit || checks != requests+4 {
		t.Errorf("metrics: %d admitted, %d checks; want %d and %d", admitted, checks, limit+loginLimit, requests+4)
	}
}

// sample returns the value of the sample line that starts with series.
func sample(t *testing.T, page, series string) int {
	t.Helper()
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, series+" ") {
			var v int
			if _, err := fmt.Sscan(strings.TrimPrefix(line, series+" "), &v); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no sample %s in:\n%s", series, page)
	return 0
}

// No URL and no POLYLIMIT_URL: the example refuses to start, naming both
// choices, rather than limiting in memory behind the user's back.
func TestExampleWithoutURLFails(t *testing.T) {
	cmd := exec.Command(buildExample(t), "-addr", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "POLYLIMIT_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1; output %s", err, out)
	}
	for _, want := range []string{"POLYLIMIT_URL", "memory://"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output %q does not name %s", out, want)
		}
	}
}
