//! The Rust service of the cross-language HTTP suite:
//!
//!     POLYLIMIT_URL=redis://127.0.0.1:6399 polylimit-http-service CONFIG_FILE PORT
//!
//! CONFIG_FILE is JSON: `{"limiters": [{"rate": "5/minute", "prefix": "xl:ip",
//! "algorithm": "gcra"}, ...], "policy": {...}}`. The policy document is
//! mounted with `RateLimitLayer::from_document`. With `"policy_file":
//! "<path>"` (and `"watch_ms"`, default 100) instead, the service opens a
//! live policy from that file on its client, watched (a rewritten file is
//! reloaded), without application limiters, and mounts it with
//! `RateLimitLayer::from_live`. The user is the request's
//! `X-User` header and the tenant its `X-Tenant` (the application's hooks,
//! not policy headers). Every path and method answers 200 `ok\n` when the
//! request goes on. Listens on 127.0.0.1:PORT, prints `ready` once it
//! accepts connections, exits with status 0 on SIGTERM.

use axum::extract::ConnectInfo;
use axum::Router;
use polylimit::tower::RateLimitLayer;
use polylimit::{Algorithm, Client, Limiter, LivePolicy};
use serde_json::Value;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

fn header(p: &axum::http::request::Parts, name: &str) -> Option<String> {
    p.headers.get(name)?.to_str().ok().map(str::to_string)
}

fn limiters(client: &Client, config: &Value) -> Result<Vec<Limiter>, String> {
    let list = config["limiters"]
        .as_array()
        .ok_or("config: \"limiters\" is not a list")?;
    let mut out = Vec::new();
    for (i, l) in list.iter().enumerate() {
        let rate = l["rate"]
            .as_str()
            .ok_or(format!("limiters[{i}]: no \"rate\""))?;
        let mut b = client.limiter_builder().spec(rate);
        if let Some(prefix) = l.get("prefix").and_then(Value::as_str) {
            b = b.prefix(prefix);
        }
        if let Some(name) = l.get("algorithm").and_then(Value::as_str) {
            let a = Algorithm::ALL
                .into_iter()
                .find(|a| a.name() == name)
                .ok_or(format!("limiters[{i}]: unknown algorithm {name:?}"))?;
            b = b.algorithm(a);
        }
        out.push(b.build().map_err(|e| format!("limiters[{i}]: {e}"))?);
    }
    Ok(out)
}

async fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, config, port] = &args[..] else {
        return Err("usage: polylimit-http-service CONFIG_FILE PORT".into());
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{port:?} is not a port"))?;
    let text = std::fs::read_to_string(config).map_err(|e| format!("{config}: {e}"))?;
    let config: Value = serde_json::from_str(&text).map_err(|e| format!("{config}: {e}"))?;
    let client = Client::from_env().map_err(|e| e.to_string())?;
    let layer = if let Some(path) = config.get("policy_file").and_then(Value::as_str) {
        let watch_ms = config
            .get("watch_ms")
            .and_then(Value::as_u64)
            .unwrap_or(100);
        let live = LivePolicy::builder(&client)
            .watch(Duration::from_millis(watch_ms))
            .open(path)
            .map_err(|e| format!("{path}: {e}"))?;
        RateLimitLayer::from_live(live)
    } else {
        let document = serde_json::to_string(&config["policy"]).map_err(|e| e.to_string())?;
        RateLimitLayer::from_document(&document, limiters(&client, &config)?)
            .map_err(|e| e.to_string())?
    };
    let layer = layer
        .peer(|p| {
            p.extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip())
        })
        .user(|p| header(p, "x-user"))
        .tenant(|p| header(p, "x-tenant"));
    let app = Router::new().fallback(|| async { "ok\n" }).layer(layer);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("127.0.0.1:{port}: {e}"))?;
    let mut out = std::io::stdout();
    writeln!(out, "ready")
        .and_then(|_| out.flush())
        .map_err(|e| e.to_string())?;
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
    .map_err(|e| e.to_string())
}

/// SIGTERM: exit at once with status 0 (nothing to flush: the state is in
/// Redis). `_exit` is async-signal-safe.
extern "C" fn on_sigterm(_: libc::c_int) {
    // SAFETY: _exit may be called from a signal handler.
    unsafe { libc::_exit(0) }
}

#[tokio::main]
async fn main() -> ExitCode {
    // SAFETY: installs a handler that only calls an async-signal-safe function.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            on_sigterm as extern "C" fn(libc::c_int) as libc::sighandler_t,
        )
    };
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("polylimit-http-service: {e}");
            ExitCode::FAILURE
        }
    }
}
