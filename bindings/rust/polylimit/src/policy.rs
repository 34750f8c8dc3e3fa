//! The HTTP request policy: what every polylimit middleware asks the core
//! for each request (docs/integrations/contract.md).
//!
//! A [`Policy`] is made once from a policy document (JSON or TOML) and the
//! limiters its rules name by index ([`Policy::from_document`]), or with a
//! client on which it makes the limiters of the limits and plans the
//! document names itself ([`Policy::load`]); it is immutable, `Send + Sync`
//! and cheap to clone. A [`LivePolicy`](crate::LivePolicy) is one that can
//! be replaced while requests run (reloaded, or watched in its file). Per request a middleware describes the request ([`Request`]),
//! calls [`Policy::prepare`], runs the check the [`Step`] asks for on the
//! step's limiter ([`Policy::limiter`] (blocking with [`Limiter::check`], or
//! [`Limiter::check_async`]), turns the decision into the response with
//! [`Policy::answer`] and, once the response's status is known, asks
//! [`Policy::refund_due`] whether the units go back (the rule's
//! `count_when`). The tower layer ([`crate::tower`]) does exactly that.
//!
//! ```no_run
//! # fn main() -> Result<(), polylimit::Error> {
//! use polylimit::policy::{Action, Policy, Request};
//! let client = polylimit::Client::open("redis://127.0.0.1:6379")?;
//! let policy = Policy::from_document(
//!     r#"{"rules": [{"name": "api", "limiter": 0, "key": "api_key"}]}"#,
//!     vec![client.limiter("100/minute")?],
//! )?;
//! let headers = policy.header_values(|name| (name == "x-api-key").then(|| b"secret".to_vec()));
//! let request = Request {
//!     method: "GET",
//!     path: b"/api/items",
//!     peer: Some("192.0.2.1:5000"),
//!     headers: &headers.iter().map(|h| h.as_deref()).collect::<Vec<_>>(),
//!     ..Request::default()
//! };
//! let step = policy.prepare(&request)?;
//! if step.action() == Action::Check {
//!     let decision = policy.limiter(&step).unwrap().check(step.key(), step.cost());
//!     let answer = policy.answer(&step, decision.as_ref().ok())?;
//!     println!("{} {:?}", answer.status, answer.headers);
//! }
//! # Ok(()) }
//! ```

use crate::error::call;
use crate::{sys, take_string, Client, Decision, Error, Limiter};
use std::ffi::{c_char, CStr};
use std::fmt;
use std::ptr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What a [`Step`] asks of the middleware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The request goes on, unchecked and with no headers.
    Proceed,
    /// Check [`Step::key`] for [`Step::cost`] on the step's limiter
    /// ([`Policy::limiter`]), then [`Policy::answer`].
    Check,
    /// Answer at once ([`Policy::answer`] with no decision): 400, 401 or 403.
    Respond,
    /// The rule keys by the application's key: describe the request again
    /// with [`Request::app_key`].
    NeedAppKey,
    /// The rule's limit is the tenant's plan's, the document has a
    /// `resolver` and its `tenants` table does not name the tenant: resolve
    /// the plan and prepare again with it ([`Policy::prepare_with_plan`];
    /// [`LivePolicy::prepare`](crate::LivePolicy::prepare) does both). Only
    /// a request prepared with its plan unresolved gets it.
    NeedPlan,
}

