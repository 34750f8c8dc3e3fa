package httplimit_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
)

// The middleware's cost per request, in process (httptest.NewRecorder; no
// socket): a request keyed by IP, admitted by a limiter that never denies,
// on a memory:// client (BenchmarkMiddlewareMemory: the middleware's own
// work and the library's) or on redis-server (BenchmarkMiddlewareRedis: a
// round trip each), 1 and 64 concurrent requests. The request's context can
// end, as a server's does.
func benchMiddleware(b *testing.B, url string) {
	c, err := polylimit.Open(url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	l, err := c.LimiterFor(1_000_000, time.Millisecond, polylimit.WithAlgorithm(polylimit.GCRA),
		polylimit.WithPrefix("bench-"+strconv.FormatInt(time.Now().UnixNano(), 36)))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	h := httplimit.New(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }))
	for _, par := range []int{1, 64} {
		b.Run("par="+strconv.Itoa(par), func(b *testing.B) {
			b.ReportAllocs()
			run := func(i int) {
				ctx, cancel := context.WithCancel(context.Background())
				r := httptest.NewRequest("GET", "/items/"+strconv.Itoa(i&7), nil).WithContext(ctx)
				r.RemoteAddr = "192.0.2." + strconv.Itoa(i&63) + ":5000"
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				cancel()
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body.String())
				}
			}
			if par == 1 {
				for i := 0; i < b.N; i++ {
					run(i)
				}
				return
			}
			b.SetParallelism((par + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)) // par goroutines
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					run(i)
					i++
				}
			})
		})
	}
}

func BenchmarkMiddlewareMemory(b *testing.B) { benchMiddleware(b, "memory://") }

func BenchmarkMiddlewareRedis(b *testing.B) { benchMiddleware(b, shared.URL) }
