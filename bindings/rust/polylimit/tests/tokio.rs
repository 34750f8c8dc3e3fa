//! check_async over the completion queue (feature `tokio`).
#![cfg(feature = "tokio")]

mod common;

use common::{prefix, redis_url};
use polylimit::{Client, Error};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_admit_exactly_the_limit() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("500/hour")
        .prefix(prefix("tasks"))
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let l = l.clone();
            tokio::spawn(async move {
                let mut admitted = 0;
                for _ in 0..16 {
                    if l.check_async("hot", 1).await.unwrap().allowed {
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
    assert_eq!(total, 500); // 1024 tries
    assert_eq!(l.peek("hot").unwrap().remaining, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn one_thread_runtime_and_errors() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("3/minute")
        .prefix(prefix("async"))
        .build()
        .unwrap();
    let d = l.check_async("k", 2).await.unwrap();
    assert!(d.allowed);
    assert_eq!(d.remaining, 1);
    assert!(!l.check_async(b"k", 2).await.unwrap().allowed);
    // Bad arguments fail at submit time, as an Err.
    assert!(matches!(l.check_async("k", 0).await, Err(Error::InvalidArgument(_))));
    assert!(matches!(l.check_async("", 1).await, Err(Error::InvalidArgument(_))));
    assert!(matches!(l.check_async("k", 4).await, Err(Error::InvalidArgument(_))));
    // Many checks in flight at once on one task.
    let futs: Vec<_> = (0..100).map(|i| l.check_async(format!("k{i}"), 1)).collect();
    for f in futs {
        assert_eq!(f.await.unwrap().remaining, 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_futures_and_close() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("1000/minute")
        .prefix(prefix("drop"))
        .build()
        .unwrap();
    // A future dropped after its first poll: the check was sent and may
    // consume; nothing breaks and later checks complete.
    for _ in 0..20 {
        let f = Box::pin(l.check_async("k", 1));
        let _ = tokio::time::timeout(Duration::from_micros(1), f).await;
    }
    let d = l.check_async("k", 1).await.unwrap();
    assert!(d.allowed);
    assert!(d.remaining <= 999 && d.remaining >= 979, "{d:?}");
    client.close();
    let r = l.check_async("k", 1).await;
    assert!(matches!(r, Err(Error::Closed(_))), "{r:?}");
}

#[test]
fn outside_a_runtime_is_an_error() {
    let client = Client::open("memory://").unwrap();
    let l = client.limiter("1/s").unwrap();
    let f = l.check_async("k", 1);
    // Polled by a minimal executor with no tokio runtime around it.
    let r = futures_lite_block_on(f);
    assert!(r.is_err(), "{r:?}");
}

/// Polls a future to completion on this thread, without tokio.
fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Thread(std::thread::Thread);
    impl Wake for Thread {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Thread(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[tokio::test(flavor = "current_thread")]
async fn memory_backend_async() {
    let client = Client::open("memory://").unwrap();
    let l = client.limiter("2/minute").unwrap();
    assert!(l.check_async("k", 1).await.unwrap().allowed);
    assert!(l.check_async("k", 1).await.unwrap().allowed);
    assert!(!l.check_async("k", 1).await.unwrap().allowed);
}

#[test]
fn each_runtime_reaps_its_own_checks() {
    let client = Client::open(redis_url()).unwrap();
    let l = client
        .limiter_builder()
        .spec("100/minute")
        .prefix(prefix("runtimes"))
        .build()
        .unwrap();
    let rt = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let check = |rt: &tokio::runtime::Runtime| {
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), l.check_async("k", 1)).await })
            .expect("check_async hung: another runtime's reaper is not driven")
            .unwrap()
            .remaining
    };
    // Runtime a stays alive but idle (no block_on) while b and c check.
    let a = rt();
    assert_eq!(check(&a), 99);
    let b = rt();
    assert_eq!(check(&b), 98);
    drop(b);
    let c = rt();
    assert_eq!(check(&c), 97);
    drop(a);
    assert_eq!(check(&c), 96);
}

/// A server of its own that the test can stop (SIGSTOP) without holding up
/// the other tests, and a client whose calls to it time out after 3 s.
fn stoppable() -> (common::Deployment, Client) {
    let server = common::Deployment::start(&["standalone"]);
    let client = Client::builder()
        .command_timeout(Duration::from_secs(3))
        .open(&server.url)
        .unwrap();
    (server, client)
}

/// A limiter with leases dropped on a runtime thread while the server does
/// not answer: the drop returns at once (the units go back on the blocking
/// pool, once the server answers), and the runtime keeps running tasks.
#[tokio::test(flavor = "current_thread")]
async fn dropping_a_leased_limiter_does_not_block_the_runtime() {
    let (server, client) = stoppable();
    let p = prefix("drop-lease");
    let watch = client.limiter_builder().spec("100/minute").prefix(&p).build().unwrap();
    let leased = common::leased(&client, &p);
    assert!(leased.check_async("k", 1).await.unwrap().allowed);
    server.signal("-STOP");
    let ticker = tokio::spawn(async {
        let mut ticks = 0;
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            ticks += 1;
        }
        ticks
    });
    let started = std::time::Instant::now();
    drop(leased);
    let dropped = started.elapsed();
    let ticks = ticker.await.unwrap(); // this one thread ran the ticker meanwhile
    server.signal("-CONT");
    assert!(
        dropped < Duration::from_millis(100),
        "the drop held the runtime's thread for {dropped:?}"
    );
    assert_eq!(ticks, 30);
    // The 9 units the lease did not hand out go back once the server answers.
    let mut refunded = 0;
    for _ in 0..100 {
        refunded = client.stats().unwrap().refunded_units();
        if refunded > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(refunded, 9);
    assert_eq!(watch.peek_async("k").await.unwrap().remaining, 99);
}

/// close_async with leases while the server does not answer: the runtime
/// keeps running tasks, later calls fail at once, and the future completes
/// once the units have gone back.
#[tokio::test(flavor = "current_thread")]
async fn close_async_does_not_block_the_runtime() {
    let (server, client) = stoppable();
    let p = prefix("close-async");
    let leased = common::leased(&client, &p);
    assert!(leased.check_async("k", 1).await.unwrap().allowed);
    server.signal("-STOP");
    let closing = {
        let client = client.clone();
        tokio::spawn(async move { client.close_async().await })
    };
    let started = std::time::Instant::now();
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ticking = started.elapsed(); // the runtime's one thread kept running tasks
    assert!(
        ticking < Duration::from_millis(1500),
        "30 ticks of 10 ms took {ticking:?}"
    );
    assert!(!closing.is_finished()); // the close waits for the server
    assert!(matches!(leased.check_async("k", 1).await, Err(Error::Closed(_))));
    server.signal("-CONT");
    closing.await.unwrap();
    assert!(matches!(client.stats(), Err(Error::Closed(_))));
    let watch = Client::open(&server.url).unwrap();
    let plain = watch.limiter_builder().spec("100/minute").prefix(&p).build().unwrap();
    assert_eq!(plain.peek_async("k").await.unwrap().remaining, 99); // 9 went back
}
