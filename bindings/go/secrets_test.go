//go:build cgo

package polylimit_test

// No password reaches anything this package shows: a unique marker password
// goes through every error path Go can reach (URLs that do not parse, TLS
// option errors, wrong passwords and an ACL user against a real
// redis-server, a server that echoes AUTH's arguments, refused ports,
// Cluster seeds refused, wrong sentinel and data passwords against a real
// sentinel) and must not appear in any error, Client.String, %v/%+v of the
// client, the Prometheus text or RedactURL's output.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
	"github.com/polylimit/polylimit/bindings/go/internal/redistest"
)

func secretMarker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "s3cr3t-MARKER-" + hex.EncodeToString(b)
}

func assertClean(t *testing.T, marker, context, text string) {
	t.Helper()
	if strings.Contains(text, marker) || strings.Contains(text, marker[14:]) {
		t.Errorf("%s: the marker leaked: %s", context, text)
	}
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// exercise opens url and, when it opens, makes calls that reach the server;
// every text shown on the way is checked. It returns the first error.
func exercise(t *testing.T, marker, url string, opts ...polylimit.Option) error {
	t.Helper()
	shown := polylimit.RedactURL(url)
	assertClean(t, marker, "RedactURL", shown)
	if !strings.Contains(shown, "***") {
		t.Errorf("nothing redacted: %s", shown)
	}
	if again := polylimit.RedactURL(shown); again != shown {
		t.Errorf("RedactURL is not idempotent: %q then %q", shown, again)
	}
	opts = append(opts, polylimit.WithConnectTimeout(time.Second))
	c, err := polylimit.Open(url, opts...)
	if err != nil {
		assertClean(t, marker, "Open "+shown, err.Error())
		assertClean(t, marker, "Open "+shown, fmt.Sprintf("%+v %#v", err, err))
		return err
	}
	defer func() {
		c.Close()
		assertClean(t, marker, "closed client", c.String())
	}()
	assertClean(t, marker, "String", c.String())
	assertClean(t, marker, "%v", fmt.Sprintf("%v %+v %s", c, c, c))
	if !strings.Contains(c.String(), "***") {
		t.Errorf("Client.String does not show the redacted URL: %s", c.String())
	}
	l, err := c.LimiterFor(5, time.Second)
	if err != nil {
		t.Fatalf("LimiterFor: %v", err)
	}
	defer l.Close()
	ctx := context.Background()
	var first error
	note := func(what string, err error) {
		if err != nil {
			assertClean(t, marker, what+" "+shown, err.Error())
			assertClean(t, marker, what+" "+shown, fmt.Sprintf("%+v %#v", err, err))
			if first == nil {
				first = err
			}
		}
	}
	_, err = l.Allow(ctx, "k")
	note("Allow", err)
	_, err = l.Peek(ctx, "k")
	note("Peek", err)
	note("Reset", l.Reset(ctx, "k"))
	_, errs := l.AllowMany(ctx, []string{"a", "b"}, 1)
	for _, e := range errs {
		note("AllowMany", e)
	}
	if st, err := c.Stats(); err == nil {
		assertClean(t, marker, "Stats", fmt.Sprintf("%+v", st))
	}
	text, err := c.StatsPrometheus()
	note("StatsPrometheus", err)
	assertClean(t, marker, "StatsPrometheus", text)
	return first
}

func expectCode(t *testing.T, url string, err error, code polylimit.ErrCode) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Errorf("%s: got %v, want %v", polylimit.RedactURL(url), err, code)
	}
}

func TestSecretsRedactURL(t *testing.T) {
	m := secretMarker(t)
	for in, want := range map[string]string{
		"redis://bob:" + m + "@host:6379/2": "redis://bob:***@host:6379/2",
		"rediss://" + m + "@host":           "rediss://***@host",
		"redis+sentinel://u:" + m + "@s1,s2/m?sentinel_user=sen&sentinel_password=" + m: "redis+sentinel://u:***@s1,s2/m?sentinel_user=sen&sentinel_password=***",
		"redis://host:6379":              "redis://host:6379",
		"redis://u:" + m + "/x@h":        "redis://u:***@h",
		"redis://u:" + m + "\x00x@h":     "redis://u:***@h",
		"unix:///tmp/s.sock?db=1":        "unix:///tmp/s.sock?db=1",
		"redis+cluster://:" + m + "@a,b": "redis+cluster://:***@a,b",
	} {
		if got := polylimit.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", polylimit.RedactURL(in), got, want)
		}
	}
}

