//! Two tables, rounds interleaved (the order alternates), each cell the
//! median of the rounds with min and max:
//!
//! 1. In-process: polylimit's `memory://` backend (blocking `check`, GCRA)
//!    against the `governor` crate's keyed limiter, 1 and 8 threads, one key
//!    per thread.
//! 2. Against Redis: polylimit's non-blocking path (`check_async` on tokio),
//!    GCRA and fixed window, with coalescing on (the default) and off,
//!    against what a Rust user writes today, the `redis` crate on a
//!    multiplexed connection running redis_rate's GCRA script with EVALSHA;
//!    1 and 64 tokio tasks over 2,000 distinct keys (each task cycles through
//!    keys of its own: no two checks in flight share a key), allow and deny,
//!    and one hot key (64 tasks). Per cell: checks per second, the client's
//!    CPU per check (getrusage(RUSAGE_SELF), user + system of every thread,
//!    over the timed part), the Redis main thread's CPU per check (`INFO
//!    cpu` before and after), `CPU used` (checks/s x both CPUs per check /
//!    cores), `Redis busy` (checks/s x the Redis CPU per check: the share of
//!    one core) and polylimit's script calls per check (client stats).
//!
//!     cargo run --release -- [redis://127.0.0.1:6379 [rounds] [checks per cell] [filter]]
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
    /// polylimit's script calls per check (client stats; NaN for the peer).
    calls: f64,
}

/// The sample of a cell that made `checks` checks since `start` (wall
/// clock) and `cpu0` (this process's CPU time then).
fn timed(checks: usize, start: Instant, cpu0: f64) -> Sample {
    let secs = start.elapsed().as_secs_f64();
    Sample {
        rate: checks as f64 / secs,
        cpu_us: (cpu_us() - cpu0) / checks as f64,
        server_us: 0.0,
        calls: f64::NAN,
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

/// Distinct keys of the allow and deny cells.
const KEYS: usize = 2000;

/// A cell's keys: `Allow` and `Deny` over KEYS keys (Deny's used up
/// beforehand), `Hot` one used-up key that every task checks.
#[derive(Clone, Copy, PartialEq)]
enum Path {
    Allow,
    Deny,
    Hot,
}

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Allow => "allow",
            Path::Deny => "deny",
            Path::Hot => "hot",
        }
    }
    fn mode(self) -> Mode {
        if self == Path::Allow {
            Mode::Allow
        } else {
            Mode::Deny
        }
    }
}

/// What a cell runs: a polylimit limiter (with its client, for the stats),
/// or redis_rate's script through the `redis` crate on keys under a prefix.
enum Target {
    Polylimit(polylimit::Client, polylimit::Limiter),
    RedisCrate(redis::aio::MultiplexedConnection, String),
}

/// A library and its settings: one row group of the table.
#[derive(Clone, Copy, PartialEq)]
struct Variant {
    /// None: the `redis` crate (GCRA, redis_rate's script).
    algorithm: Option<polylimit::Algorithm>,
    coalesce: bool,
}

impl Variant {
    fn lib(self) -> &'static str {
        if self.algorithm.is_some() {
            "polylimit"
        } else {
            "redis crate"
        }
    }
    fn name(self) -> String {
        match self.algorithm {
            None => "gcra (redis_rate script)".into(),
            Some(a) => format!(
                "{}{}",
                if a == polylimit::Algorithm::Gcra {
                    "gcra"
                } else {
                    "fixed_window"
                },
                if self.coalesce { "" } else { ", no coalescing" }
            ),
        }
    }
}

/// The keys task `t` of `tasks` cycles through: every tasks-th key from
/// the t-th, so no two tasks ever check one key.
fn own_keys(keys: &[String], t: usize, tasks: usize) -> Vec<String> {
    keys.iter().skip(t).step_by(tasks).cloned().collect()
}

fn cell_keys(keys: &[String], path: Path, t: usize, tasks: usize) -> Vec<String> {
    if path == Path::Hot {
        vec!["hot".into()]
    } else {
        own_keys(keys, t, tasks)
    }
}

async fn redis_check(
    c: &mut redis::aio::MultiplexedConnection,
    script: &redis::Script,
    key: &str,
    mode: Mode,
) -> bool {
    let (limit, secs) = rate(mode);
    let r: (i64, String, String, String) = script
        .key(key)
        .arg(limit)
        .arg(limit)
        .arg(secs)
        .arg(1)
        .invoke_async(c)
        .await
        .expect("GCRA");
    r.0 > 0
}

