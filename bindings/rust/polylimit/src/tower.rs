//! A tower [`Layer`](tower_layer::Layer) for HTTP services (feature `tower`).
//!
//! Each request is checked with [`Limiter::check_async`] under a key taken
//! from the request. Admitted requests reach the inner service and their
//! response carries the rate-limit headers; denied ones get
//! `429 Too Many Requests` with the same headers and `Retry-After`, as
//! every polylimit binding formats them (`polylimit_limiter_headers`).
//! A request without a key gets `400 Bad Request`, or `401 Unauthorized`
//! when the key is a credential ([`KeyBy::credential`]); it reaches the
//! inner service unlimited only with [`MissingKey::Skip`], asked for by name
//! (the rule of every polylimit integration: docs/integrations/README.md,
//! "Missing keys"). A check that fails
//! (Redis down with the failure policy `error`) gets
//! `503 Service Unavailable`.
//!
//! ```no_run
//! # async fn f() -> Result<(), polylimit::Error> {
//! use polylimit::tower::{KeyBy, RateLimitLayer};
//! let limiter = polylimit::Client::open("redis://127.0.0.1:6379")?.limiter("100/minute")?;
//! let layer = RateLimitLayer::new(limiter, KeyBy::header("X-Api-Key")?);
//! // axum: Router::new().route(...).layer(layer)
//! # Ok(()) }
//! ```

use crate::{Decision, Limiter};
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

type Extract = dyn Fn(&http::request::Parts) -> Option<Vec<u8>> + Send + Sync;

/// Where a request's rate-limit key comes from.
#[derive(Clone)]
pub struct KeyBy(Arc<Extract>, bool);

/// What a request without a key gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissingKey {
    /// `401 Unauthorized` when the key is a credential, else
    /// `400 Bad Request`; the inner service does not run (the default).
    #[default]
    Reject,
    /// The inner service, without a check or rate-limit headers.
    Skip,
}

impl KeyBy {
    /// The value of a request header (e.g. an API key), any case;
    /// `Error::InvalidArgument` for a name that is not a header name.
    pub fn header(name: &str) -> Result<KeyBy, crate::Error> {
        let name = HeaderName::try_from(name)
            .map_err(|_| crate::Error::invalid(format!("{name:?} is not an HTTP header name")))?;
        Ok(KeyBy(
            Arc::new(move |p: &http::request::Parts| {
                p.headers
                    .get(&name)
                    .map(|v| v.as_bytes().to_vec())
                    .filter(|v| !v.is_empty())
            }),
            false,
        ))
    }

    /// Marks the key as a credential (an API key, a token, a user id): a
    /// request without one gets `401 Unauthorized` instead of `400`.
    pub fn credential(self) -> KeyBy {
        KeyBy(self.0, true)
    }

    /// Any function of the request head (method, URI, headers, extensions).
    pub fn func(f: impl Fn(&http::request::Parts) -> Option<Vec<u8>> + Send + Sync + 'static) -> KeyBy {
        KeyBy(Arc::new(f), false)
    }

    /// The client's IP address: the peer address that `peer` reads from the
    /// request (axum: `ConnectInfo<SocketAddr>` in the extensions), unless
    /// that peer is one of `trusted_proxies`; then `X-Forwarded-For` is
    /// walked from the right, past trusted proxies, to the first address
    /// that is not one. The leftmost entries are whatever the client wrote,
    /// so they are never trusted.
    pub fn client_ip(
        trusted_proxies: Vec<IpAddr>,
        peer: impl Fn(&http::request::Parts) -> Option<IpAddr> + Send + Sync + 'static,
    ) -> KeyBy {
        KeyBy(
            Arc::new(move |p: &http::request::Parts| {
                let ip = client_ip(peer(p)?, p.headers.get_all("x-forwarded-for").iter(), &trusted_proxies)?;
                Some(ip.to_string().into_bytes())
            }),
            false,
        )
    }
}

/// The client address behind `peer` (see [`KeyBy::client_ip`]). None when a
/// trusted proxy sent a malformed or empty `X-Forwarded-For`.
pub fn client_ip<'a>(
    peer: IpAddr,
    forwarded_for: impl Iterator<Item = &'a HeaderValue>,
    trusted_proxies: &[IpAddr],
) -> Option<IpAddr> {
    if !trusted_proxies.contains(&peer) {
        return Some(peer);
    }
    let mut hops = Vec::new();
    for v in forwarded_for {
        for part in v.to_str().ok()?.split(',') {
            hops.push(part.trim().parse::<IpAddr>().ok()?);
        }
    }
    hops.into_iter().rev().find(|ip| !trusted_proxies.contains(ip))
}

/// Adds rate limiting to a service; see the module docs.
#[derive(Clone)]
pub struct RateLimitLayer {
    limiter: Limiter,
    key: KeyBy,
    cost: i64,
    missing_key: MissingKey,
}

impl RateLimitLayer {
    /// Checks every request at cost 1.
    pub fn new(limiter: Limiter, key: KeyBy) -> RateLimitLayer {
        RateLimitLayer {
            limiter,
            key,
            cost: 1,
            missing_key: MissingKey::Reject,
        }
    }

    /// What a request without a key gets (default [`MissingKey::Reject`]).
    pub fn on_missing_key(mut self, missing_key: MissingKey) -> RateLimitLayer {
        self.missing_key = missing_key;
        self
    }

    /// Checks every request at this cost instead.
    pub fn cost(mut self, cost: i64) -> RateLimitLayer {
        self.cost = cost;
        self
    }
}

impl<S> tower_layer::Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;
    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`RateLimitLayer`] makes.
#[derive(Clone)]
pub struct RateLimit<S> {
    inner: S,
    layer: RateLimitLayer,
}

fn with_headers<B>(mut resp: Response<B>, d: &Decision) -> Response<B> {
    if let Ok(headers) = d.headers() {
        for (k, v) in headers {
            if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
                resp.headers_mut().append(k, v);
            }
        }
    }
    resp
}

fn status<B: Default>(code: StatusCode) -> Response<B> {
    let mut r = Response::new(B::default());
    *r.status_mut() = code;
    r
}

impl<S, ReqBody, ResBody> tower_service::Service<Request<ReqBody>> for RateLimit<S>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    ReqBody: Send + 'static,
    ResBody: Default + Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        // The service that poll_ready readied is the one to call; a fresh
        // clone stays behind for the next request (tower's Service docs).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (parts, body) = req.into_parts();
        let key = (self.layer.key.0)(&parts);
        let req = Request::from_parts(parts, body);
        let limiter = self.layer.limiter.clone();
        let cost = self.layer.cost;
        let missing_key = self.layer.missing_key;
        let credential = self.layer.key.1;
        Box::pin(async move {
            let Some(key) = key else {
                return match (missing_key, credential) {
                    (MissingKey::Skip, _) => inner.call(req).await,
                    (MissingKey::Reject, true) => Ok(status(StatusCode::UNAUTHORIZED)),
                    (MissingKey::Reject, false) => Ok(status(StatusCode::BAD_REQUEST)),
                };
            };
            match limiter.check_async(key, cost).await {
                Ok(d) if d.allowed => Ok(with_headers(inner.call(req).await?, &d)),
                Ok(d) => Ok(with_headers(status(StatusCode::TOO_MANY_REQUESTS), &d)),
                Err(_) => Ok(status(StatusCode::SERVICE_UNAVAILABLE)),
            }
        })
    }
}
