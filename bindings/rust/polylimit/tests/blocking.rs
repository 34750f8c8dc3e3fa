//! The blocking API against a real redis-server (and memory://).

mod common;

use common::{prefix, redis_url};
use polylimit::{Algorithm, Client, Error, FailurePolicy};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn assert_send_sync<T: Send + Sync + Clone>() {}

#[test]
fn handles_are_send_sync_clone() {
    assert_send_sync::<Client>();
    assert_send_sync::<polylimit::Limiter>();
    assert_send_sync::<polylimit::Decision>();
    fn is_error<E: std::error::Error + Send + Sync + 'static>() {}
    is_error::<Error>();
}

#[test]
fn decisions() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("5/minute")
        .prefix(prefix("decisions"))
        .build()
        .unwrap();
    for left in (0..5).rev() {
        let d = l.check("alice", 1).unwrap();
        assert!(d.allowed, "{d:?}");
        assert_eq!((d.limit, d.remaining, d.granted, d.retry_after_ms), (5, left, 1, 0));
    }
    let d = l.check(b"alice", 1).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.granted, 0);
    assert!(d.retry_after_ms > 0 && d.retry_after_ms <= 60_000, "{d:?}");
    assert!(d.retry_after() > Duration::ZERO);

    // Another key is independent; keys are bytes, NUL included.
    assert!(l.check(b"al\0ice".as_slice(), 5).unwrap().allowed);
    assert!(!l.check(String::from("al\0ice"), 1).unwrap().allowed);

    // peek consumes nothing.
    let p = l.peek("bob").unwrap();
    assert_eq!((p.allowed, p.remaining), (true, 5));
    assert_eq!(l.peek("bob").unwrap().remaining, 5);

    // refund gives units back; reset restores full capacity.
    l.check("bob", 3).unwrap();
    assert_eq!(l.refund("bob", 2).unwrap().remaining, 4);
    l.reset("alice").unwrap();
    assert_eq!(l.check("alice", 5).unwrap().remaining, 0);

    // check_at_most grants what fits.
    l.check("carol", 3).unwrap();
    let d = l.check_at_most("carol", 5).unwrap();
    assert!(d.allowed);
    assert_eq!(d.granted, 2);

    // acquire with no time to wait answers at once.
    let d = l.acquire("carol", 1, Duration::ZERO).unwrap();
    assert!(!d.allowed);

    // check_many decides each key on its own.
    let r = l.check_many(&["dave", "alice", "erin"], 1).unwrap();
    assert_eq!(r.len(), 3);
    assert!(r[0].as_ref().unwrap().allowed);
    assert!(!r[1].as_ref().unwrap().allowed);
    assert_eq!(r[2].as_ref().unwrap().remaining, 4);
    let r = l.check_many(&["frank", ""], 1).unwrap();
    assert!(r[0].as_ref().unwrap().allowed);
    assert!(matches!(r[1], Err(Error::InvalidArgument(_))), "{:?}", r[1]);
    assert!(l.check_many::<&str>(&[], 1).unwrap().is_empty());
}

#[test]
fn headers() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("2/minute")
        .prefix(prefix("headers"))
        .build()
        .unwrap();
    let h = l.check("k", 2).unwrap().headers().unwrap();
    let get = |h: &[(String, String)], name: &str| h.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(get(&h, "RateLimit-Limit").as_deref(), Some("2"));
    assert_eq!(get(&h, "RateLimit-Remaining").as_deref(), Some("0"));
    assert_eq!(get(&h, "Retry-After"), None);
    let h = l.check("k", 1).unwrap().headers().unwrap();
    let retry: u64 = get(&h, "Retry-After")
        .expect("Retry-After on a denial")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry));
    assert!(get(&h, "RateLimit-Policy").unwrap().contains("q=2"));
}

