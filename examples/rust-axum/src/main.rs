//! A small axum server whose requests are rate limited by polylimit's tower
//! layer, from one policy document. Run several copies against one Redis and
//! they share every limit.
//!
//!     POLYLIMIT_URL=redis://127.0.0.1:6379 ADDR=127.0.0.1:3000 cargo run --release
//!
//! Routes: "/" (LIMIT per client IP), "/login" (LOGIN_LIMIT per client IP, a
//! count of its own in which only failed logins count), "/healthz" and
//! "/metrics" (exempt; /metrics is the client's counters and the policy's
//! per-rule counters in the Prometheus text format). Every limited response
//! carries the RateLimit-* headers; a denied one is 429 with Retry-After and
//! a plain-text body.

use axum::{
    extract::{ConnectInfo, State},
    http::{HeaderMap, StatusCode},
    routing::{get, post},
    Router,
};
use polylimit::tower::RateLimitLayer;
use polylimit::{Client, Policy};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// A JSON list of strings (the names are addresses and networks: no quotes
/// or backslashes to escape, which the policy would refuse anyway).
fn json_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("\"{s}\"")).collect();
    format!("[{}]", quoted.join(","))
}

async fn metrics(State((client, policy)): State<(Client, Policy)>) -> Result<String, StatusCode> {
    let mut text = client
        .stats_prometheus()
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    text += &policy
        .metrics_prometheus()
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    Ok(text)
}

/// A stand-in for a real login: the password "letmein" succeeds.
async fn login(headers: HeaderMap) -> (StatusCode, &'static str) {
    match headers.get("x-password").map(|v| v.as_bytes()) {
        Some(b"letmein") => (StatusCode::OK, "logged in\n"),
        _ => (StatusCode::UNAUTHORIZED, "wrong password\n"),
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // POLYLIMIT_URL: no silent local default (memory:// asks for one). The
    // command timeout bounds a request's wait when Redis hangs (then 503).
    let url = std::env::var("POLYLIMIT_URL")
        .map_err(|_| "POLYLIMIT_URL is not set (a Redis URL, or memory://)")?;
    let client = Client::builder()
        .name(env_or("NAME", "rust-axum"))
        .command_timeout(Duration::from_millis(500))
        .open(&url)?;
    let prefix = env_or("PREFIX", "rust-axum");
    let trusted = env_or("TRUSTED_PROXIES", "");
    let trusted: Vec<&str> = trusted
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let per_ip = client
        .limiter_builder()
        .spec(env_or("LIMIT", "10/minute"))
        .prefix(prefix.clone())
        .build()?;
    let login_limit = client
        .limiter_builder()
        .spec(env_or("LOGIN_LIMIT", "3/minute"))
        .prefix(format!("{prefix}-login"))
        .build()?;

    // The whole policy in one document (docs/integrations/contract.md):
    // rules in order, the first that matches decides.
    let document = format!(
        r#"{{
          "trusted_proxies": {},
          "exempt": ["/healthz", "/metrics"],
          "rules": [
            {{"name": "login", "paths": ["/login"], "methods": ["POST"], "limiter": 1,
              "key": "ip", "count_when": "failures"}},
            {{"name": "default", "limiter": 0, "key": "ip"}}
          ]
        }}"#,
        json_list(&trusted)
    );
    let layer = RateLimitLayer::from_document(&document, vec![per_ip, login_limit])?.peer(|p| {
        p.extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip())
    });
    let policy = layer.policy().clone();

    let app = Router::new()
        .route("/", get(|| async { "hello\n" }))
        .route("/login", post(login))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .with_state((client.clone(), policy))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind(env_or("ADDR", "127.0.0.1:3000")).await?;
    // With port 0 the address is only known now; tests read this line.
    // SIGTERM or SIGINT ends the process (nothing to flush: the state is in
    // Redis).
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rust-axum: {e}");
            ExitCode::FAILURE
        }
    }
}
