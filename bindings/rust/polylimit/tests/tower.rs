//! The tower layer in an axum server over real HTTP (feature `tower`).
#![cfg(feature = "tower")]

mod common;

use axum::{extract::ConnectInfo, routing::get, Router};
use common::{prefix, redis_url};
use polylimit::tower::{CountWhen, KeyBy, MissingKey, RateLimitLayer};
use polylimit::Client;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves `router` on a free loopback port; returns its address.
async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
            .await
            .unwrap();
    });
    addr
}

/// One HTTP/1.1 GET with extra header lines; returns (status, lowercased head).
async fn get_once(addr: SocketAddr, headers: &str) -> (u16, String) {
    let (code, head, _) = request(addr, "GET", "/", headers).await;
    (code, head)
}

/// One HTTP/1.1 request; returns (status, lowercased head, body).
async fn request(addr: SocketAddr, method: &str, path: &str, headers: &str) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n{headers}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).await.unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    (code, head, body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_answers_429_with_headers() {
    let limiter = Client::open(redis_url())
        .unwrap()
        .limiter_builder()
        .spec("3/minute")
        .prefix(prefix("tower"))
        .build()
        .unwrap();
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(RateLimitLayer::new(limiter, KeyBy::header("X-Api-Key").unwrap()));
    let addr = serve(app).await;
    for left in [2, 1, 0] {
        let (code, head) = get_once(addr, "X-Api-Key: alice\r\n").await;
        assert_eq!(code, 200, "{head}");
        assert!(head.contains(&format!("ratelimit-remaining: {left}\r\n")), "{head}");
        assert!(!head.contains("retry-after"), "{head}");
    }
    let (code, head, body) = request(addr, "GET", "/", "X-Api-Key: alice\r\n").await;
    assert_eq!(code, 429, "{head}");
    assert!(
        head.contains("retry-after: ") && head.contains("ratelimit-limit: 3"),
        "{head}"
    );
    // The contract's answer: its body, plain text, the rule named in the policy headers.
    assert_eq!(body, "Too Many Requests\n");
    assert!(head.contains("content-type: text/plain; charset=utf-8\r\n"), "{head}");
    assert!(head.contains("ratelimit-policy: \"default\";q=3;w=60"), "{head}");
    // Another key has its own budget; no key is a client error.
    assert_eq!(get_once(addr, "X-Api-Key: bob\r\n").await.0, 200);
    assert_eq!(get_once(addr, "").await.0, 400);
    // The header's value is hashed into the key: never stored in Redis.
    let keys = common::redis_keys(redis_url());
    let ours: Vec<_> = keys.iter().filter(|k| k.contains(&prefix("tower"))).collect();
    assert!(ours.iter().any(|k| k.contains("header:x-api-key:")), "{keys:?}");
    assert!(
        ours.iter().all(|k| !k.contains("alice") && !k.contains("bob")),
        "{ours:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_by_peer_ip_through_trusted_proxies() {
    let limiter = Client::open("memory://").unwrap().limiter("1/minute").unwrap();
    // The test client connects from 127.0.0.1, which is a trusted proxy here.
    let key = KeyBy::client_ip(vec!["127.0.0.1".parse().unwrap()], |p| {
        p.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
    });
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(RateLimitLayer::new(limiter, key));
    let addr = serve(app).await;
    let from = |xff: &str| format!("X-Forwarded-For: {xff}\r\n");
    assert_eq!(get_once(addr, &from("203.0.113.7")).await.0, 200);
    assert_eq!(get_once(addr, &from("203.0.113.7")).await.0, 429);
    // A spoofed leftmost entry does not buy a new budget: the rightmost
    // untrusted hop is the client.
    assert_eq!(get_once(addr, &from("198.51.100.1, 203.0.113.7")).await.0, 429);
    assert_eq!(get_once(addr, &from("203.0.113.8")).await.0, 200);
    // A hop that is not an address ends the walk: the client is the
    // trusted hop right of it (here the peer itself), never a shared key.
    assert_eq!(get_once(addr, &from("not-an-ip")).await.0, 200);
    assert_eq!(get_once(addr, &from("not-an-ip")).await.0, 429);
}

#[test]
fn bad_header_name_is_an_error() {
    assert!(matches!(
        KeyBy::header("x api key"),
        Err(polylimit::Error::InvalidArgument(_))
    ));
    assert!(matches!(KeyBy::header(""), Err(polylimit::Error::InvalidArgument(_))));
}

/// The missing-key rule: 400 by default, 401 for a credential, the handler
/// without a check only with MissingKey::Skip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_key_is_refused_unless_skip_is_asked_for() {
    let client = Client::open(redis_url()).unwrap();
    let limiter = |name: &str| {
        client
            .limiter_builder()
            .spec("2/minute")
            .prefix(prefix(name))
            .build()
            .unwrap()
    };
    let app = |layer: RateLimitLayer| Router::new().route("/", get(|| async { "hello" })).layer(layer);
    let tenant = KeyBy::header("X-Tenant").unwrap();
    let by_default = serve(app(RateLimitLayer::new(limiter("mk-default"), tenant.clone()))).await;
    let credential = serve(app(RateLimitLayer::new(
        limiter("mk-credential"),
        KeyBy::header("X-Api-Key").unwrap().credential(),
    )))
    .await;
    let skip = serve(app(
        RateLimitLayer::new(limiter("mk-skip"), tenant).on_missing_key(MissingKey::Skip)
    ))
    .await;
    let (code, head) = get_once(by_default, "").await;
    assert_eq!(code, 400, "{head}");
    assert!(!head.contains("ratelimit"), "{head}");
    assert_eq!(
        get_once(by_default, "X-Tenant: \r\n").await.0,
        400,
        "an empty header is no key"
    );
    assert_eq!(get_once(credential, "").await.0, 401);
    for _ in 0..4 {
        let (code, head) = get_once(skip, "").await;
        assert_eq!(code, 200, "{head}");
        assert!(!head.contains("ratelimit"), "{head}");
    }
    // With a key, the limit applies in every mode.
    for addr in [by_default, skip] {
        let codes: Vec<u16> = [
            get_once(addr, "X-Tenant: t1\r\n").await.0,
            get_once(addr, "X-Tenant: t1\r\n").await.0,
            get_once(addr, "X-Tenant: t1\r\n").await.0,
        ]
        .to_vec();
        assert_eq!(codes, [200, 200, 429]);
    }
}

/// A layer from a policy document: rules by path and method, exempt paths,
/// count_when (only failed logins count), the per-rule metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_from_a_document() {
    let client = Client::open(redis_url()).unwrap();
    let limiter = |name: &str, spec: &str| {
        client
            .limiter_builder()
            .spec(spec)
            .prefix(prefix(name))
            .build()
            .unwrap()
    };
    let layer = RateLimitLayer::from_document(
        r#"{"trusted_proxies": ["127.0.0.0/8"], "exempt": ["/healthz"],
            "rules": [{"name": "login", "paths": ["/login"], "methods": ["POST"], "limiter": 0,
                       "count_when": "failures"},
                      {"name": "default", "limiter": 1}]}"#,
        vec![limiter("doc-login", "2/minute"), limiter("doc-default", "3/minute")],
    )
    .unwrap()
    .peer(|p| p.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()));
    let policy = layer.policy().clone();
    let app = Router::new()
        .route(
            "/login",
            axum::routing::post(|headers: axum::http::HeaderMap| async move {
                if headers.contains_key("x-good") {
                    (axum::http::StatusCode::OK, "welcome")
                } else {
                    (axum::http::StatusCode::UNAUTHORIZED, "no")
                }
            }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/", get(|| async { "hello" }))
        .layer(layer);
    let addr = serve(app).await;
    let xff = "X-Forwarded-For: 198.51.100.20\r\n";
    // Good logins are refunded: any number of them.
    for _ in 0..4 {
        let (code, head, _) = request(addr, "POST", "/login", &format!("{xff}X-Good: 1\r\n")).await;
        assert_eq!(code, 200, "{head}");
    }
    // Failed ones count: 2, then 429.
    assert_eq!(request(addr, "POST", "/login", xff).await.0, 401);
    assert_eq!(request(addr, "POST", "/login", xff).await.0, 401);
    let (code, head, _) = request(addr, "POST", "/login", &format!("{xff}X-Good: 1\r\n")).await;
    assert_eq!(code, 429, "{head}");
    assert!(head.contains("ratelimit-policy: \"login\";q=2;w=60"), "{head}");
    // GET /login is not the login rule's: the default one's.
    let (code, head, _) = request(addr, "GET", "/login", xff).await;
    assert_eq!(code, 405, "{head}");
    assert!(head.contains("ratelimit-policy: \"default\""), "{head}");
    for _ in 0..5 {
        let (code, head, _) = request(addr, "GET", "/healthz", xff).await;
        assert_eq!(code, 200, "{head}");
        assert!(!head.contains("ratelimit"), "{head}");
    }
    let metrics = policy.metrics_prometheus().unwrap();
    assert!(
        metrics.contains("polylimit_http_requests_total{rule=\"login\",outcome=\"denied\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("polylimit_http_requests_total{rule=\"login\",outcome=\"allowed\"} 6"),
        "{metrics}"
    );
    assert!(!metrics.contains("198.51.100.20"), "{metrics}");
}

/// The builder's options become the same kind of document: paths,
/// exemptions, count_when, a key function (the "app" part), a credential.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builder_options_go_through_the_policy() {
    let client = Client::open(redis_url()).unwrap();
    let limiter = client
        .limiter_builder()
        .spec("2/minute")
        .prefix(prefix("builder"))
        .build()
        .unwrap();
    let key = KeyBy::func(|p| p.headers.get("x-account").map(|v| v.as_bytes().to_vec()));
    let layer = RateLimitLayer::new(limiter, key)
        .paths(["/api/*"])
        .unwrap()
        .exempt(["/api/health"])
        .unwrap()
        .count_when(CountWhen::Statuses(vec!["5xx".into()]))
        .unwrap();
    assert!(
        RateLimitLayer::new(Client::open("memory://").unwrap().limiter("1/s").unwrap(), KeyBy::ip())
            .trusted_proxies(["10.0.0.0/33"])
            .is_err_and(|e| e.message().contains("prefix length out of range"))
    );
    let app = Router::new()
        .route("/api/ok", get(|| async { "fine" }))
        .route(
            "/api/boom",
            get(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
        )
        .route("/api/health", get(|| async { "ok" }))
        .route("/other", get(|| async { "other" }))
        .layer(layer);
    let addr = serve(app).await;
    let acct = "X-Account: a1\r\n";
    // 200s are refunded (only 5xx count), 500s count: two, then 429.
    for _ in 0..3 {
        assert_eq!(request(addr, "GET", "/api/ok", acct).await.0, 200);
    }
    assert_eq!(request(addr, "GET", "/api/boom", acct).await.0, 500);
    assert_eq!(request(addr, "GET", "/api/boom", acct).await.0, 500);
    assert_eq!(request(addr, "GET", "/api/ok", acct).await.0, 429);
    // No key: 400 with the contract's body; exempt and unmatched paths go on.
    let (code, _, body) = request(addr, "GET", "/api/ok", "").await;
    assert_eq!((code, body.as_str()), (400, "no rate-limit key in the request\n"));
    assert_eq!(request(addr, "GET", "/api/health", "").await.0, 200);
    assert_eq!(request(addr, "GET", "/other", "").await.0, 200);
}
