//! The tower layer in an axum server over real HTTP (feature `tower`).
#![cfg(feature = "tower")]

mod common;

use axum::{extract::ConnectInfo, routing::get, Router};
use common::{prefix, redis_url};
use polylimit::tower::{client_ip, KeyBy, MissingKey, RateLimitLayer};
use polylimit::Client;
use std::net::{IpAddr, SocketAddr};
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
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET / HTTP/1.1\r\nHost: test\r\n{headers}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).await.unwrap();
    let head = resp.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    (code, head)
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
    let (code, head) = get_once(addr, "X-Api-Key: alice\r\n").await;
    assert_eq!(code, 429, "{head}");
    assert!(
        head.contains("retry-after: ") && head.contains("ratelimit-limit: 3"),
        "{head}"
    );
    // Another key has its own budget; no key is a client error.
    assert_eq!(get_once(addr, "X-Api-Key: bob\r\n").await.0, 200);
    assert_eq!(get_once(addr, "").await.0, 400);
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
    // A trusted proxy that sends garbage gets no key: 400, not a shared budget.
    assert_eq!(get_once(addr, &from("not-an-ip")).await.0, 400);
}

#[test]
fn bad_header_name_is_an_error() {
    assert!(matches!(
        KeyBy::header("x api key"),
        Err(polylimit::Error::InvalidArgument(_))
    ));
    assert!(matches!(KeyBy::header(""), Err(polylimit::Error::InvalidArgument(_))));
}

#[test]
fn client_ip_walks_from_the_right() {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    let trusted = [ip("10.0.0.1"), ip("10.0.0.2")];
    let hv = |s: &'static str| http::HeaderValue::from_static(s);
    // An untrusted peer is the client, whatever it forwards.
    assert_eq!(
        client_ip(ip("192.0.2.1"), [hv("1.2.3.4")].iter(), &trusted),
        Some(ip("192.0.2.1"))
    );
    assert_eq!(
        client_ip(ip("10.0.0.1"), [hv("1.2.3.4, 5.6.7.8, 10.0.0.2")].iter(), &trusted),
        Some(ip("5.6.7.8"))
    );
    assert_eq!(
        client_ip(ip("10.0.0.1"), [hv("1.2.3.4"), hv("5.6.7.8")].iter(), &trusted),
        Some(ip("5.6.7.8"))
    );
    assert_eq!(client_ip(ip("10.0.0.1"), [hv("10.0.0.2")].iter(), &trusted), None);
    assert_eq!(client_ip(ip("10.0.0.1"), std::iter::empty(), &trusted), None);
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
