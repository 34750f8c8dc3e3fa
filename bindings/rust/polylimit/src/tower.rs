//! A tower [`Layer`](tower_layer::Layer) for HTTP services (feature `tower`).
//!
//! The layer decides nothing itself: for each request it describes the
//! request to a [`Policy`] (the core's one HTTP contract,
//! docs/integrations/contract.md), runs the check the policy asks for with
//! [`Limiter::check_async`] (no runtime thread blocks on Redis), and applies
//! the answer: the request goes on with the rate-limit headers, or is
//! answered `429 Too Many Requests` (with `Retry-After`), `400`/`401` (no
//! key), `403` (the deny list) or `503` (the check failed), each with its
//! plain-text body and `Content-Type`. After the response, a rule whose
//! `count_when` does not count its status has its units refunded.
//!
//! Three ways to make one:
//!
//! - [`RateLimitLayer::from_document`]: a policy document (rules by path or
//!   route and method, keys, costs, lists, proxies, exemptions) and the
//!   limiters its rules name by index;
//! - [`RateLimitLayer::from_live`]: a [`LivePolicy`] (a document or file
//!   that can be reloaded while the service runs, with its own limits and
//!   plans, and the application's plan resolver): each request takes the
//!   current policy once and keeps it to the end;
//! - [`RateLimitLayer::new`]: one limiter and a [`KeyBy`], with builder
//!   methods for the common options; it makes the same kind of document.
//!
//! ```no_run
//! # async fn f() -> Result<(), polylimit::Error> {
//! use polylimit::tower::{KeyBy, RateLimitLayer};
//! let client = polylimit::Client::open("redis://127.0.0.1:6379")?;
//! let layer = RateLimitLayer::new(client.limiter("100/minute")?, KeyBy::api_key("X-Api-Key")?);
//! let layer = RateLimitLayer::from_document(
//!     r#"{"trusted_proxies": ["10.0.0.0/8"],
//!         "exempt": ["/healthz"],
//!         "rules": [{"name": "login", "paths": ["/login"], "methods": ["POST"],
//!                    "limiter": 0, "count_when": "failures"},
//!                   {"name": "default", "limiter": 1}]}"#,
//!     vec![client.limiter("5/minute")?, client.limiter("100/minute")?],
//! )?;
//! // axum: Router::new().route(...).layer(layer.peer(|p| ...))
//! # Ok(()) }
//! ```
//!
//! The layer reads from the request what the policy needs: the method, the
//! path, the headers the policy names, the peer address ([`peer`]; by
//! default a [`SocketAddr`] in the request's extensions), the route template
//! ([`route`]), and what the application supplies: the user ([`user`]), the
//! tenant ([`tenant`]), a key of its own for rules keyed by `app`
//! ([`app_key`]) and a cost ([`cost_fn`]).
//!
//! [`peer`]: RateLimitLayer::peer
//! [`route`]: RateLimitLayer::route
//! [`user`]: RateLimitLayer::user
//! [`tenant`]: RateLimitLayer::tenant
//! [`app_key`]: RateLimitLayer::app_key
//! [`cost_fn`]: RateLimitLayer::cost_fn

use crate::policy::{Action, Answer, Request as Described, Step};
use crate::{Error, Limiter, LivePolicy, Policy};
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use std::borrow::Cow;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

type Parts = http::request::Parts;
type Extract = dyn Fn(&Parts) -> Option<Vec<u8>> + Send + Sync;
type Text = dyn Fn(&Parts) -> Option<String> + Send + Sync;
type Peer = dyn Fn(&Parts) -> Option<IpAddr> + Send + Sync;
type Cost = dyn Fn(&Parts) -> Option<i64> + Send + Sync;

/// Where a request's rate-limit key comes from: one of the core's key parts
/// (docs/integrations/contract.md, "Keys"), a composition of them
/// ([`KeyBy::all`]) or alternatives ([`KeyBy::first_of`]).
#[derive(Clone)]
pub struct KeyBy {
    /// Alternatives, each a composition of part names as the document has them.
    alternatives: Vec<Vec<String>>,
    /// The application's function, for the part "app" (or "user", see credential).
    app: Option<Arc<Extract>>,
    /// The function's value is the request's user (a credential).
    app_is_user: bool,
    /// From KeyBy::client_ip.
    trusted: Vec<IpAddr>,
    peer: Option<Arc<Peer>>,
}

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