#[test]
fn options_reach_the_core() {
    let client = Client::open(redis_url()).unwrap();
    // GCRA with a burst: 3 at once.
    let l = client
        .limiter_builder()
        .limit(10, Duration::from_secs(60))
        .burst(3)
        .algorithm(Algorithm::Gcra)
        .prefix(prefix("gcra"))
        .build()
        .unwrap();
    assert!(l.check("k", 3).unwrap().allowed);
    assert!(!l.check("k", 1).unwrap().allowed);
    // Shadow mode admits a would-be denial and says so.
    let l = client
        .limiter_builder()
        .spec("1/minute")
        .shadow(true)
        .prefix(prefix("shadow"))
        .build()
        .unwrap();
    l.check("k", 1).unwrap();
    let d = l.check("k", 1).unwrap();
    assert!(d.allowed && d.shadowed, "{d:?}");
    // The deny cache answers a repeated denial locally.
    let l = client
        .limiter_builder()
        .spec("1/minute")
        .deny_cache(100)
        .prefix(prefix("cache"))
        .build()
        .unwrap();
    l.check("k", 1).unwrap();
    assert!(!l.check("k", 1).unwrap().cached);
    let d = l.check("k", 1).unwrap();
    assert!(!d.allowed && d.cached, "{d:?}");
    // A punitive block outlasts the window.
    let l = client
        .limiter_builder()
        .limit(1, Duration::from_millis(200))
        .block(Duration::from_secs(30))
        .prefix(prefix("block"))
        .build()
        .unwrap();
    l.check("k", 1).unwrap();
    let d = l.check("k", 1).unwrap();
    assert!(!d.allowed && d.retry_after_ms > 1000, "{d:?}");
    // Options out of range are refused before any I/O.
    let bad = client
        .limiter_builder()
        .spec("1/s")
        .block(Duration::from_secs(400 * 86400))
        .build();
    assert!(matches!(bad, Err(Error::InvalidArgument(_))), "{bad:?}");
    let bad = client.limiter_builder().limit(0, Duration::from_secs(1)).build();
    assert!(matches!(bad, Err(Error::InvalidArgument(_))), "{bad:?}");
    let bad = client.limiter_builder().spec("5/s").burst(1).build();
    let _ = bad; // a spec ignores burst (it says `burst N` itself): no assertion on it
    assert_eq!(Algorithm::from_name("gcra"), Some(Algorithm::Gcra));
    assert_eq!(FailurePolicy::Open.name(), "open");
}

/// Leases: one round trip takes 10 units; dropping the limiter gives back
/// what was not used.
#[test]
fn lease_takes_a_block_and_gives_back_the_rest() {
    let client = Client::open(redis_url()).unwrap();
    let p = prefix("lease");
    let watch = client.limiter_builder().spec("100/minute").prefix(&p).build().unwrap();
    let leased = common::leased(&client, &p);
    for i in 0..3 {
        let d = leased.check("k", 1).unwrap();
        assert!(d.allowed && d.granted == 1, "check {i}: {d:?}");
    }
    assert_eq!(watch.peek("k").unwrap().remaining, 90); // one round trip took 10
    drop(leased); // the 7 units it did not use go back
    assert_eq!(watch.peek("k").unwrap().remaining, 97);
    let st = client.stats().unwrap();
    assert_eq!(
        (st.leased_units(), st.refunded_units(), st.stranded_units()),
        (10, 7, 0)
    );

    let refused = |b: polylimit::LimiterBuilder, want: &str| match b.build() {
        Err(e @ Error::InvalidArgument(_)) => assert!(e.to_string().contains(want), "{e} lacks {want:?}"),
        other => panic!("{want}: {other:?}"),
    };
    let second = Duration::from_secs(1);
    refused(
        client.limiter_builder().spec("10/s").lease(11, second),
        "lease_units = 11 exceeds limit = 10",
    );
    refused(
        client.limiter_builder().spec("10/s").lease(1, Duration::ZERO),
        "lease_ms = 0 is out of range 1..",
    );
    refused(
        client.limiter_builder().spec("10/s").lease(1, Duration::from_secs(2)),
        "lease_ms = 2000 exceeds",
    );
    refused(
        client.limiter_builder().spec("10/s").lease(1, second).block(second),
        "block_ms cannot be combined with lease_units",
    );
}

#[test]
fn bad_input_is_an_error_never_a_panic() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("10/minute")
        .prefix(prefix("bad"))
        .build()
        .unwrap();
    for cost in [0, -1, i64::MIN, 11, i64::MAX] {
        let r = l.check("k", cost);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "cost {cost}: {r:?}");
        assert!(!r.unwrap_err().is_retryable());
    }
    let r = l.check("", 1);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let big = vec![b'x'; (polylimit::bounds::MAX_KEY_LEN + 1) as usize];
    let r = l.check(&big, 1);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let max = vec![b'x'; polylimit::bounds::MAX_KEY_LEN as usize];
    assert!(l.check(&max, 1).unwrap().allowed);
    assert!(matches!(l.refund("k", 0), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        l.acquire("k", 1, Duration::from_secs(u64::MAX)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(l.check_at("k", 1, 0), Err(Error::InvalidArgument(_))));

    for spec in ["", "nonsense", "0/s", "5/s\0", "10/s burst 20"] {
        let r = client.limiter(spec);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "spec {spec:?}: {r:?}");
    }
    assert!(matches!(
        client.limiter_builder().spec("1/s").prefix("").build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        client.limiter_builder().spec("1/s").prefix("a\0b").build(),
        Err(Error::InvalidArgument(_))
    ));

    for url in ["", "nope://x", "redis://", "redis://host:99999", "redis://h\0st"] {
        let r = Client::open(url);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "url {url:?}: {r:?}");
    }
    let r = Client::builder().pool_size(100_000).open(redis_url());
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
}

