//! The live policy (feature `tower`): limits and plans in a TOML document,
//! reload, a refused document, the plan resolver's failures and deadline,
//! and a watched file, through the tower layer in an axum server over real
//! HTTP against a real redis-server.
#![cfg(feature = "tower")]

mod common;

use axum::Router;
use common::{prefix, redis_url};
use polylimit::policy::{Action, Request};
use polylimit::tower::RateLimitLayer;
use polylimit::{Client, LivePolicy, Policy};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Plans free (10/minute) and pro (100/minute); acme is pro, initech free.
fn plans_doc(prefix: &str, free: &str) -> String {
    format!(
        r#"# plans
version = 1
prefix = "{prefix}"
default_plan = "free"

[plans.free]
api = "{free}"
[plans.pro]
api = "100/minute"

[tenants]
acme = "pro"
initech = "free"

[[rules]]
name = "api"
key = "tenant"
limit = "plan"
"#
    )
}

/// Serves a layer over a live policy (tenant: X-Tenant) on a free port.
async fn serve(live: LivePolicy) -> SocketAddr {
    let layer = RateLimitLayer::from_live(live).tenant(|p| {
        p.headers
            .get("x-tenant")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    let router = Router::new().fallback(|| async { "ok\n" }).layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
            .await
            .unwrap();
    });
    addr
}

/// One GET as `tenant`; its status.
async fn get(addr: SocketAddr, tenant: &str) -> u16 {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET /api HTTP/1.1\r\nHost: test\r\nX-Tenant: {tenant}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).await.unwrap();
    resp.split(' ').nth(1).unwrap().parse().unwrap()
}