/// One request as the middleware describes it; everything is borrowed for
/// the call. `None` is absent (no header, an anonymous user), which differs
/// from an empty value only where the contract says so.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request<'a> {
    /// The method, any case.
    pub method: &'a str,
    /// The path as the framework routes on it, without the query: decoded
    /// (every `%XX` as its byte, `%2F` too), as bytes that need not be
    /// UTF-8. Dot segments are resolved by the core.
    pub path: &'a [u8],
    /// The framework's route template (`/users/{id}`), when it knows one.
    pub route: Option<&'a str>,
    /// The socket's other end as the server gives it (`10.0.0.1:51234`,
    /// `[::1]:80`); `None` for a peer that has no address (a unix socket).
    pub peer: Option<&'a str>,
    /// The values of the headers [`Policy::header_names`] lists, in that
    /// order, repeated headers joined by `", "` ([`Policy::header_values`]
    /// makes them); fewer entries than names: the rest are absent.
    pub headers: &'a [Option<&'a [u8]>],
    /// The authenticated user's id, as the application knows it.
    pub user: Option<&'a str>,
    /// The tenant's id.
    pub tenant: Option<&'a str>,
    /// The application's own key, for a rule keyed by `app`.
    pub app_key: Option<&'a [u8]>,
    /// Greater than 0: this request's cost, instead of the rule's.
    pub cost: i64,
}

/// What to do with a request: the answer of [`Policy::prepare`].
#[derive(Clone)]
pub struct Step {
    raw: Box<sys::polylimit_http_step>,
}

impl Step {
    /// What the middleware does next.
    pub fn action(&self) -> Action {
        match self.raw.action {
            sys::POLYLIMIT_HTTP_CHECK => Action::Check,
            sys::POLYLIMIT_HTTP_RESPOND => Action::Respond,
            sys::POLYLIMIT_HTTP_NEED_APP_KEY => Action::NeedAppKey,
            sys::POLYLIMIT_HTTP_NEED_PLAN => Action::NeedPlan,
            _ => Action::Proceed,
        }
    }

    /// [`Action::Respond`]: the status to answer (400, 401 or 403); else 0.
    pub fn status(&self) -> u16 {
        u16::try_from(self.raw.status).unwrap_or(0)
    }

    /// The index of the rule that matched, if one did.
    pub fn rule(&self) -> Option<usize> {
        usize::try_from(self.raw.rule).ok()
    }

    /// [`Action::Check`]: the units to check.
    pub fn cost(&self) -> i64 {
        self.raw.cost
    }

    /// [`Action::Check`]: the key to check (`ip:192.0.2.1`,
    /// `apikey:<sha-256 hex>`, ...); empty otherwise.
    pub fn key(&self) -> &[u8] {
        let n = self.raw.key_len.min(sys::POLYLIMIT_HTTP_KEY_MAX);
        // SAFETY: c_char and u8 have one size; n is within the array.
        unsafe { std::slice::from_raw_parts(self.raw.key.as_ptr().cast::<u8>(), n) }
    }
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Step")
            .field("action", &self.action())
            .field("status", &self.status())
            .field("rule", &self.rule())
            .field("cost", &self.cost())
            .field("key", &String::from_utf8_lossy(self.key()))
            .finish()
    }
}

/// The response to give: [`Policy::answer`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// 0: the request goes on (with `headers` added to its response); else
    /// the status to answer with, `body` and `headers`.
    pub status: u16,
    /// The body (plain text); empty when the request goes on.
    pub body: &'static str,
    /// The rate-limit headers, in order, and `Content-Type` with a body.
    pub headers: Vec<(String, String)>,
}

struct Inner {
    handle: *mut sys::polylimit_http_policy,
    /// The application's limiters: a step's limiter i below their count.
    limiters: Vec<Limiter>,
    /// The client the document's own limiters are on (Policy::load).
    client: Option<Client>,
    /// Handles on the document's own limiters (step limiter i at
    /// own[i - limiters.len()]), made when a step first names one.
    own: Vec<OnceLock<Limiter>>,
    header_names: Vec<String>,
    rule_names: Vec<String>,
    id: u64,
    resolver_timeout_ms: i64,
}

// SAFETY: a policy is immutable once made and may be used from any number
// of threads at once (C ABI); it is freed once, in Drop.
unsafe impl Send for Inner {}
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // The client's read guard: an explicit close does not race the free
        // (which can free the document's limiters).
        let _client = self.client.as_ref().map(|c| c.inner.read());
        // SAFETY: the last reference (a live policy's: one of its
        // references); no call is in flight.
        unsafe { sys::polylimit_http_policy_free(self.handle) };
    }
}