/// A target of `path`'s limits with its deny keys used up and its script
/// loaded.
async fn make_target(
    variant: Variant,
    clients: &[polylimit::Client; 2],
    conn: &redis::aio::MultiplexedConnection,
    keys: &[String],
    run: &str,
    path: Path,
) -> Target {
    let mode = path.mode();
    let (limit, secs) = rate(mode);
    let prefix = format!(
        "bench-{run}-{}-{}",
        variant.name().replace([' ', ',', '(', ')'], ""),
        mode.name()
    );
    let target = match variant.algorithm {
        Some(a) => {
            let client = clients[usize::from(!variant.coalesce)].clone();
            let l = client
                .limiter_builder()
                .limit(limit, Duration::from_secs(secs))
                .algorithm(a)
                .prefix(prefix)
                .build()
                .expect("limiter");
            Target::Polylimit(client, l)
        }
        None => Target::RedisCrate(conn.clone(), prefix),
    };
    // Deny: every key checked once (the limit is 1 a day); allow: one check,
    // which loads the script.
    let setup: Vec<&String> = if mode == Mode::Deny {
        keys.iter().collect()
    } else {
        keys.iter().take(1).collect()
    };
    let script = redis::Script::new(GCRA);
    for key in setup.into_iter().chain(std::iter::once(&"hot".to_string())) {
        let allowed = match &target {
            Target::Polylimit(_, l) => l.check_async(key, 1).await.expect("check").allowed,
            Target::RedisCrate(c, prefix) => {
                redis_check(&mut c.clone(), &script, &format!("{prefix}:{key}"), mode).await
            }
        };
        assert!(allowed, "setup: {key} denied");
    }
    target
}

/// One timed cell: `tasks` tasks, `n` checks in all.
async fn run_cell(target: &Target, keys: &[String], path: Path, tasks: usize, n: usize) -> Sample {
    let mode = path.mode();
    let per = n / tasks;
    let stats0 = match target {
        Target::Polylimit(c, _) => Some(c.stats().expect("stats")),
        Target::RedisCrate(..) => None,
    };
    let mut handles = Vec::with_capacity(tasks);
    let (start, cpu0) = (Instant::now(), cpu_us());
    match target {
        Target::Polylimit(_, l) => {
            for t in 0..tasks {
                let (l, mine) = (l.clone(), cell_keys(keys, path, t, tasks));
                handles.push(tokio::spawn(async move {
                    for key in mine.iter().cycle().take(per) {
                        let d = l.check_async(key, 1).await.expect("check_async");
                        assert_eq!(d.allowed, mode == Mode::Allow);
                    }
                }));
            }
        }
        Target::RedisCrate(conn, prefix) => {
            for t in 0..tasks {
                let mut c = conn.clone();
                let mine: Vec<String> = cell_keys(keys, path, t, tasks)
                    .into_iter()
                    .map(|k| format!("{prefix}:{k}"))
                    .collect();
                handles.push(tokio::spawn(async move {
                    let script = redis::Script::new(GCRA);
                    for key in mine.iter().cycle().take(per) {
                        assert_eq!(
                            redis_check(&mut c, &script, key, mode).await,
                            mode == Mode::Allow
                        );
                    }
                }));
            }
        }
    }
    for h in handles {
        h.await.unwrap();
    }
    let mut sample = timed(per * tasks, start, cpu0);
    if let (Some(s0), Target::Polylimit(c, _)) = (stats0, target) {
        let s1 = c.stats().expect("stats");
        sample.calls =
            (s1.script_calls() - s0.script_calls()) as f64 / (s1.checks() - s0.checks()) as f64;
    }
    sample
}

/// The Redis main thread's CPU time so far (`INFO cpu`: user + system; the
/// whole server's where the main thread's fields are absent), in µs.
async fn server_cpu_us(conn: &redis::aio::MultiplexedConnection) -> f64 {
    let mut c = conn.clone();
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(&mut c)
        .await
        .expect("INFO");
    let field = |name: &str| -> Option<f64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
    };
    let main = field("used_cpu_user_main_thread").zip(field("used_cpu_sys_main_thread"));
    let (user, sys) = main
        .or_else(|| field("used_cpu_user").zip(field("used_cpu_sys")))
        .expect("INFO cpu has no used_cpu_user / used_cpu_sys");
    (user + sys) * 1e6
}