/// Which responses keep their units (the rule's `count_when`); the others
/// are refunded once the response is known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CountWhen {
    /// Every response (the default).
    #[default]
    All,
    /// Status 400 and above (a failed login).
    Failures,
    /// Below 400.
    Successes,
    /// These statuses, classes and ranges: `"401"`, `"5xx"`, `"400-403"`.
    Statuses(Vec<String>),
}

/// What a request gets when its check fails (Redis cannot decide and the
/// limiter's own failure policy did not answer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnError {
    /// `503 Service Unavailable` (the default).
    #[default]
    Unavailable,
    /// The inner service, without rate-limit headers.
    Allow,
}

fn header_name(name: &str) -> Result<HeaderName, Error> {
    HeaderName::try_from(name).map_err(|_| Error::invalid(format!("{name:?} is not an HTTP header name")))
}

impl KeyBy {
    fn part(part: String) -> KeyBy {
        KeyBy {
            alternatives: vec![vec![part]],
            app: None,
            app_is_user: false,
            trusted: Vec::new(),
            peer: None,
        }
    }

    /// The value of a request header, any case, hashed into the key
    /// (`header:<name>:<sha-256 hex>`); `Error::InvalidArgument` for a name
    /// that is not a header name. An absent or empty header is no key.
    pub fn header(name: &str) -> Result<KeyBy, Error> {
        header_name(name)?;
        Ok(KeyBy::part(format!("header:{name}")))
    }

    /// An API key header (a credential): hashed into the key
    /// (`apikey:<sha-256 hex>`), never stored; a request without one is
    /// answered 401.
    pub fn api_key(name: &str) -> Result<KeyBy, Error> {
        header_name(name)?;
        Ok(KeyBy::part(format!("api_key:{name}")))
    }

    /// Marks the key as a credential: a request without one gets
    /// `401 Unauthorized` instead of `400`. A [`header`](Self::header) key
    /// becomes an [`api_key`](Self::api_key) key; a [`func`](Self::func)
    /// key's value becomes the request's user (`user:<value>`).
    pub fn credential(mut self) -> KeyBy {
        for alt in &mut self.alternatives {
            for p in alt.iter_mut() {
                if let Some(h) = p.strip_prefix("header:") {
                    *p = format!("api_key:{h}");
                } else if p == "app" {
                    *p = "user".to_string();
                    self.app_is_user = true;
                }
            }
        }
        self
    }

    /// Any function of the request head (method, URI, headers, extensions):
    /// the application's own key (the part `app`), stored as given.
    /// `None` or an empty key is no key.
    pub fn func(f: impl Fn(&Parts) -> Option<Vec<u8>> + Send + Sync + 'static) -> KeyBy {
        KeyBy {
            app: Some(Arc::new(f)),
            ..KeyBy::part("app".to_string())
        }
    }

    /// The client's IP address (`ip:<address>`, IPv6 by its /64): the peer
    /// address that `peer` reads from the request (axum:
    /// `ConnectInfo<SocketAddr>` in the extensions), or, when that peer is
    /// one of `trusted_proxies`, the first untrusted hop of
    /// `X-Forwarded-For` from the right (the core's one algorithm).
    pub fn client_ip(
        trusted_proxies: Vec<IpAddr>,
        peer: impl Fn(&Parts) -> Option<IpAddr> + Send + Sync + 'static,
    ) -> KeyBy {
        KeyBy {
            trusted: trusted_proxies,
            peer: Some(Arc::new(peer)),
            ..KeyBy::part("ip".to_string())
        }
    }

    /// The client's IP address, from the layer's peer
    /// ([`RateLimitLayer::peer`]) and trusted proxies
    /// ([`RateLimitLayer::trusted_proxies`]).
    pub fn ip() -> KeyBy {
        KeyBy::part("ip".to_string())
    }

    /// The user the application supplies ([`RateLimitLayer::user`]), a credential.
    pub fn user() -> KeyBy {
        KeyBy::part("user".to_string())
    }

    /// The tenant the application supplies ([`RateLimitLayer::tenant`]), a credential.
    pub fn tenant() -> KeyBy {
        KeyBy::part("tenant".to_string())
    }

