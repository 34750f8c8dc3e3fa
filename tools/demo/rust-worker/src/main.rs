//! The demo's Rust worker: hammers one shared key and prints how many of its
//! attempts were admitted, as "<name> admitted=<n> attempts=<m>" (the same
//! command line and output as worker.c).
//!
//!     polylimit-demo-worker URL KEY LIMIT WINDOW_MS ATTEMPTS NAME
//!
//! With POLYLIMIT_DEMO_START_AT_MS (Unix ms) set, it connects, then waits for
//! that moment, so that workers of every language start together.

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn wait_for_start() {
    let Some(at) = std::env::var("POLYLIMIT_DEMO_START_AT_MS")
        .ok()
        .and_then(|v| v.parse::<u128>().ok())
    else {
        return;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    if at > now {
        std::thread::sleep(Duration::from_millis((at - now) as u64));
    }
}

fn run(
    url: &str,
    key: &str,
    limit: i64,
    window_ms: u64,
    attempts: u64,
) -> Result<u64, polylimit::Error> {
    let client = polylimit::Client::open(url)?;
    // Same prefix as worker.c, so workers in every language share the key.
    let limiter = client
        .limiter_builder()
        .limit(limit, Duration::from_millis(window_ms))
        .prefix("demo")
        .build()?;
    // Connect before the start signal, as the other workers do: the first
    // check of the race must not pay for the TCP handshake.
    limiter.peek(key)?;
    wait_for_start();
    let mut admitted = 0;
    // One check at a time, like the other workers: a share, not a flood.
    for _ in 0..attempts {
        if limiter.check(key, 1)?.allowed {
            admitted += 1;
        }
    }
    Ok(admitted)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, key, limit, window_ms, attempts, name] = args.as_slice() else {
        eprintln!("usage: polylimit-demo-worker URL KEY LIMIT WINDOW_MS ATTEMPTS NAME");
        return ExitCode::from(2);
    };
    let (Ok(limit), Ok(window_ms), Ok(attempts)) =
        (limit.parse(), window_ms.parse(), attempts.parse())
    else {
        eprintln!("{name}: LIMIT, WINDOW_MS and ATTEMPTS must be numbers");
        return ExitCode::from(2);
    };
    match run(url, key, limit, window_ms, attempts) {
        Ok(admitted) => {
            println!("{name} admitted={admitted} attempts={attempts}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}
