//! The live policy: an HTTP request policy that can be replaced while
//! requests run (docs/policy.md).

use crate::error::call;
use crate::policy::Policy;
#[cfg(feature = "tokio")]
use crate::policy::{Action, Request, Step};
use crate::{cstring, sys, take_string, Client, Error, Limiter};
use std::ffi::{c_char, CStr};
use std::fmt;
use std::path::Path;
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(feature = "tokio")]
use std::{future::Future, pin::Pin};

/// The future a plan resolver returns: the tenant's plan, or an error (which
/// gives the default plan).
#[cfg(feature = "tokio")]
pub type PlanFuture = Pin<Box<dyn Future<Output = Result<String, Box<dyn std::error::Error + Send + Sync>>> + Send>>;

#[cfg(feature = "tokio")]
type Resolve = dyn Fn(String) -> PlanFuture + Send + Sync;

struct LiveInner {
    handle: *mut sys::polylimit_http_live,
    client: Client,
    limiters: Vec<Limiter>,
    /// The current policy as last wrapped, reused while its id is current.
    current: Mutex<Option<Policy>>,
    #[cfg(feature = "tokio")]
    resolver: Option<Arc<Resolve>>,
}

// SAFETY: a live policy may be used from any number of threads at once (C
// ABI: its state is behind the core's locks); it is freed once, in Drop.
unsafe impl Send for LiveInner {}
unsafe impl Sync for LiveInner {}

impl Drop for LiveInner {
    fn drop(&mut self) {
        // The wrapped current policy goes first (its own reference).
        if let Ok(current) = self.current.get_mut() {
            current.take();
        }
        // The client's read guard: an explicit close does not race the free
        // (which stops the watching thread and frees the document's limiters).
        let _client = self.client.inner.read();
        // SAFETY: the last reference; no call is in flight.
        unsafe { sys::polylimit_http_live_free(self.handle) };
    }
}

/// An HTTP request policy that can be replaced while requests run: made
/// from a document (JSON or TOML) or opened from a file (optionally watched:
/// a library thread reloads it when it changes), on a client on which its
/// own limits' limiters are made, plus optional application limiters (a
/// rule's `limiter = i`).
///
/// Per request take [`current`](Self::current) once and use that policy for
/// the whole request (prepare, check, answer, refund); a reload swaps in a
/// new policy atomically, and requests in flight finish on the one they
/// took. A document with an error is refused ([`reload`](Self::reload)
/// returns the error naming its line; a watched file's is kept in
/// [`last_error`](Self::last_error)) and the old policy stays. Keys' state
/// is kept across reloads: a changed limit applies to each key's next check,
/// counting what the key has used.
///
/// A document with a `resolver` section asks the application for the plan
/// of a tenant its `tenants` table does not name: give one with
/// [`LivePolicyBuilder::resolver`] (feature `tokio`). The tower layer
/// ([`crate::tower::RateLimitLayer::from_live`]) takes a live policy.
///
/// ```no_run
/// # fn main() -> Result<(), polylimit::Error> {
/// let client = polylimit::Client::open("redis://127.0.0.1:6379")?;
/// let live = polylimit::LivePolicy::open(&client, "policy.toml", Some(std::time::Duration::from_millis(500)))?;
/// live.reload(r#"[[rules]]
/// name = "api"
/// key = "ip"
/// limit = "100/minute"
/// "#)?;
/// assert_eq!(live.generation(), 2);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LivePolicy {
    inner: Arc<LiveInner>,
}

impl fmt::Debug for LivePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LivePolicy")
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}

/// Options of a [`LivePolicy`]: [`LivePolicy::builder`].
#[derive(Clone)]
pub struct LivePolicyBuilder {
    client: Client,
    limiters: Vec<Limiter>,
    watch: Option<Duration>,
    #[cfg(feature = "tokio")]
    resolver: Option<Arc<Resolve>>,
}

impl fmt::Debug for LivePolicyBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LivePolicyBuilder")
            .field("limiters", &self.limiters.len())
            .field("watch", &self.watch)
            .finish_non_exhaustive()
    }
}

impl LivePolicyBuilder {
    /// The application's limiters, which rules name by index (`limiter = 0`).
    pub fn limiters(mut self, limiters: Vec<Limiter>) -> Self {
        self.limiters = limiters;
        self
    }

    /// [`open`](Self::open) only: check the file this often and reload it
    /// when it changed (rounded up to whole milliseconds). Default: not
    /// watched ([`LivePolicy::reload_file`] reads it again).
    pub fn watch(mut self, interval: Duration) -> Self {
        self.watch = Some(interval);
        self
    }