    /// The route (`route:<METHOD> <template, else the path>`): one budget
    /// per route for all clients.
    pub fn route() -> KeyBy {
        KeyBy::part("route".to_string())
    }

    /// Every part of `keys` together (`"tenant+route"`): missing when any
    /// is. Each must be a single composition (no alternatives); at most one
    /// may be a [`func`](Self::func).
    pub fn all(keys: impl IntoIterator<Item = KeyBy>) -> Result<KeyBy, Error> {
        let mut out = KeyBy {
            alternatives: vec![Vec::new()],
            ..KeyBy::ip()
        };
        for k in keys {
            if k.alternatives.len() != 1 {
                return Err(Error::invalid("KeyBy::all: a key with alternatives cannot be a part"));
            }
            out.merge(&k)?;
            out.alternatives[0].extend(k.alternatives.into_iter().flatten());
        }
        if out.alternatives[0].is_empty() {
            return Err(Error::invalid("KeyBy::all: no keys"));
        }
        Ok(out)
    }

    /// The first of `keys` that the request has (`["api_key", "ip"]`).
    pub fn first_of(keys: impl IntoIterator<Item = KeyBy>) -> Result<KeyBy, Error> {
        let mut out = KeyBy {
            alternatives: Vec::new(),
            ..KeyBy::ip()
        };
        for k in keys {
            out.merge(&k)?;
            out.alternatives.extend(k.alternatives);
        }
        if out.alternatives.is_empty() {
            return Err(Error::invalid("KeyBy::first_of: no keys"));
        }
        Ok(out)
    }

    /// Takes over `k`'s function and proxies.
    fn merge(&mut self, k: &KeyBy) -> Result<(), Error> {
        if let Some(f) = &k.app {
            if self.app.is_some() {
                return Err(Error::invalid("a key can have one application function (KeyBy::func)"));
            }
            self.app = Some(f.clone());
            self.app_is_user = k.app_is_user;
        }
        self.trusted.extend(k.trusted.iter().copied());
        if k.peer.is_some() {
            self.peer = k.peer.clone();
        }
        Ok(())
    }

    /// The rule's `key`, as JSON.
    fn json(&self) -> String {
        let comp = |alt: &Vec<String>| json_str(&alt.join("+"));
        if self.alternatives.len() == 1 {
            comp(&self.alternatives[0])
        } else {
            format!("[{}]", self.alternatives.iter().map(comp).collect::<Vec<_>>().join(","))
        }
    }
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|s| json_str(s)).collect::<Vec<_>>().join(","))
}

/// The options of a layer made by [`RateLimitLayer::new`]: its document.
#[derive(Clone)]
struct Spec {
    limiter: Limiter,
    key: KeyBy,
    cost: i64,
    missing_key: MissingKey,
    paths: Vec<String>,
    routes: Vec<String>,
    methods: Vec<String>,
    exempt: Vec<String>,
    trusted: Vec<String>,
    count_when: CountWhen,
    send_headers: bool,
    on_error: OnError,
}