/// The C ABI reads 0 as "the default" for these options: one set to 0 is
/// refused, naming it, never turned silently into the default.
#[test]
fn an_option_set_to_zero_is_refused_not_defaulted() {
    let refused = |r: Result<Client, Error>, want: &str| match r {
        Err(e @ Error::InvalidArgument(_)) => assert!(e.to_string().contains(want), "{e} lacks {want:?}"),
        other => panic!("{want}: {other:?}"),
    };
    let zero = Duration::ZERO;
    let b = Client::builder;
    for (builder, want) in [
        (b().pool_size(0), "pool_size = 0 is out of range 1..4096"),
        (b().connect_timeout(zero), "connect_timeout_ms = 0 is out of range 1.."),
        (b().command_timeout(zero), "command_timeout_ms = 0 is out of range 1.."),
        (b().acquire_timeout(zero), "acquire_timeout_ms = 0 cannot be given"),
        (b().idle_check(zero), "idle_check_ms = 0 cannot be given"),
        (b().keepalive(Some(zero)), "keepalive(None) turns keepalive off"),
    ] {
        refused(builder.open("memory://"), want);
    }
    // Below the unit, a value rounds up rather than to 0.
    let client = Client::builder()
        .command_timeout(Duration::from_micros(1500))
        .keepalive(Some(Duration::from_millis(1)))
        .acquire_timeout(Duration::from_nanos(1))
        .open("memory://")
        .unwrap();
    let built = |b: polylimit::LimiterBuilder| b.build().map(|_| ()).map_err(|e| e.to_string());
    let r = built(client.limiter_builder().spec("1/s").breaker(3, zero));
    assert!(
        r.as_ref()
            .is_err_and(|e| e.contains("breaker_cooldown_ms = 0 is out of range 1..")),
        "{r:?}"
    );
    let r = built(client.limiter_builder().spec("1/s").durable(1, zero));
    assert!(
        r.as_ref()
            .is_err_and(|e| e.contains("durable_timeout_ms = 0 is out of range 1..")),
        "{r:?}"
    );
    assert_eq!(
        built(
            client
                .limiter_builder()
                .spec("1/s")
                .breaker(3, Duration::from_millis(5))
        ),
        Ok(())
    );
}

#[test]
fn secrets_stay_out_of_messages() {
    let secret = "hunter2-do-not-print";
    let r = Client::builder().open(&format!("redis://user:{secret}@127.0.0.1:99999"));
    let e = r.unwrap_err();
    assert!(!e.to_string().contains(secret), "{e}");
    assert!(!format!("{e:?}").contains(secret), "{e:?}");
    let red = polylimit::redact_url(&format!("redis://user:{secret}@h:1"));
    assert!(!red.contains(secret) && red.contains("***"), "{red}");
}

