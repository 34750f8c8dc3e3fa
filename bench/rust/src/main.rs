//! polylimit (check_async, GCRA) against what a Rust user writes today: the
//! `redis` crate on a multiplexed connection running redis_rate's GCRA
//! script with EVALSHA. Same server, same keys per task, rounds
//! interleaved; prints checks per second, median of the rounds with min and
//! max, for 1 and 64 tokio tasks, on keys that always admit and on keys
//! that always deny.
//!
//!     cargo run --release -- redis://127.0.0.1:6379 [rounds] [checks per cell]

use std::time::Instant;

/// redis_rate's allowN (go-redis/redis_rate), as a Rust user ports it.
const GCRA: &str = r#"
local key = KEYS[1]
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local emission_interval = period / rate
local increment = emission_interval * cost
local burst_offset = emission_interval * burst
local now = redis.call("TIME")
now = (now[1] - 1483228800) + (now[2] / 1000000)
local tat = redis.call("GET", key)
if not tat then tat = now else tat = tonumber(tat) end
tat = math.max(tat, now)
local new_tat = tat + increment
local diff = now - (new_tat - burst_offset)
local remaining = diff / emission_interval
if remaining < 0 then
  return {0, 0, tostring(-diff), tostring(tat - now)}
end
local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", key, new_tat, "EX", math.ceil(reset_after))
end
return {cost, remaining, "-1", tostring(reset_after)}
"#;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Allow,
    Deny,
}

/// The limit of a cell: huge for Allow, one unit a day (spent) for Deny.
fn rate(mode: Mode) -> (i64, u64) {
    match mode {
        Mode::Allow => (1_000_000, 1),
        Mode::Deny => (1, 86_400),
    }
}

async fn polylimit_cell(
    client: &polylimit::Client,
    tag: &str,
    mode: Mode,
    tasks: usize,
    n: usize,
) -> f64 {
    let (limit, secs) = rate(mode);
    let l = client
        .limiter_builder()
        .limit(limit, std::time::Duration::from_secs(secs))
        .algorithm(polylimit::Algorithm::Gcra)
        .prefix(format!("bench-pl-{tag}"))
        .build()
        .expect("limiter");
    for t in 0..tasks {
        let key = format!("k{t}");
        l.reset(&key).expect("reset");
        if mode == Mode::Deny {
            l.check(&key, 1).expect("check");
        }
    }
    let start = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let l = l.clone();
            tokio::spawn(async move {
                let key = format!("k{t}");
                for _ in 0..n / tasks {
                    let d = l.check_async(&key, 1).await.expect("check_async");
                    assert_eq!(d.allowed, mode == Mode::Allow);
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    (n / tasks * tasks) as f64 / start.elapsed().as_secs_f64()
}

async fn redis_cell(
    conn: &redis::aio::MultiplexedConnection,
    tag: &str,
    mode: Mode,
    tasks: usize,
    n: usize,
) -> f64 {
    let (limit, secs) = rate(mode);
    let script = redis::Script::new(GCRA);
    let keys: Vec<String> = (0..tasks).map(|t| format!("bench-rc-{tag}:k{t}")).collect();
    for key in &keys {
        let mut c = conn.clone();
        let _: () = redis::cmd("DEL")
            .arg(key)
            .query_async(&mut c)
            .await
            .expect("DEL");
        if mode == Mode::Deny {
            let _: redis::Value = script
                .key(key)
                .arg(limit)
                .arg(limit)
                .arg(secs)
                .arg(1)
                .invoke_async(&mut c)
                .await
                .expect("GCRA");
        }
    }
    let start = Instant::now();
    let handles: Vec<_> = keys
        .into_iter()
        .map(|key| {
            let mut c = conn.clone();
            let script = script.clone();
            tokio::spawn(async move {
                for _ in 0..n / tasks {
                    let r: (i64, String, String, String) = script
                        .key(&key)
                        .arg(limit)
                        .arg(limit)
                        .arg(secs)
                        .arg(1)
                        .invoke_async(&mut c)
                        .await
                        .expect("GCRA");
                    assert_eq!(r.0 > 0, mode == Mode::Allow);
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    (n / tasks * tasks) as f64 / start.elapsed().as_secs_f64()
}

fn median_min_max(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .expect("usage: polylimit-bench REDIS_URL [rounds] [checks per cell]");
    let rounds: usize = args.next().map_or(5, |a| a.parse().expect("rounds"));
    let n: usize = args.next().map_or(20_000, |a| a.parse().expect("checks"));
    let client = polylimit::Client::open(&url).expect("polylimit");
    let conn = redis::Client::open(url.as_str())
        .expect("redis url")
        .get_multiplexed_async_connection()
        .await
        .expect("redis connection");
    let cells: Vec<(usize, Mode)> = vec![
        (1, Mode::Allow),
        (1, Mode::Deny),
        (64, Mode::Allow),
        (64, Mode::Deny),
    ];
    // [cell] -> (polylimit rates, redis crate rates), rounds interleaved.
    let mut results: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); cells.len()];
    for round in 0..rounds {
        for (i, &(tasks, mode)) in cells.iter().enumerate() {
            let tag = format!("{round}-{i}");
            // Alternate which one goes first, so neither always runs on a warmer server.
            if round % 2 == 0 {
                results[i]
                    .0
                    .push(polylimit_cell(&client, &tag, mode, tasks, n).await);
                results[i]
                    .1
                    .push(redis_cell(&conn, &tag, mode, tasks, n).await);
            } else {
                results[i]
                    .1
                    .push(redis_cell(&conn, &tag, mode, tasks, n).await);
                results[i]
                    .0
                    .push(polylimit_cell(&client, &tag, mode, tasks, n).await);
            }
        }
    }
    println!("GCRA checks/s, median of {rounds} interleaved rounds of {n} checks [min..max]; one key per task");
    println!("| tasks | keys | polylimit check_async | redis crate EVALSHA (redis_rate script) | ratio |");
    println!("|---:|---|---:|---:|---:|");
    for (i, &(tasks, mode)) in cells.iter().enumerate() {
        let (pm, plo, phi) = median_min_max(results[i].0.clone());
        let (rm, rlo, rhi) = median_min_max(results[i].1.clone());
        println!(
            "| {tasks} | {} | {pm:.0} [{plo:.0}..{phi:.0}] | {rm:.0} [{rlo:.0}..{rhi:.0}] | {:.2}x |",
            if mode == Mode::Allow { "allow" } else { "deny" },
            pm / rm
        );
    }
}