func TestSecretsBadURLs(t *testing.T) {
	m := secretMarker(t)
	forms := []string{
		"redis://user:%s@h:99999", "redis://user:%s@h:notaport", "redis://:%s@h:1:2", "redis://%s@h:0",
		"redis://user:%s@h:6379/notadb", "redis://user:%s@h:6379?x=1", "redis://user:%s@:6379",
		"redis://user:%s@h\x01st:1", "rediss://user:%s@h:99999", "redis://user:%s%%zz@h:1",
		"redis://user:%s%%2Fx@h:99999", "redis://user:%s/x@h:1", "redis://user:%s?x@h:1",
		"redis://user:%s#x@h:99999", "redis://user:%s@x@h:99999", "redis://user:%s?a=b@h:1",
		"redis+cluster://user:%s@h:1,h:99999", "redis+cluster://user:%s@h:1/3", "rediss+cluster://:%s@h:1,,h:2",
		"redis+sentinel://user:%s@h:26379", "redis+sentinel://h:26379/m?sentinel_password=%s&bogus=1",
		"redis+sentinel://h:26379/m?sentinel_user=u&sentinel_password=%s&x", "rediss+sentinel://:%s@h/m/notadb",
		"unix://user:%s@/tmp/x.sock", "unix:///tmp/x.sock?db=x&password=%s", "unix:///tmp/%s@x.sock",
		"bogus://user:%s@h:1", "user:%s@h://x", "redis:/user:%s@h", "://user:%s@h", "memory://u:%s@",
		"redis://user:%s\x00@h:1",
	}
	for _, form := range forms {
		url := fmt.Sprintf(form, m)
		err := exercise(t, m, url)
		expectCode(t, url, err, polylimit.ErrInvalidArgument)
	}
}

func TestSecretsTLSOptions(t *testing.T) {
	m := secretMarker(t)
	url := "redis://u:" + m + "@127.0.0.1:1"
	expectCode(t, url, exercise(t, m, url, polylimit.WithTLSInsecureSkipVerify()), polylimit.ErrInvalidArgument)
	url = "rediss://u:" + m + "@127.0.0.1:1"
	expectCode(t, url, exercise(t, m, url, polylimit.WithTLSCAFile("/nonexistent/polylimit-ca.pem")),
		polylimit.ErrInvalidArgument)
	plain, err := redistest.Start()
	if err != nil {
		t.Skip(err)
	}
	defer plain.Stop()
	url = "rediss://u:" + m + "@" + plain.Addr
	if err := exercise(t, m, url, polylimit.WithTLSInsecureSkipVerify()); err == nil {
		t.Errorf("TLS to a plain server succeeded")
	}
}

func TestSecretsWrongPasswords(t *testing.T) {
	m := secretMarker(t)
	secured, err := redistest.Start("--requirepass", "right-password")
	if err != nil {
		t.Skip(err)
	}
	defer secured.Stop()
	for _, url := range []string{
		"redis://:" + m + "@" + secured.Addr, "redis://default:" + m + "@" + secured.Addr + "/3",
		"redis://nosuchuser:" + m + "@" + secured.Addr, "redis://:" + m + "%40x@" + secured.Addr,
	} {
		expectCode(t, url, exercise(t, m, url), polylimit.ErrAuth)
	}
	open, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer open.Stop()
	if _, err := open.Do("ACL", "SETUSER", "alice", "on", ">right-password", "~*", "+@all"); err != nil {
		t.Fatal(err)
	}
	url := "redis://alice:" + m + "@" + open.Addr
	expectCode(t, url, exercise(t, m, url), polylimit.ErrAuth)
	url = "redis://:" + m + "@" + open.Addr // a password for a server without one
	expectCode(t, url, exercise(t, m, url), polylimit.ErrAuth)
}

func TestSecretsServerEchoingAuth(t *testing.T) {
	m := secretMarker(t)
	s, err := redistest.Start("--rename-command", "AUTH", "")
	if err != nil {
		t.Skip(err)
	}
	defer s.Stop()
	err = exercise(t, m, "redis://:"+m+"@"+s.Addr)
	if err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("got %v, want the server's unknown command error", err)
	}
}

func TestSecretsUnreachable(t *testing.T) {
	m := secretMarker(t)
	for _, url := range []string{
		fmt.Sprintf("redis://u:%s@127.0.0.1:%d", m, freeLoopbackPort(t)),
		fmt.Sprintf("redis+cluster://u:%s@127.0.0.1:%d,127.0.0.1:%d", m, freeLoopbackPort(t), freeLoopbackPort(t)),
		fmt.Sprintf("redis+sentinel://u:%s@127.0.0.1:%d/m?sentinel_password=%s", m, freeLoopbackPort(t), m),
		fmt.Sprintf("rediss+sentinel://:%s@127.0.0.1:%d/m", m, freeLoopbackPort(t)),
	} {
		expectCode(t, url, exercise(t, m, url), polylimit.ErrUnavailable)
	}
}