/// How many of `n` requests as `tenant` were admitted (200; else 429).
async fn admitted(addr: SocketAddr, tenant: &str, n: usize) -> usize {
    let mut ok = 0;
    for _ in 0..n {
        match get(addr, tenant).await {
            200 => ok += 1,
            429 => {}
            other => panic!("{tenant}: status {other}"),
        }
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_reload_and_a_refused_document() {
    let client = Client::open(redis_url()).unwrap();
    let p = prefix("live-plans");
    let live = LivePolicy::new(&client, &plans_doc(&p, "10/minute")).unwrap();
    assert_eq!(live.generation(), 1);
    assert_eq!(live.last_error(), None);
    let addr = serve(live.clone()).await;
    assert_eq!(admitted(addr, "initech", 15).await, 10);
    assert_eq!(admitted(addr, "acme", 105).await, 100);
    // A tenant no one names: the default plan.
    assert_eq!(admitted(addr, "hooli", 12).await, 10);

    // free becomes 20/minute: initech has used 10, so exactly 10 more.
    live.reload(&plans_doc(&p, "20/minute")).unwrap();
    assert_eq!(live.generation(), 2);
    assert_eq!(admitted(addr, "initech", 15).await, 10);
    assert_eq!(admitted(addr, "acme", 3).await, 0);

    // A broken document: refused naming its line, the old policy stays.
    let broken = plans_doc(&p, "5/fortnight");
    let line = broken.lines().position(|l| l.contains("fortnight")).unwrap() + 1;
    let err = live.reload(&broken).unwrap_err();
    assert!(err.to_string().contains(&format!("line {line}")), "{err}");
    assert_eq!(live.generation(), 2);
    assert!(live.last_error().unwrap().contains(&format!("line {line}")));
    let fresh = "fresh-tenant-of-free";
    assert_eq!(admitted(addr, fresh, 25).await, 20, "the old (20/minute) policy stays");

    let m = live.metrics_prometheus().unwrap();
    assert!(m.contains("polylimit_http_policy_reloads_total"), "{m}");
    assert!(m.contains("rule=\"api\""), "{m}");
}

/// Policy::load (not live): the document's own limit, checked on the
/// limiter the step names, blocking.
#[test]
fn a_loaded_policy_checks_on_its_own_limiter() {
    let client = Client::open(redis_url()).unwrap();
    let p = prefix("live-load");
    let policy = Policy::load(
        &client,
        &format!("prefix = \"{p}\"\n[[rules]]\nname = \"all\"\nkey = \"ip\"\nlimit = \"3/minute\"\n"),
        Vec::new(),
    )
    .unwrap();
    let request = Request {
        method: "GET",
        path: b"/",
        peer: Some("192.0.2.7"),
        ..Request::default()
    };
    let mut ok = 0;
    for _ in 0..5 {
        let step = policy.prepare(&request).unwrap();
        assert_eq!(step.action(), Action::Check);
        let limiter = policy.limiter(&step).expect("the document's limiter");
        let d = limiter.check(step.key(), step.cost()).unwrap();
        ok += usize::from(policy.answer(&step, Some(&d)).unwrap().status == 0);
    }
    assert_eq!(ok, 3);
    // Without a client the document's own limits are refused.
    let err = Policy::from_document(
        "[[rules]]\nname = \"all\"\nkey = \"ip\"\nlimit = \"3/minute\"\n",
        Vec::new(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("client"), "{err}");
}

fn resolver_doc(prefix: &str) -> String {
    format!(
        r#"prefix = "{prefix}"
default_plan = "free"

[plans.free]
api = "2/minute"
[plans.pro]
api = "5/minute"

[resolver]
timeout_ms = 100

[[rules]]
name = "api"
key = "tenant"
limit = "plan"
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolver_failures_and_timeouts_give_the_default_plan() {
    let client = Client::open(redis_url()).unwrap();
    let p = prefix("live-resolver");
    // A document with a resolver section and no resolver: refused.
    let err = LivePolicy::new(&client, &resolver_doc(&p)).unwrap_err();
    assert!(err.to_string().contains("resolver"), "{err}");

    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let live = LivePolicy::builder(&client)
        .resolver(move |tenant: String| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move {
                match tenant.as_str() {
                    "good" => Ok("pro".to_string()),
                    "slow" => {
                        tokio::time::sleep(Duration::from_secs(3)).await;
                        Ok("pro".to_string())
                    }
                    "panics" => panic!("the resolver panics"),
                    _ => Err(std::io::Error::other("no such tenant")),
                }
            }
        })
        .document(&resolver_doc(&p))
        .unwrap();
    let addr = serve(live.clone()).await;
    assert_eq!(admitted(addr, "good", 7).await, 5);
    assert_eq!(live.cached_plan("good").as_deref(), Some("pro"));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the cached answer is reused");
    assert_eq!(admitted(addr, "bad", 4).await, 2);
    assert_eq!(admitted(addr, "panics", 4).await, 2);
    assert_eq!(live.cached_plan("bad"), None, "a failure is not cached");

    // Slower than timeout_ms: the default plan, each request answered soon
    // after the deadline, and the runtime free meanwhile.
    let started = Instant::now();
    let slow = tokio::spawn(async move { admitted(addr, "slow", 3).await });
    // While the slow resolver is pending (three requests, ~300 ms), another
    // request is answered: the runtime is not held.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(get(addr, "good").await, 429);
    assert!(!slow.is_finished(), "answered only after the slow requests");
    assert_eq!(slow.await.unwrap(), 2);
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300),
        "3 deadlines of 100 ms: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
    assert_eq!(live.cached_plan("slow"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_file_is_reloaded() {
    let client = Client::open(redis_url()).unwrap();
    let p = prefix("live-file");
    let dir = std::env::temp_dir().join(format!("polylimit-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("policy.toml");
    let write = |doc: &str| {
        // Written whole, then renamed over: the watcher never sees half a file.
        let tmp = dir.join("policy.toml.tmp");
        std::fs::write(&tmp, doc).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    };
    let doc =
        |limit: &str| format!("prefix = \"{p}\"\n[[rules]]\nname = \"all\"\nkey = \"tenant\"\nlimit = \"{limit}\"\n");
    write(&doc("2/minute"));
    let live = LivePolicy::open(&client, &path, Some(Duration::from_millis(50))).unwrap();
    let addr = serve(live.clone()).await;
    assert_eq!(admitted(addr, "t1", 4).await, 2);

    let wait_for = |generation: u64| {
        let live = live.clone();
        async move {
            let start = Instant::now();
            while live.generation() < generation && start.elapsed() < Duration::from_secs(1) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            live.generation()
        }
    };
    write(&doc("5/minute"));
    assert_eq!(wait_for(2).await, 2, "not reloaded within a second");
    assert_eq!(admitted(addr, "t1", 5).await, 3);

    // A broken file: remembered, the policy stays.
    write(&doc("5/fortnight"));
    let start = Instant::now();
    while live.last_error().is_none() && start.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        live.last_error().unwrap_or_default().contains("line 5"),
        "{:?}",
        live.last_error()
    );
    assert_eq!(live.generation(), 2);
    assert!(live.reload_file().is_err());
    assert_eq!(admitted(addr, "t2", 6).await, 5);
    // Fixed by hand, read again at once.
    std::fs::write(&path, doc("6/minute")).unwrap();
    live.reload_file().unwrap();
    assert_eq!(live.generation(), 3);
    assert_eq!(live.last_error(), None);
    drop(live);
    std::fs::remove_dir_all(&dir).unwrap();
}