/// An API key in a request never reaches Redis (its key holds the
/// SHA-256), a Step's Debug form, a metric or an error message.
#[test]
fn api_keys_stay_out_of_redis_and_messages() {
    let secret = "sk-live-do-not-store-4242";
    let client = Client::open(redis_url()).unwrap();
    let limiter = client
        .limiter_builder()
        .spec("2/minute")
        .prefix(prefix("secret-apikey"))
        .build()
        .unwrap();
    let policy = polylimit::Policy::from_document(
        r#"{"rules": [{"name": "api", "limiter": 0, "key": ["api_key", "header:Authorization"]}]}"#,
        vec![limiter.clone()],
    )
    .unwrap();
    let mut errors = Vec::new();
    for header in ["x-api-key", "authorization"] {
        let values = policy.header_values(|n| (n == header).then(|| secret.as_bytes().to_vec()));
        let headers: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
        let req = polylimit::policy::Request {
            method: "GET",
            path: b"/api",
            peer: Some("192.0.2.1"),
            headers: &headers,
            ..Default::default()
        };
        let step = policy.prepare(&req).unwrap();
        assert!(!format!("{step:?}").contains(secret), "{step:?}");
        for _ in 0..3 {
            let d = limiter.check(step.key(), step.cost()).unwrap();
            let a = policy.answer(&step, Some(&d)).unwrap();
            assert!(!format!("{a:?}").contains(secret), "{a:?}");
        }
        // A check that fails: its error does not name the key's secret either.
        errors.push(limiter.check(step.key(), 0).unwrap_err().to_string());
    }
    // A document that lists the key itself, refused for another reason.
    let doc = format!(r#"{{"deny": {{"api_keys": ["{secret}"]}}, "rules": [{{"name": "a", "limiter": 9}}]}}"#);
    errors.push(
        polylimit::Policy::from_document(&doc, vec![limiter.clone()])
            .unwrap_err()
            .to_string(),
    );
    for e in &errors {
        assert!(!e.contains(secret), "{e}");
    }
    assert!(!policy.metrics_prometheus().unwrap().contains(secret));
    let keys = common::redis_keys(redis_url());
    let ours: Vec<_> = keys.iter().filter(|k| k.contains(&prefix("secret-apikey"))).collect();
    assert!(ours.iter().any(|k| k.contains("apikey:")), "{keys:?}");
    assert!(ours.iter().any(|k| k.contains("header:authorization:")), "{keys:?}");
    assert!(keys.iter().all(|k| !k.contains(secret)), "{keys:?}");
}

#[test]
fn closed_client() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("10/minute")
        .prefix(prefix("closed"))
        .build()
        .unwrap();
    assert!(l.check("k", 1).unwrap().allowed);
    let other = client.clone();
    other.close();
    other.close(); // idempotent
    let r = l.check("k", 1);
    assert!(matches!(r, Err(Error::Closed(_))), "{r:?}");
    assert!(matches!(l.peek("k"), Err(Error::Closed(_))));
    assert!(matches!(l.reset("k"), Err(Error::Closed(_))));
    assert!(matches!(client.limiter("1/s"), Err(Error::Closed(_))));
    assert!(matches!(client.stats(), Err(Error::Closed(_))));
    let r = l.check_many(&["a", "b"], 1);
    match r {
        Ok(v) => assert!(v.iter().all(|r| matches!(r, Err(Error::Closed(_)))), "{v:?}"),
        Err(e) => assert!(matches!(e, Error::Closed(_)), "{e:?}"),
    }
    drop(client);
    drop(l); // freeing the limiter after its client is fine
}

#[test]
fn unavailable_is_retryable() {
    // Port 1 on loopback: nothing listens there, the connect is refused.
    let client = Client::builder()
        .connect_timeout(Duration::from_millis(200))
        .open("redis://127.0.0.1:1")
        .unwrap();
    let l = client.limiter("10/s").unwrap();
    let e = l.check("k", 1).unwrap_err();
    assert!(e.is_retryable() && e.is_outage(), "{e:?}");
    assert!(matches!(e, Error::Unavailable(_) | Error::Timeout(_)), "{e:?}");
    // With fail-open the same outage is a degraded admission.
    let l = client
        .limiter_builder()
        .spec("10/s")
        .failure_policy(FailurePolicy::Open)
        .build()
        .unwrap();
    let d = l.check("k", 1).unwrap();
    assert!(d.allowed && d.degraded, "{d:?}");
}

#[test]
fn threads_admit_exactly_the_limit() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("1000/hour")
        .prefix(prefix("threads"))
        .build()
        .unwrap();
    let admitted = Arc::new(AtomicI64::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (l, admitted) = (l.clone(), admitted.clone());
            std::thread::spawn(move || {
                for _ in 0..200 {
                    if l.check("hot", 1).unwrap().allowed {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(admitted.load(Ordering::Relaxed), 1000);
    assert_eq!(l.peek("hot").unwrap().remaining, 0);
    let s = client.stats().unwrap();
    assert!(s.checks() >= 1600 && s.admitted() >= 1000 && s.denied() >= 600, "{s:?}");
}

#[test]
fn memory_and_redis_decide_alike() {
    let run = |url: &str| {
        let client = Client::open(url).unwrap();
        let l = client
            .limiter_builder()
            .spec("7/minute; 20/hour")
            .prefix(prefix("parity"))
            .build()
            .unwrap();
        let mut out = Vec::new();
        for cost in [1, 3, 2, 2, 1, 4, 1] {
            let d = l.check("k", cost).unwrap();
            out.push((d.allowed, d.limit, d.remaining, d.granted));
        }
        l.refund("k", 2).unwrap();
        let d = l.check_at_most("k", 5).unwrap();
        out.push((d.allowed, d.limit, d.remaining, d.granted));
        out
    };
    let mem = run("memory://");
    assert_eq!(mem, run(redis_url()));
    assert_eq!(mem[3], (false, 7, 1, 0)); // 1+3+2 taken, 2 more do not fit
}