impl Spec {
    fn document(&self) -> String {
        let mut trusted: Vec<String> = self.key.trusted.iter().map(IpAddr::to_string).collect();
        trusted.extend(self.trusted.iter().cloned());
        let mut rule = format!(
            r#"{{"name":"default","limiter":0,"key":{},"cost":{},"on_missing_key":{}"#,
            self.key.json(),
            self.cost,
            json_str(match self.missing_key {
                MissingKey::Reject => "reject",
                MissingKey::Skip => "skip",
            })
        );
        for (field, list) in [
            ("paths", &self.paths),
            ("routes", &self.routes),
            ("methods", &self.methods),
        ] {
            if !list.is_empty() {
                rule += &format!(",{}:{}", json_str(field), json_list(list));
            }
        }
        let count_when = match &self.count_when {
            CountWhen::All => json_str("all"),
            CountWhen::Failures => json_str("failures"),
            CountWhen::Successes => json_str("successes"),
            // A number where it is one, so "401" and 401 mean the same.
            CountWhen::Statuses(s) => format!(
                "[{}]",
                s.iter()
                    .map(|v| v.parse::<u16>().map_or_else(|_| json_str(v), |n| n.to_string()))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        rule += &format!(r#","count_when":{count_when}}}"#);
        format!(
            r#"{{"version":1,"trusted_proxies":{},"exempt":{},"send_headers":{},"on_error":{},"rules":[{rule}]}}"#,
            json_list(&trusted),
            json_list(&self.exempt),
            self.send_headers,
            json_str(match self.on_error {
                OnError::Unavailable => "unavailable",
                OnError::Allow => "allow",
            }),
        )
    }
}

/// Adds rate limiting to a service; see the module docs.
#[derive(Clone)]
pub struct RateLimitLayer {
    policy: Policy,
    live: Option<LivePolicy>,
    spec: Option<Box<Spec>>,
    app: Option<Arc<Extract>>,
    app_is_user: bool,
    user: Option<Arc<Text>>,
    tenant: Option<Arc<Text>>,
    route: Option<Arc<Text>>,
    peer: Option<Arc<Peer>>,
    cost: Option<Arc<Cost>>,
}

impl RateLimitLayer {
    /// Checks every request at cost 1 on `limiter` under `key` (one rule,
    /// named `default`). The builder methods below add paths, methods,
    /// exemptions, proxies and the rest; see also
    /// [`from_document`](Self::from_document).
    pub fn new(limiter: Limiter, key: KeyBy) -> RateLimitLayer {
        let spec = Spec {
            limiter,
            key,
            cost: 1,
            missing_key: MissingKey::Reject,
            paths: Vec::new(),
            routes: Vec::new(),
            methods: Vec::new(),
            exempt: Vec::new(),
            trusted: Vec::new(),
            count_when: CountWhen::All,
            send_headers: true,
            on_error: OnError::Unavailable,
        };
        // Only strings checked when the KeyBy was made, and addresses, go
        // into this document: it is valid.
        RateLimitLayer::from_spec(spec).expect("the document of a new layer is valid")
    }

    /// A layer over a policy document and the limiters its rules name by
    /// index ([`Policy::from_document`]); `Error::InvalidArgument`, naming
    /// the line and the field, for a document that is not valid.
    pub fn from_document(document: &str, limiters: Vec<Limiter>) -> Result<RateLimitLayer, Error> {
        Ok(RateLimitLayer::from_policy(Policy::from_document(document, limiters)?))
    }

    /// A layer over a policy made before (shared with other layers, or
    /// middleware of other kinds: its metrics are counted together).
    pub fn from_policy(policy: Policy) -> RateLimitLayer {
        RateLimitLayer {
            policy,
            live: None,
            spec: None,
            app: None,
            app_is_user: false,
            user: None,
            tenant: None,
            route: None,
            peer: None,
            cost: None,
        }
    }

    /// A layer over a live policy: each request takes its current policy
    /// ([`LivePolicy::current`]) and uses it to the end, so a reload (or a
    /// watched file's change) applies from the next request; a tenant's plan
    /// comes from the live policy's resolver when the document asks for it.
    pub fn from_live(live: LivePolicy) -> RateLimitLayer {
        let mut layer = RateLimitLayer::from_policy(live.current());
        layer.live = Some(live);
        layer
    }

    fn from_spec(spec: Spec) -> Result<RateLimitLayer, Error> {
        let policy = Policy::from_document(&spec.document(), vec![spec.limiter.clone()])?;
        let mut layer = RateLimitLayer::from_policy(policy);
        layer.app = spec.key.app.clone();
        layer.app_is_user = spec.key.app_is_user;
        layer.peer = spec.key.peer.clone();
        layer.spec = Some(Box::new(spec));
        Ok(layer)
    }

    /// A layer made by `new`, with `edit` applied to its options.
    fn edit(self, edit: impl FnOnce(&mut Spec)) -> Result<RateLimitLayer, Error> {
        let Some(spec) = &self.spec else {
            return Err(Error::invalid(
                "this layer was made from a policy document: give this option in the document",
            ));
        };
        let mut spec = (**spec).clone();
        edit(&mut spec);
        let made = RateLimitLayer::from_spec(spec)?;
        Ok(RateLimitLayer {
            policy: made.policy,
            spec: made.spec,
            ..self
        })
    }

    /// The policy this layer asks (made [`from_live`](Self::from_live):
    /// the one that was current then; see [`live`](Self::live)).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The live policy of a layer made [`from_live`](Self::from_live).
    pub fn live(&self) -> Option<&LivePolicy> {
        self.live.as_ref()
    }

    /// Requests decided per rule and outcome, Prometheus text
    /// ([`Policy::metrics_prometheus`]; a live policy's also counts its
    /// reloads, [`LivePolicy::metrics_prometheus`]).
    pub fn metrics_prometheus(&self) -> Result<String, Error> {
        match &self.live {
            Some(live) => live.metrics_prometheus(),
            None => self.policy.metrics_prometheus(),
        }
    }

    /// What a request without a key gets (default [`MissingKey::Reject`]).
    ///
    /// # Panics
    ///
    /// On a layer made from a document (`on_missing_key` is a rule's field there).
    pub fn on_missing_key(self, missing_key: MissingKey) -> RateLimitLayer {
        self.edit(|s| s.missing_key = missing_key)
            .expect("on_missing_key: a layer made by RateLimitLayer::new")
    }

    /// Checks every request at this cost instead (a cost function,
    /// [`cost_fn`](Self::cost_fn), wins).
    ///
    /// # Panics
    ///
    /// When `cost` is below 1, or on a layer made from a document.
    pub fn cost(self, cost: i64) -> RateLimitLayer {
        assert!(cost >= 1, "RateLimitLayer::cost: {cost} is below 1");
        self.edit(|s| s.cost = cost)
            .expect("cost: a layer made by RateLimitLayer::new")
    }

    /// Limits only these paths (globs: `*` any run of characters, `?` one).
    pub fn paths<S: Into<String>>(self, paths: impl IntoIterator<Item = S>) -> Result<RateLimitLayer, Error> {
        let paths = paths.into_iter().map(Into::into).collect();
        self.edit(|s| s.paths = paths)
    }

    /// Limits only these route templates ([`route`](Self::route) gives the
    /// request's).
    pub fn routes<S: Into<String>>(self, routes: impl IntoIterator<Item = S>) -> Result<RateLimitLayer, Error> {
        let routes = routes.into_iter().map(Into::into).collect();
        self.edit(|s| s.routes = routes)
    }

    /// Limits only these methods.
    pub fn methods<S: Into<String>>(self, methods: impl IntoIterator<Item = S>) -> Result<RateLimitLayer, Error> {
        let methods = methods.into_iter().map(Into::into).collect();
        self.edit(|s| s.methods = methods)
    }

    /// Never limits these paths (globs): health checks, metrics.
    pub fn exempt<S: Into<String>>(self, paths: impl IntoIterator<Item = S>) -> Result<RateLimitLayer, Error> {
        let paths = paths.into_iter().map(Into::into).collect();
        self.edit(|s| s.exempt = paths)
    }

    /// Addresses and networks (CIDR) whose `X-Forwarded-For` is believed.
    pub fn trusted_proxies<S: Into<String>>(
        self,
        proxies: impl IntoIterator<Item = S>,
    ) -> Result<RateLimitLayer, Error> {
        let proxies = proxies.into_iter().map(Into::into).collect();
        self.edit(|s| s.trusted = proxies)
    }

    /// Which responses keep their units (default [`CountWhen::All`]).
    pub fn count_when(self, count_when: CountWhen) -> Result<RateLimitLayer, Error> {
        self.edit(|s| s.count_when = count_when)
    }

    /// Whether admitted responses carry the rate-limit headers too (a 429
    /// always does); default true.
    pub fn send_headers(self, yes: bool) -> Result<RateLimitLayer, Error> {
        self.edit(|s| s.send_headers = yes)
    }

    /// What a request gets when its check fails (default [`OnError::Unavailable`]).
    pub fn on_error(self, on_error: OnError) -> Result<RateLimitLayer, Error> {
        self.edit(|s| s.on_error = on_error)
    }

    /// The peer address of a request (the socket's other end). Default: a
    /// [`SocketAddr`] in the request's extensions. axum:
    /// `.peer(|p| p.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()))`.
    pub fn peer(mut self, f: impl Fn(&Parts) -> Option<IpAddr> + Send + Sync + 'static) -> RateLimitLayer {
        self.peer = Some(Arc::new(f));
        self
    }

    /// The route template the framework matched (axum: `MatchedPath`).
    pub fn route(mut self, f: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> RateLimitLayer {
        self.route = Some(Arc::new(f));
        self
    }

    /// The authenticated user's id (for keys with `user`, the `users` lists).
    pub fn user(mut self, f: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> RateLimitLayer {
        self.user = Some(Arc::new(f));
        self
    }

    /// The tenant's id (for keys with `tenant`, the `tenants` lists).
    pub fn tenant(mut self, f: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> RateLimitLayer {
        self.tenant = Some(Arc::new(f));
        self
    }

    /// The application's own key, for rules keyed by `app` (asked only
    /// when such a rule matches); `None` or empty is no key.
    pub fn app_key(mut self, f: impl Fn(&Parts) -> Option<Vec<u8>> + Send + Sync + 'static) -> RateLimitLayer {
        self.app = Some(Arc::new(f));
        self.app_is_user = false;
        self
    }

    /// The request's cost, instead of the rule's (`None`: the rule's).
    pub fn cost_fn(mut self, f: impl Fn(&Parts) -> Option<i64> + Send + Sync + 'static) -> RateLimitLayer {
        self.cost = Some(Arc::new(f));
        self
    }
}

impl<S> tower_layer::Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;
    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            layer: Arc::new(self.clone()),
        }
    }
}

/// The service [`RateLimitLayer`] makes.
#[derive(Clone)]
pub struct RateLimit<S> {
    inner: S,
    layer: Arc<RateLimitLayer>,
}

/// Every value of a header, joined by ", " (None when absent).
fn joined(headers: &http::HeaderMap, name: &str) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    for v in headers.get_all(name) {
        match &mut out {
            None => out = Some(v.as_bytes().to_vec()),
            Some(o) => {
                o.extend_from_slice(b", ");
                o.extend_from_slice(v.as_bytes());
            }
        }
    }
    out
}

/// The path as routers match it and path globs are written: every valid
/// `%XX` decoded to its byte (`%2F` too, as Go's `URL.Path`, ASGI and
/// servlets do), an invalid escape left as it is; bytes, not necessarily
/// UTF-8.
fn decoded_path(raw: &str) -> Cow<'_, [u8]> {
    let raw = raw.as_bytes();
    if !raw.contains(&b'%') {
        return Cow::Borrowed(raw);
    }
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' && i + 2 < raw.len() {
            if let (Some(hi), Some(lo)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                out.push(hi << 4 | lo);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    Cow::Owned(out)
}

fn add_headers<B>(resp: &mut Response<B>, headers: &[(String, String)]) {
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (HeaderName::try_from(k.as_str()), HeaderValue::try_from(v.as_str())) {
            resp.headers_mut().append(k, v);
        }
    }
}

fn respond<B: From<&'static str>>(a: &Answer) -> Response<B> {
    let mut r = Response::new(B::from(a.body));
    *r.status_mut() = StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    add_headers(&mut r, &a.headers);
    r
}

