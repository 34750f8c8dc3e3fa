//! A small axum server whose requests are rate limited by polylimit's tower
//! layer. Run several copies against one Redis and they share every limit.
//!
//!     POLYLIMIT_URL=redis://127.0.0.1:6379 ADDR=127.0.0.1:3000 cargo run --release
//!
//! Routes: "/" (LIMIT per client IP), "/login" (LOGIN_LIMIT, a count of its
//! own), "/healthz" and "/metrics" (exempt; /metrics is the client's
//! counters in the Prometheus text format). Every limited response carries
//! the RateLimit-* headers; a denied one is 429 with Retry-After.

use axum::{
    extract::{ConnectInfo, State},
    routing::{get, post},
    Router,
};
use polylimit::tower::{KeyBy, RateLimitLayer};
use polylimit::Client;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// The client IP as the key: the peer address, or, behind one of
/// TRUSTED_PROXIES, what they say in X-Forwarded-For.
fn client_ip(trusted: &[IpAddr]) -> KeyBy {
    KeyBy::client_ip(trusted.to_vec(), |parts| {
        parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip())
    })
}

async fn metrics(State(client): State<Client>) -> Result<String, axum::http::StatusCode> {
    client
        .stats_prometheus()
        .map_err(|_| axum::http::StatusCode::INTERNAL_SERVER_ERROR)
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
    let trusted = env_or("TRUSTED_PROXIES", "")
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse::<IpAddr>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("TRUSTED_PROXIES: {e}"))?;
    let per_ip = client
        .limiter_builder()
        .spec(env_or("LIMIT", "10/minute"))
        .prefix(prefix.clone())
        .build()?;
    let login = client
        .limiter_builder()
        .spec(env_or("LOGIN_LIMIT", "3/minute"))
        .prefix(format!("{prefix}-login"))
        .build()?;

    // A layer on a Router covers the routes added before it: each limited
    // group is its own Router, merged with the exempt routes.
    let limited = Router::new()
        .route("/", get(|| async { "hello\n" }))
        .layer(RateLimitLayer::new(per_ip, client_ip(&trusted)));
    let login = Router::new()
        .route("/login", post(|| async { "logged in\n" }))
        .layer(RateLimitLayer::new(login, client_ip(&trusted)));
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .with_state(client.clone())
        .merge(limited)
        .merge(login);

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
