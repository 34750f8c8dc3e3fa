//! Two tables, rounds interleaved (the order alternates), each cell the
//! median of the rounds with min and max, on keys that always admit and on
//! keys that always deny, one key per thread or task, GCRA throughout:
//!
//! 1. In-process: polylimit's `memory://` backend (blocking `check`)
//!    against the `governor` crate's keyed limiter, 1 and 8 threads.
//! 2. Against Redis: polylimit (check_async) against what a Rust user writes
//!    today, the `redis` crate on a multiplexed connection running
//!    redis_rate's GCRA script with EVALSHA, 1 and 64 tokio tasks: checks
//!    per second and the client's CPU per check (getrusage(RUSAGE_SELF),
//!    user + system, over the timed part: every thread of this process, the
//!    library's I/O threads and tokio's workers included; the server's CPU
//!    is not).
//!
//!     cargo run --release -- [redis://127.0.0.1:6379 [rounds] [checks per cell]]
//!
//! Without a URL only the in-process table is printed.

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

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

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Allow => "allow",
            Mode::Deny => "deny",
        }
    }
}

/// The limit of a cell: huge for Allow, one unit a day (spent) for Deny.
fn rate(mode: Mode) -> (i64, u64) {
    match mode {
        Mode::Allow => (1_000_000, 1),
        Mode::Deny => (1, 86_400),
    }
}

/// This process's CPU time so far (user + system, every thread), in µs.
fn cpu_us() -> f64 {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a
    // valid value of that plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage");
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// One timed cell: checks per second and client CPU µs per check.
#[derive(Clone, Copy)]
struct Sample {
    rate: f64,
    cpu_us: f64,
    /// The Redis main thread's CPU µs per check (against Redis only).
    server_us: f64,
    /// The part of server_us in EVALSHA (`INFO commandstats`).
    script_us: f64,
}

/// The sample of a cell that made `checks` checks since `start` (wall
/// clock) and `cpu0` (this process's CPU time then).
fn timed(checks: usize, start: Instant, cpu0: f64) -> Sample {
    let secs = start.elapsed().as_secs_f64();
    Sample {
        rate: checks as f64 / secs,
        cpu_us: (cpu_us() - cpu0) / checks as f64,
        server_us: 0.0,
        script_us: 0.0,
    }
}

// ---------------------------------------------------------------- in-process

/// The same limits as against Redis (`rate`): Allow cannot run out within a
/// cell (a burst of a million, refilled at a million a second).
fn memory_cell(
    client: &polylimit::Client,
    tag: &str,
    mode: Mode,
    threads: usize,
    n: usize,
) -> Sample {
    // Allow: 10^9 per second, which no run reaches (a cell checks one key
    // millions of times; governor's quota is 2^32 - 1 per second).
    let (limit, window) = match mode {
        Mode::Allow => (1_000_000, Duration::from_millis(1)),
        Mode::Deny => (rate(mode).0, Duration::from_secs(rate(mode).1)),
    };
    let l = client
        .limiter_builder()
        .limit(limit, window)
        .algorithm(polylimit::Algorithm::Gcra)
        .prefix(format!("bench-mem-{tag}"))
        .build()
        .expect("limiter");
    let keys: Vec<String> = (0..threads).map(|t| format!("k{t}")).collect();
    if mode == Mode::Deny {
        for k in &keys {
            assert!(l.check(k, 1).expect("check").allowed);
        }
    }
    let per = n / threads;
    let (start, cpu0) = (Instant::now(), cpu_us());
    std::thread::scope(|s| {
        for k in &keys {
            let l = &l;
            s.spawn(move || {
                for _ in 0..per {
                    let d = l.check(k, 1).expect("check");
                    assert_eq!(d.allowed, mode == Mode::Allow);
                }
            });
        }
    });
    timed(per * threads, start, cpu0)
}

fn governor_cell(mode: Mode, threads: usize, n: usize) -> Sample {
    let quota = match mode {
        Mode::Allow => Quota::per_second(NonZeroU32::MAX),
        Mode::Deny => Quota::with_period(Duration::from_secs(86_400)).expect("period"),
    };
    let g: DefaultKeyedRateLimiter<String> = RateLimiter::keyed(quota);
    let keys: Vec<String> = (0..threads).map(|t| format!("k{t}")).collect();
    if mode == Mode::Deny {
        for k in &keys {
            assert!(g.check_key(k).is_ok());
        }
    }
    let per = n / threads;
    let (start, cpu0) = (Instant::now(), cpu_us());
    std::thread::scope(|s| {
        for k in &keys {
            let g = &g;
            s.spawn(move || {
                for _ in 0..per {
                    assert_eq!(g.check_key(k).is_ok(), mode == Mode::Allow);
                }
            });
        }
    });
    timed(per * threads, start, cpu0)
}

fn in_process(rounds: usize, n: usize) {
    let client = polylimit::Client::open("memory://").expect("memory://");
    let cells = [
        (1, Mode::Allow),
        (1, Mode::Deny),
        (8, Mode::Allow),
        (8, Mode::Deny),
    ];
    let mut results: Vec<(Vec<Sample>, Vec<Sample>)> = vec![(Vec::new(), Vec::new()); cells.len()];
    for round in 0..rounds {
        for (i, &(threads, mode)) in cells.iter().enumerate() {
            let tag = format!("{round}-{i}");
            if round % 2 == 0 {
                results[i]
                    .0
                    .push(memory_cell(&client, &tag, mode, threads, n));
                results[i].1.push(governor_cell(mode, threads, n));
            } else {
                results[i].1.push(governor_cell(mode, threads, n));
                results[i]
                    .0
                    .push(memory_cell(&client, &tag, mode, threads, n));
            }
        }
    }
    println!("In-process GCRA checks/s, median of {rounds} interleaved rounds of {n} checks [min..max]; one key per thread");
    println!(
        "| threads | keys | polylimit memory:// (check) | governor keyed (check_key) | ratio |"
    );
    println!("|---:|---|---:|---:|---:|");
    for (i, &(threads, mode)) in cells.iter().enumerate() {
        let (pm, plo, phi) = median_min_max(results[i].0.iter().map(|s| s.rate).collect());
        let (gm, glo, ghi) = median_min_max(results[i].1.iter().map(|s| s.rate).collect());
        println!(
            "| {threads} | {} | {pm:.0} [{plo:.0}..{phi:.0}] | {gm:.0} [{glo:.0}..{ghi:.0}] | {:.2}x |",
            mode.name(),
            pm / gm
        );
    }
}

// ---------------------------------------------------------------- Redis

async fn polylimit_cell(
    client: &polylimit::Client,
    tag: &str,
    mode: Mode,
    tasks: usize,
    n: usize,
) -> Sample {
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
    let (start, cpu0) = (Instant::now(), cpu_us());
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
    timed(n / tasks * tasks, start, cpu0)
}

async fn redis_cell(
    conn: &redis::aio::MultiplexedConnection,
    tag: &str,
    mode: Mode,
    tasks: usize,
    n: usize,
) -> Sample {
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
    let (start, cpu0) = (Instant::now(), cpu_us());
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
    timed(n / tasks * tasks, start, cpu0)
}

/// The Redis main thread's CPU time so far (`INFO cpu`: user + system) and
/// the part of it in EVALSHA (`INFO commandstats`), in µs.
async fn server_cpu_us(conn: &redis::aio::MultiplexedConnection) -> (f64, f64) {
    let mut c = conn.clone();
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .expect("INFO");
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO cpu has no {name}"))
    };
    // cmdstat_evalsha:calls=N,usec=U,... (absent before the first EVALSHA)
    let script = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:"))
        .and_then(|l| {
            l.split(',')
                .find_map(|kv| kv.strip_prefix("usec=")?.parse().ok())
        })
        .unwrap_or(0.0);
    (
        (field("used_cpu_user_main_thread") + field("used_cpu_sys_main_thread")) * 1e6,
        script,
    )
}

