//! Every `_async` operation against its blocking form (feature `tokio`), on
//! real redis-servers: the same decisions and errors on the same key state,
//! exact totals under 64 tasks, waiting acquires that block no runtime
//! thread, dropped futures, and a closed (or closing) client.
#![cfg(feature = "tokio")]

mod common;

use common::{prefix, redis_url};
use polylimit::{Client, Decision, Error, Limiter};
use std::time::{Duration, Instant};

fn limiter(client: &Client, spec: &str, test: &str) -> Limiter {
    client
        .limiter_builder()
        .spec(spec)
        .prefix(prefix(test))
        .build()
        .unwrap()
}

/// One step's answers: the blocking form's, then the async one's.
type Twins = (Result<Decision, Error>, Result<Decision, Error>);

/// The same answer: equal errors, or decisions equal in everything but the
/// time fields, which may differ by the time between the two calls.
fn same(what: &str, blocking: &Result<Decision, Error>, asynchronous: &Result<Decision, Error>) {
    match (blocking, asynchronous) {
        (Ok(b), Ok(a)) => {
            let key = |d: &Decision| {
                (
                    d.allowed,
                    d.cached,
                    d.degraded,
                    d.shadowed,
                    d.limit,
                    d.remaining,
                    d.granted,
                )
            };
            assert_eq!(key(b), key(a), "{what}: blocking {b:?}, async {a:?}");
            for (x, y) in [
                (b.retry_after_ms, a.retry_after_ms),
                (b.reset_after_ms, a.reset_after_ms),
            ] {
                assert!((x - y).abs() <= 1000, "{what}: blocking {b:?}, async {a:?}");
            }
        }
        (Err(b), Err(a)) => assert_eq!(b, a, "{what}"),
        _ => panic!("{what}: blocking {blocking:?}, async {asynchronous:?}"),
    }
}

fn same_many(
    what: &str,
    blocking: &Result<Vec<Result<Decision, Error>>, Error>,
    asynchronous: &Result<Vec<Result<Decision, Error>>, Error>,
) {
    match (blocking, asynchronous) {
        (Ok(b), Ok(a)) => {
            assert_eq!(b.len(), a.len(), "{what}: blocking {b:?}, async {a:?}");
            for (i, (x, y)) in b.iter().zip(a).enumerate() {
                same(&format!("{what}[{i}]"), x, y);
            }
        }
        (Err(b), Err(a)) => assert_eq!(b, a, "{what}"),
        _ => panic!("{what}: blocking {blocking:?}, async {asynchronous:?}"),
    }
}