// startSentinel runs one sentinel watching one master, both with passwords,
// through the shared launcher; it returns the sentinel's address.
func startSentinel(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("python3", redistest.Path(), "sentinel", "--name", "secretmaster", "--replicas", "0",
		"--sentinels", "1", "--password", "data-password", "--sentinel-password", "sentinel-password",
		"--no-discovery")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		stdin.Close() // end of input: the launcher stops everything
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("redisfix sentinel: %v", err)
	}
	var desc struct {
		Error     string `json:"error"`
		Sentinels []struct {
			Port int `json:"port"`
		} `json:"sentinels"`
	}
	if err := json.Unmarshal([]byte(line), &desc); err != nil || desc.Error != "" || len(desc.Sentinels) == 0 {
		t.Fatalf("redisfix sentinel: %v %s", err, line)
	}
	return fmt.Sprintf("127.0.0.1:%d", desc.Sentinels[0].Port)
}

func TestSecretsSentinel(t *testing.T) {
	m := secretMarker(t)
	addr := startSentinel(t)
	url := "redis+sentinel://:data-password@" + addr + "/secretmaster?sentinel_password=" + m
	expectCode(t, url, exercise(t, m, url), polylimit.ErrAuth)
	url = "redis+sentinel://:" + m + "@" + addr + "/secretmaster?sentinel_password=sentinel-password"
	expectCode(t, url, exercise(t, m, url), polylimit.ErrAuth)
	url = "redis+sentinel://:" + m + "@" + addr + "/nosuchmaster?sentinel_password=" + m
	if err := exercise(t, m, url); err == nil {
		t.Errorf("an unknown master name was accepted")
	}
}

// An API key given in a request, and one written into a policy document,
// never reach a Redis key (SCAN of the real redis-server after the
// requests), a log line, an error, a response or the policy's metrics.
func TestSecretsHTTPAPIKey(t *testing.T) {
	m := secretMarker(t)
	var logs strings.Builder
	log.SetOutput(&logs)
	defer log.SetOutput(os.Stderr)

	c := open(t, shared.URL)
	l := limiter(t, c, "2/minute")
	var errs []string
	var mu sync.Mutex
	onError := func(w http.ResponseWriter, r *http.Request, err error) {
		mu.Lock()
		errs = append(errs, err.Error(), fmt.Sprintf("%+v", err))
		mu.Unlock()
		httplimit.DefaultErrorHandler(w, r, err)
	}
	byKey := httplimit.New(l, httplimit.WithKeyFunc(httplimit.KeyByAPIKey("X-API-Key")),
		httplimit.WithErrorHandler(onError))
	doc := `{"deny": {"api_keys": ["` + m + `-denied"]},
	  "rules": [{"name": "hdr", "limiter": 0, "key": ["header:X-Token", "api_key"]}]}`
	mw, err := httplimit.FromDocument(doc, l)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Close()
	mw = mw.With(httplimit.WithErrorHandler(onError))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	handlers := []http.Handler{byKey(ok), mw.Handler(ok)}
	var shown []string
	for _, h := range handlers {
		for _, hdr := range [][2]string{{"X-API-Key", m}, {"X-API-Key", m}, {"X-API-Key", m}, {"X-Token", m},
			{"X-API-Key", m + "-denied"}, {"X-Other", m}} {
			r := httptest.NewRequest("GET", "/secret", nil)
			r.Header.Set(hdr[0], hdr[1])
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			shown = append(shown, fmt.Sprintf("%d %v %s", w.Code, w.Header(), w.Body.String()))
		}
	}
	// A document the library refuses does not quote the secret it holds.
	if _, err := httplimit.FromDocument(`{"deny": {"api_keys": ["`+m+`"]}, "rules": [{"name": "a", "limiter": 9}]}`, l); err == nil {
		t.Error("a rule naming limiter 9 of 1 was accepted")
	} else {
		errs = append(errs, err.Error())
	}
	keys, err := shared.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("SCAN found no key: the requests were not counted")
	}
	for _, k := range keys {
		assertClean(t, m, "Redis key", k)
	}
	page, err := mw.Policy().MetricsPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	assertClean(t, m, "metrics", page)
	assertClean(t, m, "log", logs.String())
	for _, e := range errs {
		assertClean(t, m, "error", e)
	}
	for _, s := range shown {
		assertClean(t, m, "response", s)
	}
}