fn median_min_max(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().filter(|u| !u.is_empty());
    let rounds: usize = args.next().map_or(5, |a| a.parse().expect("rounds"));
    let n: usize = args.next().map_or(20_000, |a| a.parse().expect("checks"));
    // Only the Redis cells whose "tasks keys side" contains it (e.g. "1 deny
    // polylimit", for perf or strace): their samples, no table.
    let filter = args.next();
    // In-process checks are ~100x faster than a round trip: more per cell,
    // so that a cell lasts long enough to time.
    if filter.is_none() {
        in_process(rounds, n * 50);
    }
    if let Some(url) = url {
        println!();
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(against_redis(&url, rounds, n, filter.as_deref()));
    }
}

/// A cell's checks: with many tasks in flight a check takes a fraction of a
/// round trip, so those cells check more, to last about as long.
fn checks(n: usize, tasks: usize) -> usize {
    if tasks > 1 {
        n * 8
    } else {
        n
    }
}

async fn against_redis(url: &str, rounds: usize, n: usize, filter: Option<&str>) {
    let client = polylimit::Client::open(url).expect("polylimit");
    // The same without coalescing: what the default costs or gains on
    // distinct keys (one key per task).
    let uncoalesced = polylimit::Client::builder()
        .coalesce(false)
        .open(url)
        .expect("polylimit");
    let conn = redis::Client::open(url)
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
    // [cell] -> (polylimit samples, redis crate samples), rounds interleaved;
    // off[cell]: polylimit without coalescing, in the same rounds.
    let mut results: Vec<(Vec<Sample>, Vec<Sample>)> = vec![(Vec::new(), Vec::new()); cells.len()];
    let mut off: Vec<Vec<Sample>> = vec![Vec::new(); cells.len()];
    for round in 0..rounds {
        for (i, &(tasks, mode)) in cells.iter().enumerate() {
            let tag = format!("{round}-{i}");
            let n = checks(n, tasks);
            // Rotate which one goes first, so none always runs on a warmer server.
            for side in [round % 3, (round + 1) % 3, (round + 2) % 3] {
                let name = format!(
                    "{tasks} {} {}",
                    mode.name(),
                    ["polylimit", "redis", "polylimit-uncoalesced"][side]
                );
                if filter.is_some_and(|f| !name.contains(f)) {
                    continue;
                }
                let s0 = server_cpu_us(&conn).await;
                let mut sample = match side {
                    0 => polylimit_cell(&client, &tag, mode, tasks, n).await,
                    1 => redis_cell(&conn, &tag, mode, tasks, n).await,
                    _ => polylimit_cell(&uncoalesced, &format!("{tag}-off"), mode, tasks, n).await,
                };
                let s1 = server_cpu_us(&conn).await;
                let checks = (n / tasks * tasks) as f64;
                sample.server_us = (s1.0 - s0.0) / checks;
                sample.script_us = (s1.1 - s0.1) / checks;
                if filter.is_some() {
                    println!(
                        "{name}: {:.0} checks/s, client CPU {:.1} µs/check, Redis CPU {:.1} µs/check",
                        sample.rate, sample.cpu_us, sample.server_us
                    );
                }
                match side {
                    0 => results[i].0.push(sample),
                    1 => results[i].1.push(sample),
                    _ => off[i].push(sample),
                }
            }
        }
    }
    if filter.is_some() {
        return;
    }
    println!(
        "GCRA against Redis: checks/s and client CPU µs per check, median of {rounds} interleaved rounds of {n} checks \
         ({} with 64 tasks) [min..max]; one key per task",
        checks(n, 64)
    );
    println!(
        "| tasks | keys | polylimit check_async | redis crate EVALSHA (redis_rate script) | ratio \
         | polylimit CPU µs/check | redis crate CPU µs/check | Redis CPU µs/check (in EVALSHA): polylimit | redis crate |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for (i, &(tasks, mode)) in cells.iter().enumerate() {
        let (pm, plo, phi) = median_min_max(results[i].0.iter().map(|s| s.rate).collect());
        let (rm, rlo, rhi) = median_min_max(results[i].1.iter().map(|s| s.rate).collect());
        let (pc, pclo, pchi) = median_min_max(results[i].0.iter().map(|s| s.cpu_us).collect());
        let (rc, rclo, rchi) = median_min_max(results[i].1.iter().map(|s| s.cpu_us).collect());
        let (ps, pslo, pshi) = median_min_max(results[i].0.iter().map(|s| s.server_us).collect());
        let (rs, rslo, rshi) = median_min_max(results[i].1.iter().map(|s| s.server_us).collect());
        let (pe, re) = (
            median_min_max(results[i].0.iter().map(|s| s.script_us).collect()).0,
            median_min_max(results[i].1.iter().map(|s| s.script_us).collect()).0,
        );
        println!(
            "| {tasks} | {} | {pm:.0} [{plo:.0}..{phi:.0}] | {rm:.0} [{rlo:.0}..{rhi:.0}] | {:.2}x \
             | {pc:.1} [{pclo:.1}..{pchi:.1}] | {rc:.1} [{rclo:.1}..{rchi:.1}] \
             | {ps:.1} [{pslo:.1}..{pshi:.1}] ({pe:.1}) | {rs:.1} [{rslo:.1}..{rshi:.1}] ({re:.1}) |",
            mode.name(),
            pm / rm
        );
    }
    println!();
    println!("Coalescing on (the default) against off, same rounds: checks/s, median [min..max] of the per-round ratios");
    println!("| tasks | keys | polylimit check_async | without coalescing | on / off |");
    println!("|---:|---|---:|---:|---:|");
    for (i, &(tasks, mode)) in cells.iter().enumerate() {
        let (pm, plo, phi) = median_min_max(results[i].0.iter().map(|s| s.rate).collect());
        let (om, olo, ohi) = median_min_max(off[i].iter().map(|s| s.rate).collect());
        let (r, rlo, rhi) = median_min_max(
            results[i]
                .0
                .iter()
                .zip(&off[i])
                .map(|(a, b)| a.rate / b.rate)
                .collect(),
        );
        println!(
            "| {tasks} | {} | {pm:.0} [{plo:.0}..{phi:.0}] | {om:.0} [{olo:.0}..{ohi:.0}] | {r:.2}x [{rlo:.2}..{rhi:.2}] |",
            mode.name()
        );
    }
}