    /// The application's plan resolver (feature `tokio`): the plan of a
    /// tenant the document's `tenants` table does not name, asked when the
    /// document has a `resolver` section. It runs under the document's
    /// `resolver.timeout_ms`; an error, a panic or a timeout gives the
    /// default plan (never cached); an answer is cached by the library
    /// (`resolver.cache_ttl_ms`, `cache_size`). It must not block its
    /// thread: the future is awaited on the request's task.
    #[cfg(feature = "tokio")]
    pub fn resolver<F, Fut, E>(mut self, resolve: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, E>> + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
    {
        self.resolver = Some(Arc::new(move |tenant: String| -> PlanFuture {
            let fut = resolve(tenant);
            Box::pin(async move { fut.await.map_err(Into::into) })
        }));
        self
    }

    /// A live policy from a document (JSON when its first non-space
    /// character is `{`, else TOML); [`Error::InvalidArgument`] naming the
    /// line for one that is not valid, or one with a `resolver` section and
    /// no [`resolver`](Self::resolver).
    pub fn document(self, document: &str) -> Result<LivePolicy, Error> {
        self.make(|client, handles, n, out, err| {
            // SAFETY: every pointer is valid for the call; the live policy
            // keeps what it needs.
            unsafe {
                sys::polylimit_http_live_new(client, document.as_ptr().cast(), document.len(), handles, n, out, err)
            }
        })
    }

    /// A live policy from the document in a file (watched with
    /// [`watch`](Self::watch)).
    pub fn open(self, path: impl AsRef<Path>) -> Result<LivePolicy, Error> {
        let path = path.as_ref();
        let c = cstring(
            "path",
            path.to_str()
                .ok_or_else(|| Error::invalid(format!("{}: not a UTF-8 path", path.display())))?,
        )?;
        let watch_ms = match self.watch {
            None => 0,
            Some(d) if d.is_zero() => return Err(Error::invalid("watch: the interval must be above 0")),
            Some(d) => i32::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX),
        };
        self.make(|client, handles, n, out, err| {
            // SAFETY: every pointer is valid for the call.
            unsafe { sys::polylimit_http_live_open(client, c.as_ptr(), handles, n, watch_ms, out, err) }
        })
    }

    fn make(
        self,
        f: impl FnOnce(
            *mut sys::polylimit_client,
            *const *mut sys::polylimit_limiter,
            usize,
            *mut *mut sys::polylimit_http_live,
            *mut sys::polylimit_error,
        ) -> i32,
    ) -> Result<LivePolicy, Error> {
        let guards: Vec<_> = self.limiters.iter().map(|l| l.inner.client.inner.read()).collect();
        let client = self.client.inner.read();
        if client.is_null() {
            return Err(Error::new(-11, "client is closed"));
        }
        let handles: Vec<*mut sys::polylimit_limiter> = self.limiters.iter().map(|l| l.inner.handle).collect();
        let mut handle: *mut sys::polylimit_http_live = ptr::null_mut();
        call(|err| f(*client, handles.as_ptr(), handles.len(), &mut handle, err))?;
        drop(client);
        drop(guards);
        let live = LivePolicy {
            inner: Arc::new(LiveInner {
                handle,
                client: self.client,
                limiters: self.limiters,
                current: Mutex::new(None),
                #[cfg(feature = "tokio")]
                resolver: self.resolver,
            }),
        };
        if live.current().resolver_timeout().is_some() && !live.has_resolver() {
            return Err(Error::invalid(if cfg!(feature = "tokio") {
                "the policy document has a resolver section but no plan resolver was given \
                 (LivePolicyBuilder::resolver)"
            } else {
                "the policy document has a resolver section: a plan resolver \
                 (LivePolicyBuilder::resolver, feature `tokio`) is needed"
            }));
        }
        Ok(live)
    }
}

impl LivePolicy {
    /// The options of a live policy on `client` (its document's own limits
    /// are made there).
    pub fn builder(client: &Client) -> LivePolicyBuilder {
        LivePolicyBuilder {
            client: client.clone(),
            limiters: Vec::new(),
            watch: None,
            #[cfg(feature = "tokio")]
            resolver: None,
        }
    }

    /// A live policy from a document, without application limiters or a
    /// resolver ([`builder`](Self::builder) for those).
    pub fn new(client: &Client, document: &str) -> Result<LivePolicy, Error> {
        LivePolicy::builder(client).document(document)
    }

    /// A live policy from a file; `watch`: check it this often and reload it
    /// when it changed.
    pub fn open(client: &Client, path: impl AsRef<Path>, watch: Option<Duration>) -> Result<LivePolicy, Error> {
        let b = LivePolicy::builder(client);
        match watch {
            Some(w) => b.watch(w),
            None => b,
        }
        .open(path)
    }

    /// The current policy: take it once per request and use it for the
    /// whole request.
    pub fn current(&self) -> Policy {
        // SAFETY: a live handle; the answer is a new reference (never null).
        let handle = unsafe { sys::polylimit_http_live_current(self.inner.handle) };
        // SAFETY: a valid policy reference.
        let id = unsafe { sys::polylimit_http_policy_id(handle) };
        let mut current = self.inner.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = current.as_ref().filter(|p| p.id() == id) {
            // SAFETY: the reference just taken; the wrapped one stays.
            unsafe { sys::polylimit_http_policy_free(handle) };
            return p.clone();
        }
        // SAFETY: the wrapper takes over the reference just taken.
        let p = unsafe { Policy::from_raw(handle, Some(self.inner.client.clone()), self.inner.limiters.clone()) };
        *current = Some(p.clone());
        p
    }