/// A failure of the policy itself (a malformed description): 500, no detail.
fn internal<B: From<&'static str>>() -> Response<B> {
    let mut r = Response::new(B::from(""));
    *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    r
}

impl RateLimitLayer {
    /// Describes the request and asks the policy: the step (no I/O, but
    /// for the plan resolver of a live policy's document).
    async fn step(&self, policy: &Policy, p: &Parts) -> Result<Step, Error> {
        let peer = match &self.peer {
            Some(f) => f(p),
            None => p.extensions.get::<SocketAddr>().map(SocketAddr::ip),
        }
        .map(|ip| ip.to_string());
        let route = self.route.as_ref().and_then(|f| f(p));
        let values = policy.header_values(|name| joined(&p.headers, name));
        let headers: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
        let user = match (&self.app, self.app_is_user) {
            (Some(f), true) => f(p).map(|v| String::from_utf8_lossy(&v).into_owned()),
            _ => self.user.as_ref().and_then(|f| f(p)),
        };
        let tenant = self.tenant.as_ref().and_then(|f| f(p));
        let path = decoded_path(p.uri.path());
        let mut request = Described {
            method: p.method.as_str(),
            path: &path,
            route: route.as_deref(),
            peer: peer.as_deref(),
            headers: &headers,
            user: user.as_deref(),
            tenant: tenant.as_deref(),
            app_key: None,
            cost: self.cost.as_ref().and_then(|f| f(p)).unwrap_or(0),
        };
        // Unresolved (None) only where a resolver can answer: else the
        // document's tenants table or default plan.
        let resolver = self.live.as_ref().filter(|l| l.has_resolver());
        let mut plan: Option<String> = if resolver.is_some() { None } else { Some(String::new()) };
        // Asked only when a rule keyed by "app" matches.
        let app = std::sync::OnceLock::<Vec<u8>>::new();
        // At most one NEED_APP_KEY and one NEED_PLAN, in either order.
        for _ in 0..3 {
            let step = policy.prepare_with_plan(&request, plan.as_deref())?;
            match step.action() {
                Action::NeedAppKey if request.app_key.is_none() => {
                    let key = match (&self.app, self.app_is_user) {
                        (Some(f), false) => f(p).unwrap_or_default(),
                        _ => Vec::new(),
                    };
                    request.app_key = Some(app.get_or_init(|| key));
                }
                Action::NeedPlan if plan.is_none() => {
                    let live = resolver.expect("NeedPlan only with a resolver");
                    plan = Some(live.resolve_plan(policy, request.tenant.unwrap_or("")).await);
                }
                _ => return Ok(step),
            }
        }
        policy.prepare_with_plan(&request, plan.as_deref())
    }
}

