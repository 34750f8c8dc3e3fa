//! Coalescing (docs/limiter.md, "Hot keys: coalescing"): tokio tasks
//! hammering one key with check_async are decided exactly, in far fewer
//! round trips than checks; with `coalesce(false)` every check is its own
//! round trip.
#![cfg(feature = "tokio")]

mod common;

use common::{prefix, redis_url};
use polylimit::Client;

const TASKS: usize = 32;
const LIMIT: u64 = 300;
const DENIALS: u32 = 3; // each task checks until it has seen this many

async fn hammer(coalesce: bool) {
    let client = Client::builder()
        .pool_size(8)
        .coalesce(coalesce)
        .open(redis_url())
        .unwrap();
    let l = client
        .limiter_builder()
        .spec(format!("{LIMIT}/hour"))
        .prefix(prefix(if coalesce { "coalesce-on" } else { "coalesce-off" }))
        .build()
        .unwrap();
    l.check_async("warm", 1).await.unwrap(); // connected, script loaded
    let before = client.stats().unwrap();
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let l = l.clone();
            tokio::spawn(async move {
                let (mut admitted, mut checks, mut denied) = (0u64, 0u64, 0u32);
                while denied < DENIALS {
                    checks += 1;
                    if l.check_async("hot", 1).await.unwrap().allowed {
                        admitted += 1;
                    } else {
                        denied += 1;
                    }
                }
                (admitted, checks)
            })
        })
        .collect();
    let (mut admitted, mut checks) = (0, 0);
    for t in tasks {
        let (a, c) = t.await.unwrap();
        admitted += a;
        checks += c;
    }
    let after = client.stats().unwrap();
    assert_eq!(admitted, LIMIT, "admitted of {checks} checks");
    assert_eq!(after.checks() - before.checks(), checks);
    let trips = after.round_trips() - before.round_trips();
    if coalesce {
        assert!(trips * 2 < checks, "{trips} round trips for {checks} checks");
    } else {
        assert_eq!(trips, checks, "one round trip per check");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn coalesced_hammer_of_one_key() {
    hammer(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uncoalesced_hammer_is_one_round_trip_per_check() {
    hammer(false).await;
}