/// Runs the same history on two keys, one through the blocking calls (on a
/// blocking thread) and one through the `_async` ones, step by step, and
/// compares every answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_async_op_answers_as_its_blocking_form() {
    let client = Client::open(redis_url()).unwrap();
    let l = limiter(&client, "10/hour", "twins");
    let (b, a) = ("blocking", "async");
    macro_rules! step {
        ($what:literal, |$lim:ident, $key:ident| $blocking:expr, $asynchronous:expr) => {{
            let lb = l.clone();
            let rb = tokio::task::spawn_blocking(move || {
                let ($lim, $key) = (&lb, b);
                $blocking
            })
            .await
            .unwrap();
            let ($lim, $key) = (&l, a);
            let ra = $asynchronous.await;
            (rb, ra)
        }};
    }
    let cases: Vec<(&str, Twins)> = vec![
        ("check 3", step!("check", |l, k| l.check(k, 3), l.check_async(k, 3))),
        ("peek", step!("peek", |l, k| l.peek(k), l.peek_async(k))),
        (
            "check_at_most 5",
            step!("cam", |l, k| l.check_at_most(k, 5), l.check_at_most_async(k, 5)),
        ),
        (
            "check_at_most 5 (2 left)",
            step!("cam", |l, k| l.check_at_most(k, 5), l.check_at_most_async(k, 5)),
        ),
        (
            "check_at_most 5 (none left)",
            step!("cam", |l, k| l.check_at_most(k, 5), l.check_at_most_async(k, 5)),
        ),
        (
            "check 1 denied",
            step!("check", |l, k| l.check(k, 1), l.check_async(k, 1)),
        ),
        ("refund 4", step!("refund", |l, k| l.refund(k, 4), l.refund_async(k, 4))),
        (
            "check_limit 2 of 100/hour",
            step!(
                "check_limit",
                |l, k| l.check_limit(k, 2, 100, Duration::from_secs(3600)),
                l.check_limit_async(k, 2, 100, Duration::from_secs(3600))
            ),
        ),
        (
            "check_limit 5 of 3/minute",
            step!(
                "check_limit",
                |l, k| l.check_limit(k, 5, 3, Duration::from_secs(60)),
                l.check_limit_async(k, 5, 3, Duration::from_secs(60))
            ),
        ),
        (
            "acquire 1 (admitted)",
            step!(
                "acquire",
                |l, k| l.acquire(k, 1, Duration::from_millis(200)),
                l.acquire_async(k, 1, Duration::from_millis(200))
            ),
        ),
        (
            "acquire 8 (would come after the timeout)",
            step!(
                "acquire",
                |l, k| l.acquire(k, 8, Duration::from_millis(200)),
                l.acquire_async(k, 8, Duration::from_millis(200))
            ),
        ),
        ("peek after", step!("peek", |l, k| l.peek(k), l.peek_async(k))),
        // Argument errors: the same variant and message.
        ("check cost 0", step!("e", |l, k| l.check(k, 0), l.check_async(k, 0))),
        ("check cost 11", step!("e", |l, k| l.check(k, 11), l.check_async(k, 11))),
        ("peek empty key", step!("e", |l, _k| l.peek(""), l.peek_async(""))),
        (
            "check_at_most 0",
            step!("e", |l, k| l.check_at_most(k, 0), l.check_at_most_async(k, 0)),
        ),
        ("refund 0", step!("e", |l, k| l.refund(k, 0), l.refund_async(k, 0))),
        (
            "check_limit limit 0",
            step!(
                "e",
                |l, k| l.check_limit(k, 1, 0, Duration::from_secs(1)),
                l.check_limit_async(k, 1, 0, Duration::from_secs(1))
            ),
        ),
        (
            "check_limit window 0",
            step!(
                "e",
                |l, k| l.check_limit(k, 1, 5, Duration::ZERO),
                l.check_limit_async(k, 1, 5, Duration::ZERO)
            ),
        ),
        (
            "acquire timeout too long",
            step!(
                "e",
                |l, k| l.acquire(k, 1, Duration::from_secs(100_000_000)),
                l.acquire_async(k, 1, Duration::from_secs(100_000_000))
            ),
        ),
    ];
    for (what, (rb, ra)) in &cases {
        same(what, rb, ra);
    }
    // The history above did what it says (not just the same on both sides).
    let remaining: Vec<i64> = cases[..7]
        .iter()
        .map(|(_, (r, _))| r.as_ref().unwrap().remaining)
        .collect();
    assert_eq!(remaining, [7, 7, 2, 0, 0, 0, 4]);
    let granted: Vec<i64> = cases[2..5]
        .iter()
        .map(|(_, (r, _))| r.as_ref().unwrap().granted)
        .collect();
    assert_eq!(granted, [5, 2, 0]);
    assert!(cases[12..]
        .iter()
        .all(|(_, (r, _))| matches!(r, Err(Error::InvalidArgument(_)))));

    // reset: both keys back to full capacity.
    let lb = l.clone();
    tokio::task::spawn_blocking(move || lb.reset(b)).await.unwrap().unwrap();
    l.reset_async(a).await.unwrap();
    assert_eq!(l.peek(b).unwrap().remaining, 10);
    assert_eq!(l.peek_async(a).await.unwrap().remaining, 10);
    assert_eq!(l.reset("").unwrap_err(), l.reset_async("").await.unwrap_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_many_async_answers_as_check_many() {
    let client = Client::open(redis_url()).unwrap();
    let l = limiter(&client, "3/hour", "many_twins");
    let many = |side: &str, names: &[&str]| names.iter().map(|n| format!("{side}:{n}")).collect::<Vec<_>>();
    let run = |names: Vec<&'static str>, cost: i64| {
        let l = l.clone();
        async move {
            let kb = many("b", &names);
            let ka = many("a", &names);
            let lb = l.clone();
            let rb = tokio::task::spawn_blocking(move || lb.check_many(&kb, cost))
                .await
                .unwrap();
            let ra = l.check_many_async(&ka, cost).await;
            (rb, ra)
        }
    };
    // Per-key decisions, a key decided twice in one batch, per-key errors.
    let (rb, ra) = run(vec!["x", "y", "x", "z"], 2).await;
    same_many("check_many cost 2", &rb, &ra);
    let allowed: Vec<bool> = ra
        .as_ref()
        .unwrap()
        .iter()
        .map(|r| r.as_ref().unwrap().allowed)
        .collect();
    assert_eq!(allowed, [true, true, false, true]);
    let (rb, ra) = run(vec!["x", "y", "w"], 1).await;
    same_many("check_many cost 1", &rb, &ra);
    let remaining: Vec<i64> = ra
        .as_ref()
        .unwrap()
        .iter()
        .map(|r| r.as_ref().unwrap().remaining)
        .collect();
    assert_eq!(remaining, [0, 0, 2]);
    // An empty key fails alone.
    let mut keys_b = many("b", &["v"]);
    keys_b.push(String::new());
    let mut keys_a = many("a", &["v"]);
    keys_a.push(String::new());
    let rb = l.check_many(&keys_b, 1);
    let ra = l.check_many_async(&keys_a, 1).await;
    same_many("check_many with an empty key", &rb, &ra);
    assert!(matches!(&ra.as_ref().unwrap()[1], Err(Error::InvalidArgument(_))));
    // A whole batch refused (a bad cost): every key gets the error.
    let (rb, ra) = run(vec!["x", "y"], 0).await;
    same_many("check_many cost 0", &rb, &ra);
    let (rb, ra) = run(vec!["x"], 4).await;
    same_many("check_many cost over the limit", &rb, &ra);
    // No keys; too many keys (the outer error).
    let none: [&str; 0] = [];
    same_many("no keys", &l.check_many(&none, 1), &l.check_many_async(&none, 1).await);
    assert!(l.check_many_async(&none, 1).await.unwrap().is_empty());
    let too_many = vec!["k"; polylimit::bounds::MAX_BATCH as usize + 1];
    let ra = l.check_many_async(&too_many, 1).await;
    same_many("too many keys", &l.check_many(&too_many, 1), &ra);
    assert!(matches!(ra, Err(Error::InvalidArgument(_))), "{ra:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_check_many_async_exact_totals() {
    let client = Client::open(redis_url()).unwrap();
    let l = limiter(&client, "300/hour", "many_tasks");
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let l = l.clone();
            tokio::spawn(async move {
                let mut admitted = [0i64; 4];
                for _ in 0..8 {
                    let r = l.check_many_async(&["k0", "k1", "k2", "k3"], 1).await.unwrap();
                    for (n, d) in admitted.iter_mut().zip(r) {
                        *n += d.unwrap().granted;
                    }
                }
                admitted
            })
        })
        .collect();
    let mut total = [0i64; 4];
    for t in tasks {
        for (s, n) in total.iter_mut().zip(t.await.unwrap()) {
            *s += n;
        }
    }
    assert_eq!(total, [300; 4]); // 512 tries per key
    for k in ["k0", "k1", "k2", "k3"] {
        assert_eq!(l.peek_async(k).await.unwrap().remaining, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_acquire_async_exact_totals() {
    let client = Client::open(redis_url()).unwrap();
    // Admissions would come much later than the timeout: denials return early.
    let l = limiter(&client, "200/hour", "acquire_tasks");
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let l = l.clone();
            tokio::spawn(async move {
                let mut admitted = 0;
                for _ in 0..4 {
                    if l.acquire_async("hot", 1, Duration::from_millis(100))
                        .await
                        .unwrap()
                        .allowed
                    {
                        admitted += 1;
                    }
                }
                admitted
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 200); // 256 tries
    assert_eq!(l.peek("hot").unwrap().remaining, 0);

    // Waiting acquires: 64 tasks on 4 workers, half of them admitted only
    // after the window has slid, every one within its timeout.
    let l = limiter(&client, "32/s", "acquire_wait");
    let start = Instant::now();
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let l = l.clone();
            tokio::spawn(async move { l.acquire_async("hot", 1, Duration::from_secs(5)).await.unwrap() })
        })
        .collect();
    let mut admitted = 0;
    for t in tasks {
        let d = t.await.unwrap();
        assert!(d.allowed, "{d:?}");
        admitted += d.granted;
    }
    assert_eq!(admitted, 64);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "{took:?}: the second half did not wait"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// Counts timer ticks on a one-thread runtime while acquire_async waits.
#[tokio::test(flavor = "current_thread")]
async fn runtime_ticks_while_acquire_async_waits() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .limit(1, Duration::from_secs(1))
        .prefix(prefix("acquire_ticks"))
        .build()
        .unwrap();
    assert!(l.check_async("k", 1).await.unwrap().allowed);
    let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let t = ticks.clone();
    let ticker = tokio::spawn(async move {
        let mut iv = tokio::time::interval(Duration::from_millis(10));
        loop {
            iv.tick().await;
            t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let d = l.acquire_async("k", 1, Duration::from_secs(3)).await.unwrap();
    ticker.abort();
    assert!(d.allowed, "{d:?}");
    let n = ticks.load(std::sync::atomic::Ordering::Relaxed);
    // The acquire waited about a second: ~100 ticks; a blocked thread, ~1.
    assert!(n >= 30, "{n} ticks while acquire_async waited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_futures_of_every_op() {
    let client = Client::open(redis_url()).unwrap();
    let l = limiter(&client, "1000/minute", "drop_ops");
    let keys: Vec<String> = (0..50).map(|i| format!("k{i}")).collect();
    // Dropped after their first poll: submitted, then abandoned. Whatever
    // the library still writes (check_many's arrays) is not the future's.
    for _ in 0..20 {
        let tiny = Duration::from_micros(1);
        let _ = tokio::time::timeout(tiny, Box::pin(l.check_many_async(&keys, 1))).await;
        let _ = tokio::time::timeout(tiny, Box::pin(l.check_at_most_async("k", 2))).await;
        let _ = tokio::time::timeout(tiny, Box::pin(l.acquire_async("k", 1, Duration::from_secs(1)))).await;
        let _ = tokio::time::timeout(tiny, Box::pin(l.peek_async("k"))).await;
        let _ = tokio::time::timeout(tiny, Box::pin(l.refund_async("k", 1))).await;
        let _ = tokio::time::timeout(
            tiny,
            Box::pin(l.check_limit_async("j", 1, 5000, Duration::from_secs(60))),
        )
        .await;
        let _ = tokio::time::timeout(tiny, Box::pin(l.reset_async("j"))).await;
    }
    // Later calls complete, and the batches that ran consumed at most once each.
    let r = l.check_many_async(&keys, 1).await.unwrap();
    for d in r {
        let d = d.unwrap();
        assert!(d.allowed && (979..=999).contains(&d.remaining), "{d:?}");
    }
    // A limiter and a client dropped with batches in flight.
    let l2 = limiter(&client, "10/minute", "drop_ops2");
    let f = tokio::spawn({
        let l2 = l2.clone();
        async move { l2.check_many_async(&["a", "b"], 1).await }
    });
    drop(l2);
    drop(l);
    drop(client);
    let r = f.await.unwrap().unwrap();
    assert!(r.iter().all(|d| d.as_ref().unwrap().allowed), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_client_fails_every_op() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .limit(5, Duration::from_secs(20))
        .prefix(prefix("closed_ops"))
        .build()
        .unwrap();
    // Acquires waiting on the client's timer thread when it closes.
    assert!(l.check_async("full", 5).await.unwrap().allowed);
    let waiting: Vec<_> = (0..4)
        .map(|_| {
            let l = l.clone();
            tokio::spawn(async move { l.acquire_async("full", 1, Duration::from_secs(30)).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = Instant::now();
    client.close();
    for w in waiting {
        let r = w.await.unwrap();
        assert!(matches!(r, Err(Error::Closed(_))), "{r:?}");
    }
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());

    let closed = |what: &str, r: Result<Decision, Error>| assert!(matches!(r, Err(Error::Closed(_))), "{what}: {r:?}");
    closed("check_async", l.check_async("k", 1).await);
    closed("peek_async", l.peek_async("k").await);
    closed("check_at_most_async", l.check_at_most_async("k", 2).await);
    closed(
        "check_limit_async",
        l.check_limit_async("k", 1, 5, Duration::from_secs(1)).await,
    );
    closed("refund_async", l.refund_async("k", 1).await);
    closed("acquire_async", l.acquire_async("k", 1, Duration::from_secs(1)).await);
    let r = l.reset_async("k").await;
    assert!(matches!(r, Err(Error::Closed(_))), "reset_async: {r:?}");
    // The blocking forms fail the same way.
    assert!(matches!(l.check("k", 1), Err(Error::Closed(_))));
    assert!(matches!(l.reset("k"), Err(Error::Closed(_))));
    // check_many_async answers exactly as check_many does on a closed client.
    let ra = l.check_many_async(&["a", "b"], 1).await;
    same_many("check_many closed", &l.check_many(&["a", "b"], 1), &ra);
    let errs = ra.unwrap();
    assert!(errs.iter().all(|r| matches!(r, Err(Error::Closed(_)))), "{errs:?}");
}

/// While another thread closes the client (and waits for a blocking acquire
/// in flight), the `_async` calls fail at once instead of waiting for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_client_fails_at_once() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .limit(1, Duration::from_secs(2))
        .prefix(prefix("closing"))
        .build()
        .unwrap();
    assert!(l.check("k", 1).unwrap().allowed);
    let lb = l.clone();
    // Sleeps about 2 s inside acquire, holding the client open.
    let sleeper = std::thread::spawn(move || lb.acquire("k", 1, Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(200));
    let c = client.clone();
    let closer = std::thread::spawn(move || c.close());
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    let r = l.check_async("other", 1).await;
    assert!(matches!(r, Err(Error::Closed(_))), "{r:?}");
    let r = l.check_many_async(&["x"], 1).await;
    assert!(matches!(r, Err(Error::Closed(_))), "{r:?}");
    assert!(start.elapsed() < Duration::from_millis(500), "{:?}", start.elapsed());
    assert!(
        !closer.is_finished(),
        "close returned before the blocking acquire: the test proves nothing"
    );
    closer.join().unwrap();
    let _ = sleeper.join().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn memory_backend_every_op() {
    let client = Client::open("memory://").unwrap();
    let l = client.limiter("4/minute").unwrap();
    assert_eq!(l.check_at_most_async("k", 3).await.unwrap().granted, 3);
    assert_eq!(l.peek_async("k").await.unwrap().remaining, 1);
    assert_eq!(l.refund_async("k", 2).await.unwrap().remaining, 3);
    let r = l.check_many_async(&["k", "j"], 3).await.unwrap();
    assert!(r.iter().all(|d| d.as_ref().unwrap().allowed), "{r:?}");
    assert!(!l.acquire_async("k", 1, Duration::ZERO).await.unwrap().allowed);
    assert!(
        l.check_limit_async("k", 1, 10, Duration::from_secs(60))
            .await
            .unwrap()
            .allowed
    );
    l.reset_async("k").await.unwrap();
    assert_eq!(l.peek_async("k").await.unwrap().remaining, 4);
}
