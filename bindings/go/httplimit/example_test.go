package httplimit_test

import (
	"log"
	"net/http"
	"time"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/httplimit"
)

// A server behind a load balancer at 10.0.0.0/8: 100 requests a minute per
// client IP, 5 a minute on /login, health checks exempt, a decision within
// 300ms or 503.
func ExampleNew() {
	client, err := polylimit.Open("", polylimit.WithName("web")) // "": $POLYLIMIT_URL
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	perIP, err := client.Limiter("100/minute", polylimit.WithPrefix("web"))
	if err != nil {
		log.Fatal(err)
	}
	login, err := client.Limiter("5/minute", polylimit.WithPrefix("web-login"))
	if err != nil {
		log.Fatal(err)
	}
	proxies, err := httplimit.ParseTrustedProxies("10.0.0.0/8")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello\n")) })
	limit := httplimit.New(perIP,
		httplimit.WithTrustedProxies(proxies...),
		httplimit.WithRoute("/login", login),
		httplimit.WithExempt("/healthz"),
		httplimit.WithTimeout(300*time.Millisecond))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", limit(mux)))
}

// Keyed by API key (hashed before it reaches Redis), by IP without one.
func ExampleKeyByHeader() {
	client, err := polylimit.Open("")
	if err != nil {
		log.Fatal(err)
	}
	perKey, err := client.Limiter("1000/hour; 50/minute", polylimit.WithPrefix("api"))
	if err != nil {
		log.Fatal(err)
	}
	limit := httplimit.New(perKey, httplimit.WithKeyFunc(httplimit.KeyByHeader("X-API-Key", httplimit.KeyByIP())))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", limit(http.NotFoundHandler())))
}

// Keyed by API key; a request without one is refused with 401 Unauthorized
// (ErrNoCredential). The public endpoint lets keyless requests through
// unlimited, asked for by name.
func ExampleKeyByAPIKey() {
	client, err := polylimit.Open("")
	if err != nil {
		log.Fatal(err)
	}
	perKey, err := client.Limiter("1000/hour", polylimit.WithPrefix("api"))
	if err != nil {
		log.Fatal(err)
	}
	byKey := httplimit.WithKeyFunc(httplimit.KeyByAPIKey("X-API-Key"))
	mux := http.NewServeMux()
	mux.Handle("/api/", httplimit.New(perKey, byKey)(http.NotFoundHandler()))
	mux.Handle("/public/", httplimit.New(perKey, byKey,
		httplimit.WithMissingKey(httplimit.MissingKeySkip))(http.NotFoundHandler()))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}

// A login endpoint where only failed logins count: 5 a minute per user name,
// successes refunded (the brute-force pattern).
func ExampleWithCountWhen() {
	client, err := polylimit.Open("")
	if err != nil {
		log.Fatal(err)
	}
	login, err := client.Limiter("5/minute", polylimit.WithPrefix("web-login"))
	if err != nil {
		log.Fatal(err)
	}
	failures := func(status int) bool { return status >= 400 }
	limit := httplimit.New(login, httplimit.WithKeyFunc(httplimit.KeyByHeader("X-User", nil)),
		httplimit.WithCountWhen(failures))
	loginHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("password") != "right" {
			http.Error(w, "wrong password", http.StatusUnauthorized)
		}
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", limit(loginHandler)))
}