impl<S, ReqBody, ResBody> tower_service::Service<Request<ReqBody>> for RateLimit<S>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    ReqBody: Send + 'static,
    ResBody: From<&'static str> + Send + 'static,
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
        let layer = self.layer.clone();
        Box::pin(async move {
            // One policy for the whole request, a live one's current.
            let policy = match &layer.live {
                Some(live) => live.current(),
                None => layer.policy.clone(),
            };
            let policy = &policy;
            let (parts, body) = req.into_parts();
            let step = layer.step(policy, &parts).await;
            let req = Request::from_parts(parts, body);
            let step = match step {
                Ok(s) => s,
                Err(_) => return Ok(internal()),
            };
            match step.action() {
                Action::Check => {}
                Action::Respond => {
                    return Ok(match policy.answer(&step, None) {
                        Ok(a) => respond(&a),
                        Err(_) => internal(),
                    })
                }
                // Proceed, or an app key still missing (not answered by prepare).
                _ => return inner.call(req).await,
            }
            let Some(limiter) = policy.limiter(&step) else {
                return inner.call(req).await;
            };
            let decision = limiter.check_async(step.key(), step.cost()).await.ok();
            let answer = match policy.answer(&step, decision.as_ref()) {
                Ok(a) => a,
                Err(_) => return Ok(internal()),
            };
            if answer.status != 0 {
                return Ok(respond(&answer));
            }
            let mut resp = inner.call(req).await?;
            add_headers(&mut resp, &answer.headers);
            // count_when: the units go back when the rule does not count
            // this status (and Redis took them). Settled before the response
            // leaves, so the client's next request sees the refund.
            if let Some(d) = &decision {
                if policy.refund_due(&step, d, resp.status().as_u16()) {
                    let _ = limiter.refund_async(step.key(), step.cost()).await;
                }
            }
            Ok(resp)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::decoded_path;

    #[test]
    fn the_path_is_percent_decoded_as_routers_match_it() {
        let d = |raw: &str| decoded_path(raw).into_owned();
        assert_eq!(d("/a/b"), b"/a/b");
        assert!(matches!(decoded_path("/a/b"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(d("/a%20b"), b"/a b");
        assert_eq!(d("/a%2Fb"), b"/a/b");
        assert_eq!(d("/a%2fb"), b"/a/b");
        assert_eq!(d("/a%zz"), b"/a%zz");
        assert_eq!(d("/%"), b"/%");
        assert_eq!(d("/a%2"), b"/a%2");
        assert_eq!(d("/%%41"), b"/%A");
        assert_eq!(d("/%2541"), b"/%41");
        // Bytes, not text: an escape of a byte that is not UTF-8 stays that byte.
        assert_eq!(d("/%FF%c3%A9"), b"/\xff\xc3\xa9");
    }
}