/// An HTTP request policy: its rules, keys, lists and proxies, and the
/// limiters the rules check. See the module docs.
#[derive(Clone)]
pub struct Policy {
    inner: Arc<Inner>,
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("rules", &self.inner.rule_names)
            .field("headers", &self.inner.header_names)
            .finish_non_exhaustive()
    }
}

/// A string the library owns for the policy's lifetime, as a String.
fn owned(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string the policy keeps.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn text(s: Option<&[u8]>) -> sys::polylimit_str {
    match s {
        None => sys::polylimit_str::default(),
        Some(s) => sys::polylimit_str {
            // A non-null pointer even for an empty value: empty is not absent.
            ptr: if s.is_empty() { c"".as_ptr() } else { s.as_ptr().cast() },
            len: s.len(),
        },
    }
}

impl Policy {
    /// Makes a policy from its document, JSON or TOML (JSON when its first
    /// non-space character is `{`; docs/integrations/contract.md, "The
    /// policy document"); a rule's `"limiter": i` names `limiters[i]`. A
    /// document whose rules name limits of their own (`limit`, plans) is
    /// refused here: [`load`](Self::load) makes them on a client. A document that is not valid is
    /// [`Error::InvalidArgument`] with a message naming the line and the field.
    pub fn from_document(document: &str, limiters: Vec<Limiter>) -> Result<Policy, Error> {
        Policy::make(None, document, limiters)
    }

    /// Makes a policy from its document (JSON or TOML) whose rules may name
    /// limits of their own (`limit = "10/minute"`, the tenants' plans): the
    /// policy makes those limiters on `client` and keeps them; a rule's
    /// `limiter = i` names `limiters[i]` as in
    /// [`from_document`](Self::from_document).
    pub fn load(client: &Client, document: &str, limiters: Vec<Limiter>) -> Result<Policy, Error> {
        Policy::make(Some(client), document, limiters)
    }

    fn make(client: Option<&Client>, document: &str, limiters: Vec<Limiter>) -> Result<Policy, Error> {
        // Reading the limiters' limits is a call on each: not while their
        // clients are being closed.
        let guards: Vec<_> = limiters.iter().map(|l| l.inner.client.inner.read()).collect();
        let client_guard = client.map(|c| c.inner.read());
        let raw_client = match &client_guard {
            Some(h) if h.is_null() => return Err(Error::new(-11, "client is closed")),
            Some(h) => **h,
            None => ptr::null_mut(),
        };
        let handles: Vec<*mut sys::polylimit_limiter> = limiters.iter().map(|l| l.inner.handle).collect();
        let mut handle: *mut sys::polylimit_http_policy = ptr::null_mut();
        call(|err| {
            // SAFETY: the client (or null), the document and the handle array
            // are valid for the call; the policy keeps what it needs of them.
            unsafe {
                sys::polylimit_http_policy_load(
                    raw_client,
                    document.as_ptr().cast(),
                    document.len(),
                    handles.as_ptr(),
                    handles.len(),
                    &mut handle,
                    err,
                )
            }
        })?;
        drop(client_guard);
        drop(guards);
        // SAFETY: a policy just made; this wrapper owns its reference.
        Ok(unsafe { Policy::from_raw(handle, client.cloned(), limiters) })
    }

    /// Wraps a policy reference (freed with the last clone); `limiters` are
    /// the application's, `client` the one the document's limiters are on.
    ///
    /// # Safety
    ///
    /// `handle` is a valid policy reference that this wrapper takes over.
    pub(crate) unsafe fn from_raw(
        handle: *mut sys::polylimit_http_policy,
        client: Option<Client>,
        limiters: Vec<Limiter>,
    ) -> Policy {
        // SAFETY: a valid policy (the caller's promise); the names are its own strings.
        let (header_names, rule_names, count, id, resolver_timeout_ms) = unsafe {
            let headers = (0..sys::polylimit_http_policy_header_count(handle))
                .map(|i| owned(sys::polylimit_http_policy_header_name(handle, i)))
                .collect();
            let names = (0..sys::polylimit_http_policy_rule_count(handle))
                .map(|i| owned(sys::polylimit_http_policy_rule_name(handle, i)))
                .collect();
            (
                headers,
                names,
                sys::polylimit_http_policy_limiter_count(handle),
                sys::polylimit_http_policy_id(handle),
                sys::polylimit_http_policy_resolver_timeout_ms(handle),
            )
        };
        let own = (limiters.len()..count.max(limiters.len()))
            .map(|_| OnceLock::new())
            .collect();
        Policy {
            inner: Arc::new(Inner {
                handle,
                limiters,
                client,
                own,
                header_names,
                rule_names,
                id,
                resolver_timeout_ms,
            }),
        }
    }

    /// A process-unique number of this policy (a reloaded live policy's
    /// current one has a new one).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The plan resolver's deadline, the document's `resolver.timeout_ms`;
    /// `None` when the document has no `resolver`.
    pub fn resolver_timeout(&self) -> Option<Duration> {
        u64::try_from(self.inner.resolver_timeout_ms)
            .ok()
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis)
    }

    /// The request headers the policy reads, lower case: a middleware
    /// passes their values, in this order, in [`Request::headers`].
    pub fn header_names(&self) -> &[String] {
        &self.inner.header_names
    }

    /// The values of [`header_names`](Self::header_names), in order, from a
    /// lookup of every value of one (lower-case) header name: `get` returns
    /// them joined by `", "`, or `None` when the header is absent.
    pub fn header_values(&self, mut get: impl FnMut(&str) -> Option<Vec<u8>>) -> Vec<Option<Vec<u8>>> {
        self.inner.header_names.iter().map(|n| get(n)).collect()
    }

    /// The rules' names, in order.
    pub fn rule_names(&self) -> &[String] {
        &self.inner.rule_names
    }

    /// The application's limiters given to [`from_document`](Self::from_document)
    /// or [`load`](Self::load).
    pub fn limiters(&self) -> &[Limiter] {
        &self.inner.limiters
    }

    /// The limiter a step of [`Action::Check`] is checked on (and refunded
    /// on): one of [`limiters`](Self::limiters), or one the document's own
    /// limits made (its handle is made once per policy, on first use).
    pub fn limiter(&self, step: &Step) -> Option<&Limiter> {
        let i = usize::try_from(step.raw.limiter).ok()?;
        if let Some(l) = self.inner.limiters.get(i) {
            return Some(l);
        }
        let slot = self.inner.own.get(i - self.inner.limiters.len())?;
        if let Some(l) = slot.get() {
            return Some(l);
        }
        let client = self.inner.client.as_ref()?;
        let mut handle: *mut sys::polylimit_limiter = ptr::null_mut();
        // SAFETY: a live policy; the handle is new and ours to free.
        call(|err| unsafe { sys::polylimit_http_policy_limiter(self.inner.handle, i, &mut handle, err) }).ok()?;
        // Another thread may have set it first: this handle is then freed.
        let _ = slot.set(Limiter::from_handle(handle, client.clone()));
        slot.get()
    }

    /// Decides what to do with a request (no I/O). A rule that takes the
    /// tenant's plan takes it from the document (its `tenants` table, else
    /// its `default_plan`): the step is never [`Action::NeedPlan`].
    pub fn prepare(&self, request: &Request<'_>) -> Result<Step, Error> {
        self.prepare_with_plan(request, Some(""))
    }

    /// [`prepare`](Self::prepare) with the tenant's plan as the
    /// application's resolver gave it: `None`, not resolved (the step is
    /// [`Action::NeedPlan`] when the document has a `resolver` and its
    /// `tenants` table does not name the tenant); `Some("")`, the
    /// document's table or default plan; `Some(name)`, that plan (one the
    /// document does not define: the default plan).
    pub fn prepare_with_plan(&self, request: &Request<'_>, plan: Option<&str>) -> Result<Step, Error> {
        let headers: Vec<sys::polylimit_str> = request.headers.iter().map(|h| text(*h)).collect();
        let req = sys::polylimit_http_request {
            version: sys::POLYLIMIT_HTTP_REQUEST_VERSION,
            method: text(Some(request.method.as_bytes())),
            path: text(Some(request.path)),
            route: text(request.route.map(str::as_bytes)),
            peer: text(request.peer.map(str::as_bytes)),
            headers: if headers.is_empty() {
                ptr::null()
            } else {
                headers.as_ptr()
            },
            header_count: headers.len(),
            user: text(request.user.map(str::as_bytes)),
            tenant: text(request.tenant.map(str::as_bytes)),
            app_key: text(request.app_key),
            cost: request.cost,
            plan: text(plan.map(str::as_bytes)),
        };
        let mut raw = Box::<sys::polylimit_http_step>::default();
        // SAFETY: a live policy; every string is borrowed for the call.
        call(|err| unsafe { sys::polylimit_http_prepare(self.inner.handle, &req, &mut *raw, err) })?;
        Ok(Step { raw })
    }

    /// The response for a step: [`Action::Respond`] (no decision), or
    /// [`Action::Check`] with the check's decision (`None`: the check
    /// failed; 503, or the request goes on with no headers when the
    /// policy's `on_error` is `allow`).
    pub fn answer(&self, step: &Step, decision: Option<&Decision>) -> Result<Answer, Error> {
        let d = decision.map(Decision::to_sys);
        let mut out = Box::<sys::polylimit_http_response>::default();
        call(|err| {
            // SAFETY: a live policy, a step it prepared and a decision (or null).
            unsafe {
                sys::polylimit_http_answer(
                    self.inner.handle,
                    &*step.raw,
                    d.as_ref().map_or(ptr::null(), |d| d as *const _),
                    &mut *out,
                    err,
                )
            }
        })?;
        let body: &'static str = if out.body.is_null() {
            ""
        } else {
            // SAFETY: the body is static storage (the C ABI says so), body_len long.
            let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(out.body.cast::<u8>(), out.body_len) };
            std::str::from_utf8(bytes).unwrap_or("")
        };
        let n = out.headers_len.min(sys::POLYLIMIT_HTTP_HEADERS_MAX);
        // SAFETY: the first headers_len bytes of the array are the text.
        let raw = unsafe { std::slice::from_raw_parts(out.headers.as_ptr().cast::<u8>(), n) };
        let headers = String::from_utf8_lossy(raw)
            .lines()
            .filter_map(|l| l.split_once(": ").map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        Ok(Answer {
            status: u16::try_from(out.status).unwrap_or(0),
            body,
            headers,
        })
    }

    /// True when a checked request's units go back now that its response
    /// has `status`: the rule's `count_when` does not count that status, and
    /// Redis took the units (an admitted decision, neither shadowed nor
    /// degraded). Then refund [`Step::cost`] for [`Step::key`] on
    /// [`limiter`](Self::limiter).
    pub fn refund_due(&self, step: &Step, decision: &Decision, status: u16) -> bool {
        let d = decision.to_sys();
        // SAFETY: a live policy, a step it prepared and a decision.
        unsafe { sys::polylimit_http_refund_due(self.inner.handle, &*step.raw, &d, i32::from(status)) != 0 }
    }

    /// Requests decided per rule and outcome, in the Prometheus text format:
    /// `polylimit_http_requests_total{rule="login",outcome="denied"} 3`
    /// (one series per rule and outcome, never per key).
    pub fn metrics_prometheus(&self) -> Result<String, Error> {
        // SAFETY: a live policy.
        take_string(|out, len, err| unsafe {
            sys::polylimit_http_policy_metrics_prometheus(self.inner.handle, out, len, err)
        })
    }
}