async fn server_version(conn: &redis::aio::MultiplexedConnection) -> String {
    let mut c = conn.clone();
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut c)
        .await
        .expect("INFO");
    let field = |name: &str| {
        info.lines()
            .find_map(|l| Some(l.strip_prefix(name)?.strip_prefix(':')?.trim().to_string()))
    };
    let name = field("server_name").unwrap_or_else(|| "redis".into());
    let version = field("valkey_version")
        .or_else(|| field("redis_version"))
        .unwrap_or_else(|| "?".into());
    format!("{name}-server {version}")
}

fn median_min_max(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn cores() -> usize {
    // SAFETY: sysconf reads a system value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().filter(|u| !u.is_empty());
    let rounds: usize = args.next().map_or(5, |a| a.parse().expect("rounds"));
    let n: usize = args.next().map_or(20_000, |a| a.parse().expect("checks"));
    // Only the Redis cells whose "tasks path library variant" contains it
    // (e.g. "1 deny polylimit gcra"; "...gcra$": ends with it), for perf or
    // strace: their samples, no tables.
    let filter = args.next();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let conn = url.as_deref().map(|url| {
        rt.block_on(async {
            redis::Client::open(url)
                .expect("redis url")
                .get_multiplexed_async_connection()
                .await
                .expect("redis connection")
        })
    });
    let server = conn.as_ref().map(|c| rt.block_on(server_version(c)));
    println!(
        "polylimit {} (C library {}), redis crate {}, tokio {}, governor {}{}; {} cores",
        env!("BENCH_VERSION_POLYLIMIT"),
        polylimit::library_version(),
        env!("BENCH_VERSION_REDIS"),
        env!("BENCH_VERSION_TOKIO"),
        env!("BENCH_VERSION_GOVERNOR"),
        server.map(|s| format!("; {s}")).unwrap_or_default(),
        cores()
    );
    // In-process checks are ~100x faster than a round trip: more per cell,
    // so that a cell lasts long enough to time.
    if filter.is_none() {
        println!();
        in_process(rounds, n * 50);
    }
    if let (Some(url), Some(conn)) = (url, conn) {
        println!();
        rt.block_on(against_redis(&url, conn, rounds, n, filter.as_deref()));
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

async fn against_redis(
    url: &str,
    conn: redis::aio::MultiplexedConnection,
    rounds: usize,
    n: usize,
    filter: Option<&str>,
) {
    let clients = [
        polylimit::Client::open(url).expect("polylimit"),
        polylimit::Client::builder()
            .coalesce(false)
            .open(url)
            .expect("polylimit"),
    ];
    use polylimit::Algorithm::{FixedWindow, Gcra};
    let variants = [
        Variant {
            algorithm: Some(FixedWindow),
            coalesce: true,
        },
        Variant {
            algorithm: Some(FixedWindow),
            coalesce: false,
        },
        Variant {
            algorithm: Some(Gcra),
            coalesce: true,
        },
        Variant {
            algorithm: Some(Gcra),
            coalesce: false,
        },
        Variant {
            algorithm: None,
            coalesce: false,
        },
    ];
    let keys: Vec<String> = (0..KEYS).map(|i| format!("user:{i}")).collect();
    // Fresh keys for every run against one server.
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let run = format!("{}-{secs}", std::process::id());
    let cells: Vec<(usize, Path)> = vec![
        (1, Path::Allow),
        (64, Path::Allow),
        (1, Path::Deny),
        (64, Path::Deny),
        (64, Path::Hot),
    ];
    let name = |tasks: usize, path: Path, v: Variant| {
        format!("{tasks} {} {} {}", path.name(), v.lib(), v.name())
    };
    // targets[variant][path's mode]: one per mode (hot uses deny's limiter).
    let mut targets = Vec::new();
    for &v in &variants {
        let mut per = Vec::new();
        for path in [Path::Allow, Path::Deny] {
            per.push(make_target(v, &clients, &conn, &keys, &run, path).await);
        }
        targets.push(per);
    }
    // results[cell][variant]: one sample a round.
    let mut results = vec![vec![Vec::<Sample>::new(); variants.len()]; cells.len()];
    for round in 0..rounds {
        for (ci, &(tasks, path)) in cells.iter().enumerate() {
            let n = checks(n, tasks);
            // Rotate which one goes first, so none always runs on a warmer
            // server, and reverse the order every other round, so each of a
            // pair (on and off) runs before the other as often.
            let mut order: Vec<usize> = (0..variants.len())
                .map(|k| (round / 2 + k) % variants.len())
                .collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for vi in order {
                let v = variants[vi];
                let name = name(tasks, path, v);
                // A filter that ends in `$` matches the end of the name:
                // "1 deny polylimit gcra$" is coalescing on alone.
                let wanted = |f: &str| {
                    f.strip_suffix('$')
                        .map_or(name.contains(f), |f| name.ends_with(f))
                };
                if filter.is_some_and(|f| !wanted(f)) {
                    continue;
                }
                let target = &targets[vi][usize::from(path != Path::Allow)];
                // Untimed: a twentieth of the cell, so that the cell does not
                // pay for waking what the cell before it left asleep.
                run_cell(target, &keys, path, tasks, (n / 20).max(tasks)).await;
                let s0 = server_cpu_us(&conn).await;
                let mut sample = run_cell(target, &keys, path, tasks, n).await;
                let s1 = server_cpu_us(&conn).await;
                sample.server_us = (s1 - s0) / (n / tasks * tasks) as f64;
                if filter.is_some() {
                    println!(
                        "{name}: {:.0} checks/s, CPU {:.1} us/check, Redis CPU {:.1} us/check, script calls/check {:.3}",
                        sample.rate, sample.cpu_us, sample.server_us, sample.calls
                    );
                }
                results[ci][vi].push(sample);
            }
        }
    }
    if filter.is_some() {
        return;
    }
    let cores = cores() as f64;
    let peer = variants.iter().position(|v| v.algorithm.is_none()).unwrap();
    println!(
        "Against Redis: medians of {rounds} interleaved rounds [min..max]; {n} checks a cell with 1 task, {} with 64; \
         allow: {KEYS} keys under 1000000/s; deny: {KEYS} used-up keys (1/day); hot: one used-up key; \
         each task cycles through keys of its own (none shared by checks in flight)",
        checks(n, 64)
    );
    println!(
        "| library | variant | path | tasks | checks/s [min..max] | CPU us/check | Redis CPU us/check | CPU used \
         | Redis busy | script calls/check | vs redis crate |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let med = |s: &[Sample], f: &dyn Fn(&Sample) -> f64| median_min_max(s.iter().map(f).collect());
    for (ci, &(tasks, path)) in cells.iter().enumerate() {
        for (vi, &v) in variants.iter().enumerate() {
            let s = &results[ci][vi];
            let (r, rlo, rhi) = med(s, &|x| x.rate);
            let cpu = med(s, &|x| x.cpu_us).0;
            let server = med(s, &|x| x.server_us).0;
            let used = med(s, &|x| x.rate * (x.cpu_us + x.server_us) / 1e6 / cores).0;
            let busy = med(s, &|x| x.rate * x.server_us / 1e6).0;
            let calls = med(s, &|x| x.calls).0;
            let vs = r / med(&results[ci][peer], &|x| x.rate).0;
            println!(
                "| {} | {} | {} | {tasks} | {r:.0} [{rlo:.0}..{rhi:.0}] | {cpu:.1} | {server:.1} | {:.0} % | {:.0} % | {} | {} |",
                v.lib(),
                v.name(),
                path.name(),
                used * 100.0,
                busy * 100.0,
                if calls.is_nan() { "-".into() } else { format!("{calls:.3}") },
                if vi == peer { "1".into() } else { format!("{vs:.2}x") },
            );
        }
    }
    println!();
    println!(
        "Coalescing on (the default) against off, same rounds: checks/s medians, on/off the ratio of the medians \
         [min..max of the per-round ratios]"
    );
    println!("| algorithm | path | tasks | on | off | on/off | Redis CPU us/check on / off |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (ci, &(tasks, path)) in cells.iter().enumerate() {
        for pair in variants.chunks(2).take(2) {
            let on = variants.iter().position(|v| *v == pair[0]).unwrap();
            let off = on + 1;
            let (a, b) = (&results[ci][on], &results[ci][off]);
            let (ra, rb) = (med(a, &|x| x.rate).0, med(b, &|x| x.rate).0);
            let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x.rate / y.rate).collect();
            let (_, lo, hi) = median_min_max(ratios);
            println!(
                "| {} | {} | {tasks} | {ra:.0} | {rb:.0} | {:.2}x [{lo:.2}..{hi:.2}] | {:.1} / {:.1} |",
                pair[0].name(),
                path.name(),
                ra / rb,
                med(a, &|x| x.server_us).0,
                med(b, &|x| x.server_us).0,
            );
        }
    }
}