    /// Replaces the policy by `document` (JSON or TOML), or refuses it
    /// ([`Error::InvalidArgument`] naming the line; the old policy stays).
    pub fn reload(&self, document: &str) -> Result<(), Error> {
        // SAFETY: a live handle; the document is valid for the call.
        call(|err| unsafe {
            sys::polylimit_http_live_reload(self.inner.handle, document.as_ptr().cast(), document.len(), err)
        })
    }

    /// Reads the file again ([`open`](Self::open) only) and reloads it.
    pub fn reload_file(&self) -> Result<(), Error> {
        // SAFETY: a live handle.
        call(|err| unsafe { sys::polylimit_http_live_reload_file(self.inner.handle, err) })
    }

    /// 1 after creation, +1 per accepted reload.
    pub fn generation(&self) -> u64 {
        // SAFETY: a live handle.
        unsafe { sys::polylimit_http_live_generation(self.inner.handle) }
    }

    /// Why the last reload (a watched file's included) was refused; `None`
    /// since an accepted one.
    pub fn last_error(&self) -> Option<String> {
        // SAFETY: a live handle.
        take_string(|out, len, err| unsafe { sys::polylimit_http_live_last_error(self.inner.handle, out, len, err) })
            .ok()
            .filter(|s| !s.is_empty())
    }

    /// The current policy's per-rule counters and
    /// `polylimit_http_policy_reloads_total`, in the Prometheus text format.
    pub fn metrics_prometheus(&self) -> Result<String, Error> {
        // SAFETY: a live handle.
        take_string(|out, len, err| unsafe {
            sys::polylimit_http_live_metrics_prometheus(self.inner.handle, out, len, err)
        })
    }

    /// The resolver's cached answer for `tenant`, when fresh.
    pub fn cached_plan(&self, tenant: &str) -> Option<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: a live handle; the buffer holds cap bytes.
        let hit = unsafe {
            sys::polylimit_http_live_cached_plan(
                self.inner.handle,
                tenant.as_ptr().cast(),
                tenant.len(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        // SAFETY: on a hit the library wrote a NUL-terminated string.
        (hit == 1).then(|| unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
    }

    /// Caches a resolver's answer (the document's `resolver.cache_ttl_ms`
    /// and `cache_size` bound the cache).
    pub fn cache_plan(&self, tenant: &str, plan: &str) -> Result<(), Error> {
        // SAFETY: a live handle; the strings are valid for the call.
        call(|err| unsafe {
            sys::polylimit_http_live_cache_plan(
                self.inner.handle,
                tenant.as_ptr().cast(),
                tenant.len(),
                plan.as_ptr().cast(),
                plan.len(),
                err,
            )
        })
    }

    /// The application's limiters given at construction.
    pub fn limiters(&self) -> &[Limiter] {
        &self.inner.limiters
    }

    /// Whether the application gave a plan resolver.
    #[cfg(feature = "tokio")]
    pub fn has_resolver(&self) -> bool {
        self.inner.resolver.is_some()
    }

    /// Whether the application gave a plan resolver (feature `tokio`).
    #[cfg(not(feature = "tokio"))]
    pub fn has_resolver(&self) -> bool {
        false
    }

    /// The plan of `tenant` for a step of [`Action::NeedPlan`] of `policy`
    /// (this live policy's): the cached answer, else the resolver's within
    /// the document's `resolver.timeout_ms` (then cached); `""` (the default
    /// plan) when there is no resolver, or it failed, panicked or was late.
    /// Needs a tokio runtime with its time driver.
    #[cfg(feature = "tokio")]
    pub async fn resolve_plan(&self, policy: &Policy, tenant: &str) -> String {
        if let Some(plan) = self.cached_plan(tenant) {
            return plan;
        }
        let (Some(resolve), Some(deadline)) = (&self.inner.resolver, policy.resolver_timeout()) else {
            return String::new();
        };
        // A task of its own: a panic is its own, and a late one is stopped.
        let mut task = tokio::spawn(resolve(tenant.to_string()));
        match tokio::time::timeout(deadline, &mut task).await {
            Ok(Ok(Ok(plan))) => {
                let _ = self.cache_plan(tenant, &plan);
                plan
            }
            Ok(_) => String::new(),
            Err(_) => {
                task.abort();
                String::new()
            }
        }
    }

    /// Prepares a request on `policy` (taken from [`current`](Self::current)
    /// for this request), resolving the tenant's plan when the step asks for
    /// it ([`resolve_plan`](Self::resolve_plan)). With no resolver the plan
    /// is the document's (its `tenants` table or default plan). The
    /// application's key ([`Action::NeedAppKey`]) is the caller's to give.
    #[cfg(feature = "tokio")]
    pub async fn prepare(&self, policy: &Policy, request: &Request<'_>) -> Result<Step, Error> {
        if !self.has_resolver() {
            return policy.prepare(request);
        }
        let step = policy.prepare_with_plan(request, None)?;
        if step.action() != Action::NeedPlan {
            return Ok(step);
        }
        let plan = self.resolve_plan(policy, request.tenant.unwrap_or("")).await;
        policy.prepare_with_plan(request, Some(&plan))
    }
}
