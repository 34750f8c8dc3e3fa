//! polylimit: a distributed rate limiter on Redis.
//!
//! Every decision is one atomic Lua script inside Redis (or the in-process
//! `memory://` backend), run by the same C++ core that the C, Python, Go and
//! Java bindings use, so a Rust service shares limits with them and gets the
//! same decisions.
//!
//! ```no_run
//! # fn main() -> Result<(), polylimit::Error> {
//! let client = polylimit::Client::open("redis://127.0.0.1:6379")?;
//! let limiter = client.limiter("100/minute")?;
//! let d = limiter.check("user:42", 1)?;
//! if !d.allowed {
//!     println!("retry in {} ms", d.retry_after_ms);
//! }
//! # Ok(()) }
//! ```
//!
//! `Client` and `Limiter` are `Send + Sync` and cheap to clone (an `Arc`
//! inside); the native handles are freed when the last clone is dropped.
//! The methods here block the calling thread for one round trip; with the
//! `tokio` feature, each has an `_async` twin ([`Limiter::check_async`],
//! `peek_async`, `check_many_async`, ...) that waits on the library's
//! completion queue instead.

mod error;
mod live;
pub mod policy;
#[cfg(feature = "tokio")]
mod queue;
#[cfg(feature = "tower")]
pub mod tower;

pub use error::{bounds, Algorithm, Clock, Detail, Error, FailurePolicy};
pub use live::{LivePolicy, LivePolicyBuilder};
pub use policy::Policy;

use error::call;
use polylimit_sys as sys;
use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;
use std::ptr;
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

/// The C library's version string, e.g. `"1.0.0"`.
pub fn library_version() -> &'static str {
    // SAFETY: returns a static NUL-terminated ASCII string.
    unsafe { CStr::from_ptr(sys::polylimit_version_string()) }
        .to_str()
        .unwrap_or("")
}

/// `url` with every secret replaced by `***` (for logs).
pub fn redact_url(url: &str) -> String {
    let Ok(c) = CString::new(url) else {
        return "***".to_string();
    };
    take_string(|out, len, err| unsafe { sys::polylimit_redact_url(c.as_ptr(), out, len, err) })
        .unwrap_or_else(|_| "***".to_string())
}

/// Calls a function that hands over a library-allocated string.
fn take_string(
    f: impl FnOnce(*mut *mut c_char, *mut usize, *mut sys::polylimit_error) -> i32,
) -> Result<String, Error> {
    let mut out: *mut c_char = ptr::null_mut();
    let mut len = 0usize;
    call(|err| f(&mut out, &mut len, err))?;
    if out.is_null() {
        return Ok(String::new());
    }
    // SAFETY: on success out holds len bytes plus a NUL, allocated by the
    // library; it is freed by the library's own free below.
    let s = unsafe { String::from_utf8_lossy(std::slice::from_raw_parts(out as *const u8, len)).into_owned() };
    unsafe { sys::polylimit_free(out as *mut c_void) };
    Ok(s)
}

fn cstring(what: &str, s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::invalid(format!("{what} contains a NUL byte")))
}

/// Whole milliseconds of a Duration, rounded up, so a nonzero duration
/// below 1 ms never becomes 0 (which means "off" or "default" to the C ABI).
fn ms_ceil(d: Duration) -> u128 {
    d.as_nanos().div_ceil(1_000_000)
}

/// Milliseconds for an `int` field: saturates, so an oversized value is
/// refused by the library's range check, never wrapped.
fn ms_i32(d: Duration) -> i32 {
    i32::try_from(ms_ceil(d)).unwrap_or(i32::MAX)
}

fn ms_i64(d: Duration) -> i64 {
    i64::try_from(ms_ceil(d)).unwrap_or(i64::MAX)
}

fn sat_i32(n: u64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// An option the C ABI reads 0 of as "the library's default": unset, it is
/// the default (0); set, a value that comes to 0 is refused, naming the
/// option as the core names it (`bounds` gives its range), never turned
/// silently into the default.
fn setting(name: &str, min: i64, max: i64, value: Option<i32>) -> Result<i32, Error> {
    match value {
        None => Ok(0),
        Some(0) if min > 0 => Err(Error::invalid(format!("{name} = 0 is out of range {min}..{max}"))),
        Some(0) => Err(Error::invalid(format!(
            "{name} = 0 cannot be given: the C ABI reads 0 as the library's default; leave it unset for the default"
        ))),
        Some(v) => Ok(v),
    }
}

// ---- client ---------------------------------------------------------------

pub(crate) struct ClientInner {
    /// Null once closed. Calls hold a read guard for their duration, so
    /// close (the write side) never races a call in flight, as the C ABI
    /// requires.
    handle: RwLock<*mut sys::polylimit_client>,
    #[cfg(feature = "tokio")]
    /// One completion queue and reaper per tokio runtime that called
    /// check_async (a reaper lives in its runtime: one that is idle or gone
    /// must not hold up another runtime's checks).
    pub(crate) queues: queue::Queues,
}

// SAFETY: the C ABI makes client handles safe to use from any thread; close
// is serialised against calls by the RwLock.
unsafe impl Send for ClientInner {}
unsafe impl Sync for ClientInner {}

impl ClientInner {
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, *mut sys::polylimit_client> {
        // A poisoned lock only means a panic elsewhere while holding it; the
        // pointer itself is still consistent.
        self.handle.read().unwrap_or_else(|e| e.into_inner())
    }

    fn close(&self) {
        let mut h = self.handle.write().unwrap_or_else(|e| e.into_inner());
        if !h.is_null() {
            // SAFETY: a live handle, no call in flight (we hold the write lock).
            unsafe { sys::polylimit_client_close(*h) };
            *h = ptr::null_mut();
        }
        #[cfg(feature = "tokio")]
        self.queues.shutdown();
    }
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        self.close();
    }
}

/// A connection to one Redis deployment (or `memory://`), shared by its limiters.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("closed", &self.inner.read().is_null())
            .finish()
    }
}

/// Connection options for [`Client::builder`]. Unset fields take the
/// library's defaults ([`bounds`]`::DEFAULT_*`). A field set to a value that
/// comes to 0 (`pool_size(0)`, `Duration::ZERO`), which the C ABI would read
/// as "the default", makes `open` fail with [`Error::InvalidArgument`]
/// naming it; durations round up to whole milliseconds (keepalive: seconds).
#[derive(Debug, Clone, Default)]
pub struct ClientBuilder {
    pool_size: Option<u32>,
    connect_timeout: Option<Duration>,
    command_timeout: Option<Duration>,
    acquire_timeout: Option<Duration>,
    keepalive: Option<Option<Duration>>,
    idle_check: Option<Duration>,
    name: Option<String>,
    tls_ca_file: Option<String>,
    tls_ca_dir: Option<String>,
    tls_cert_file: Option<String>,
    tls_key_file: Option<String>,
    tls_server_name: Option<String>,
    tls_insecure: bool,
    no_coalescing: bool,
}

impl ClientBuilder {
    /// Most connections per Redis node; concurrent calls share them (pipelined).
    pub fn pool_size(mut self, n: u32) -> Self {
        self.pool_size = Some(n);
        self
    }
    /// TCP or unix-socket connect timeout.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = Some(d);
        self
    }
    /// Send plus reply of one command.
    pub fn command_timeout(mut self, d: Duration) -> Self {
        self.command_timeout = Some(d);
        self
    }
    /// How long a call waits for room in a full connection queue.
    pub fn acquire_timeout(mut self, d: Duration) -> Self {
        self.acquire_timeout = Some(d);
        self
    }
    /// TCP keepalive interval; `None` turns keepalive off.
    pub fn keepalive(mut self, d: Option<Duration>) -> Self {
        self.keepalive = Some(d);
        self
    }
    /// PING a connection idle longer than this before reusing it.
    pub fn idle_check(mut self, d: Duration) -> Self {
        self.idle_check = Some(d);
        self
    }
    /// Labels this client's metrics `client="name"`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// TLS URLs: PEM bundle of trusted CAs (default: the system's).
    pub fn tls_ca_file(mut self, path: impl Into<String>) -> Self {
        self.tls_ca_file = Some(path.into());
        self
    }
    /// TLS URLs: directory of hashed CA certificates.
    pub fn tls_ca_dir(mut self, path: impl Into<String>) -> Self {
        self.tls_ca_dir = Some(path.into());
        self
    }
    /// TLS URLs: client certificate and its key (PEM), for mutual TLS.
    pub fn tls_client_cert(mut self, cert_file: impl Into<String>, key_file: impl Into<String>) -> Self {
        self.tls_cert_file = Some(cert_file.into());
        self.tls_key_file = Some(key_file.into());
        self
    }
    /// TLS URLs: the name the server certificate must match (and SNI).
    pub fn tls_server_name(mut self, name: impl Into<String>) -> Self {
        self.tls_server_name = Some(name.into());
        self
    }
    /// TLS URLs: no certificate or host name verification. Tests only.
    pub fn tls_insecure(mut self, yes: bool) -> Self {
        self.tls_insecure = yes;
        self
    }
    /// Coalescing of hot keys, on by default: checks of one key that arrive
    /// while a call of that key is in flight (from any thread, blocking or
    /// async) wait in the client and go out together as one script call,
    /// decided exactly as separate calls would be (docs/limiter.md, "Hot
    /// keys: coalescing"). `false`: every check is its own call.
    /// [`Stats::round_trips`] counts the calls.
    pub fn coalesce(mut self, yes: bool) -> Self {
        self.no_coalescing = !yes;
        self
    }

    /// Opens a client for `url` (`redis://`, `rediss://`, `unix://`,
    /// `redis+cluster://`, `redis+sentinel://`, `memory://`). Connections are
    /// made lazily, on the first command.
    pub fn open(&self, url: &str) -> Result<Client, Error> {
        if url.is_empty() {
            // The C library would read POLYLIMIT_URL here; in Rust that is
            // what Client::from_env says, so an empty URL is a mistake.
            return Err(Error::invalid("url is empty (Client::from_env reads POLYLIMIT_URL)"));
        }
        let url = cstring("url", url)?;
        let strs = [
            &self.name,
            &self.tls_ca_file,
            &self.tls_ca_dir,
            &self.tls_cert_file,
            &self.tls_key_file,
            &self.tls_server_name,
        ];
        let mut owned: Vec<Option<CString>> = Vec::with_capacity(strs.len());
        for (what, s) in [
            "name",
            "tls_ca_file",
            "tls_ca_dir",
            "tls_cert_file",
            "tls_key_file",
            "tls_server_name",
        ]
        .iter()
        .zip(strs)
        {
            owned.push(s.as_deref().map(|s| cstring(what, s)).transpose()?);
        }
        let p = |i: usize| owned[i].as_ref().map_or(ptr::null(), |c| c.as_ptr());
        // Whole seconds, rounded up as milliseconds are.
        let secs = |d: Duration| sat_i32(d.as_secs() + u64::from(d.subsec_nanos() > 0));
        let (disable_keepalive, keepalive_s) = match self.keepalive {
            Some(None) => (1, 0),
            Some(Some(d)) if d.is_zero() => {
                return Err(Error::invalid(
                    "keepalive_s = 0 cannot be given: the C ABI reads 0 as the library's default; keepalive(None) turns keepalive off",
                ))
            }
            Some(Some(d)) => (0, secs(d)),
            None => (0, 0),
        };
        let o = sys::polylimit_client_options {
            pool_size: setting(
                "pool_size",
                bounds::MIN_POOL_SIZE,
                bounds::MAX_POOL_SIZE,
                self.pool_size.map(|n| sat_i32(n.into())),
            )?,
            connect_timeout_ms: setting(
                "connect_timeout_ms",
                bounds::MIN_CONNECT_TIMEOUT_MS,
                bounds::MAX_CONNECT_TIMEOUT_MS,
                self.connect_timeout.map(ms_i32),
            )?,
            command_timeout_ms: setting(
                "command_timeout_ms",
                bounds::MIN_COMMAND_TIMEOUT_MS,
                bounds::MAX_COMMAND_TIMEOUT_MS,
                self.command_timeout.map(ms_i32),
            )?,
            acquire_timeout_ms: setting(
                "acquire_timeout_ms",
                bounds::MIN_ACQUIRE_TIMEOUT_MS,
                bounds::MAX_ACQUIRE_TIMEOUT_MS,
                self.acquire_timeout.map(ms_i32),
            )?,
            keepalive_s,
            disable_keepalive,
            idle_check_ms: setting(
                "idle_check_ms",
                bounds::MIN_IDLE_CHECK_MS,
                bounds::MAX_IDLE_CHECK_MS,
                self.idle_check.map(ms_i32),
            )?,
            name: p(0),
            tls_ca_file: p(1),
            tls_ca_dir: p(2),
            tls_cert_file: p(3),
            tls_key_file: p(4),
            tls_server_name: p(5),
            tls_insecure: self.tls_insecure as i32,
            no_coalescing: self.no_coalescing as i32,
            ..Default::default()
        };
        let mut h: *mut sys::polylimit_client = ptr::null_mut();
        // SAFETY: every pointer is valid for the call (the strings are copied).
        call(|err| unsafe { sys::polylimit_client_open(url.as_ptr(), &o, &mut h, err) })?;
        Ok(Client {
            inner: Arc::new(ClientInner {
                handle: RwLock::new(h),
                #[cfg(feature = "tokio")]
                queues: Default::default(),
            }),
        })
    }
}

impl Client {
    /// Opens a client with default options; see [`ClientBuilder::open`].
    pub fn open(url: &str) -> Result<Client, Error> {
        ClientBuilder::default().open(url)
    }

    /// Connection options, then [`ClientBuilder::open`].
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Opens the URL in `POLYLIMIT_URL`. There is no silent local default:
    /// when it is unset, this fails; set `POLYLIMIT_URL=memory://` for an
    /// in-process limiter.
    pub fn from_env() -> Result<Client, Error> {
        match std::env::var("POLYLIMIT_URL") {
            Ok(url) if !url.is_empty() => Client::open(&url),
            _ => Err(Error::invalid(
                "POLYLIMIT_URL is not set: set it to a Redis URL, or to memory:// for an in-process limiter",
            )),
        }
    }

    /// A limiter from a rate spec such as `"100/minute"` or `"10/s; 1000/hour"`.
    pub fn limiter(&self, spec: &str) -> Result<Limiter, Error> {
        self.limiter_builder().spec(spec).build()
    }

    /// A builder for a limiter with options.
    pub fn limiter_builder(&self) -> LimiterBuilder {
        LimiterBuilder::new(self.clone())
    }

    /// Closes the connections now. Every limiter made from this client, and
    /// every clone of it, then fails with [`Error::Closed`]. Idempotent;
    /// dropping the last clone does the same. Waits for blocking calls in
    /// flight on the client's limiters to return first (an `acquire` may
    /// take up to its timeout); `check_async` checks in flight complete with
    /// an error.
    pub fn close(&self) {
        self.inner.close();
    }

    /// As [`close`](Self::close), without blocking the runtime: closing
    /// gives the leases' unused units back (a round trip) and waits for
    /// blocking calls in flight, so it runs on the runtime's blocking pool.
    /// Calls made after this future is first polled may fail with
    /// [`Error::Closed`] already.
    #[cfg(feature = "tokio")]
    pub async fn close_async(&self) {
        let inner = self.inner.clone();
        // A JoinError means the runtime is shutting down: the task was
        // dropped unrun, and the last clone's drop closes the client.
        let _ = tokio::task::spawn_blocking(move || inner.close()).await;
    }

    /// The client's counters since it was opened.
    pub fn stats(&self) -> Result<Stats, Error> {
        let h = self.inner.read();
        let mut s = sys::polylimit_stats {
            version: sys::POLYLIMIT_STATS_VERSION,
            ..Default::default()
        };
        if h.is_null() {
            return Err(Error::new(-11, "client is closed"));
        }
        // SAFETY: a live handle (read guard held) and a valid out struct.
        call(|err| unsafe { sys::polylimit_client_stats(*h, &mut s, err) })?;
        Ok(Stats(s))
    }

    /// The client's counters in the Prometheus text format.
    pub fn stats_prometheus(&self) -> Result<String, Error> {
        let h = self.inner.read();
        if h.is_null() {
            return Err(Error::new(-11, "client is closed"));
        }
        // SAFETY: a live handle (read guard held).
        take_string(|out, len, err| unsafe { sys::polylimit_client_stats_prometheus(*h, out, len, err) })
    }
}

/// A client's counters (see polylimit.h, `polylimit_stats`).
#[derive(Debug, Clone, Copy)]
pub struct Stats(sys::polylimit_stats);

impl Stats {
    /// Checks decided or failed (each key of a batch counts).
    pub fn checks(&self) -> u64 {
        self.0.checks
    }
    /// Checks admitted.
    pub fn admitted(&self) -> u64 {
        self.0.admitted
    }
    /// Checks denied.
    pub fn denied(&self) -> u64 {
        self.0.denied
    }
    /// Checks that returned an error.
    pub fn errors(&self) -> u64 {
        self.0.errors
    }
    /// Round trips to Redis; a pipelined batch is one.
    pub fn round_trips(&self) -> u64 {
        self.0.round_trips
    }
    /// Answered by the local deny cache.
    pub fn cache_hits(&self) -> u64 {
        self.0.cache_hits
    }
    /// Answered by the failure policy.
    pub fn degraded(&self) -> u64 {
        self.0.degraded
    }
    /// Script calls sent to Redis; checks of one key coalesced into one call
    /// count once (docs/limiter.md, "Hot keys").
    pub fn script_calls(&self) -> u64 {
        self.0.script_calls
    }
    /// Units taken from Redis by leases.
    pub fn leased_units(&self) -> u64 {
        self.0.leased_units
    }
    /// Unused leased units given back to Redis.
    pub fn refunded_units(&self) -> u64 {
        self.0.refunded_units
    }
    /// Unused leased units not given back (a failed refund, or the window
    /// had moved); Redis frees them with the window.
    pub fn stranded_units(&self) -> u64 {
        self.0.stranded_units
    }
    /// Checks decided in one script call with other checks of their key.
    pub fn coalesced(&self) -> u64 {
        self.0.coalesced
    }
    /// The raw struct, with every counter and the latency histogram.
    pub fn raw(&self) -> &sys::polylimit_stats {
        &self.0
    }
}

// ---- limiter --------------------------------------------------------------

/// Limiter options for [`Client::limiter_builder`].
#[derive(Clone)]
pub struct LimiterBuilder {
    client: Client,
    spec: Option<String>,
    limit: i64,
    window: Duration,
    burst: i64,
    algorithm: Algorithm,
    prefix: Option<String>,
    clock: Clock,
    deny_cache_size: u64,
    failure_policy: FailurePolicy,
    breaker_failures: u64,
    breaker_cooldown: Option<Duration>,
    shadow: bool,
    block: Duration,
    durable_replicas: u64,
    durable_timeout: Option<Duration>,
    durable_aof: bool,
    lease_units: u64,
    lease: Option<Duration>,
}

impl LimiterBuilder {
    fn new(client: Client) -> LimiterBuilder {
        LimiterBuilder {
            client,
            spec: None,
            limit: 0,
            window: Duration::ZERO,
            burst: 0,
            algorithm: Algorithm::default(),
            prefix: None,
            clock: Clock::default(),
            deny_cache_size: 0,
            failure_policy: FailurePolicy::default(),
            breaker_failures: 0,
            breaker_cooldown: None,
            shadow: false,
            block: Duration::ZERO,
            durable_replicas: 0,
            durable_timeout: None,
            durable_aof: false,
            lease_units: 0,
            lease: None,
        }
    }

    /// One or more limits as a rate spec (`"100/minute"`, `"10/s; 1000/hour"`,
    /// `"10/s burst 20"` for GCRA). Replaces `limit`.
    pub fn spec(mut self, spec: impl Into<String>) -> Self {
        self.spec = Some(spec.into());
        self
    }
    /// One limit: `limit` units per `window`. Replaces `spec`.
    pub fn limit(mut self, limit: i64, window: Duration) -> Self {
        self.spec = None;
        self.limit = limit;
        self.window = window;
        self
    }
    /// GCRA: units admitted at once (0: the limit). With `limit` only; a
    /// spec says `burst N` itself.
    pub fn burst(mut self, burst: i64) -> Self {
        self.burst = burst;
        self
    }
    /// The algorithm (default: the exact sliding log).
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.algorithm = a;
        self
    }
    /// Redis key prefix (default `"pl"`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }
    /// Where time comes from (default: the Redis server).
    pub fn clock(mut self, c: Clock) -> Self {
        self.clock = c;
        self
    }
    /// Local deny cache of up to `keys` keys (0: off): a denied key is denied
    /// in this process without a round trip until its retry-after passes.
    pub fn deny_cache(mut self, keys: u64) -> Self {
        self.deny_cache_size = keys;
        self
    }
    /// What a check answers when Redis cannot answer in time.
    pub fn failure_policy(mut self, p: FailurePolicy) -> Self {
        self.failure_policy = p;
        self
    }
    /// Circuit breaker: after `failures` consecutive outages, fail fast for
    /// `cooldown` (then the failure policy applies); a zero `cooldown` makes
    /// `build` fail rather than take the default.
    pub fn breaker(mut self, failures: u64, cooldown: Duration) -> Self {
        self.breaker_failures = failures;
        self.breaker_cooldown = Some(cooldown);
        self
    }
    /// Shadow (dry-run) mode: decide and count, but always admit; a would-be
    /// denial comes back allowed with `shadowed` set.
    pub fn shadow(mut self, yes: bool) -> Self {
        self.shadow = yes;
        self
    }
    /// Punitive block: a denied key stays denied this long.
    pub fn block(mut self, d: Duration) -> Self {
        self.block = d;
        self
    }
    /// Failover-safe mode: an admitted check waits until `replicas` replicas
    /// acknowledged its write, for at most `timeout` (zero makes `build` fail
    /// rather than take the default).
    pub fn durable(mut self, replicas: u64, timeout: Duration) -> Self {
        self.durable_replicas = replicas;
        self.durable_timeout = Some(timeout);
        self
    }
    /// Failover-safe mode: the write must also be fsynced to the AOF.
    pub fn durable_aof(mut self, yes: bool) -> Self {
        self.durable_aof = yes;
        self
    }

    /// Leases (docs/limiter.md, "Leases"): a check takes `units` units of
    /// the key from Redis in one round trip and hands them out in this
    /// process without one, for `duration` (at most the window; rounded up to
    /// whole milliseconds; zero makes `build` fail). Unused units go back when
    /// the lease ends, the limiter is dropped or the client closes; a drop
    /// on a tokio runtime gives them back on its blocking pool (feature
    /// `tokio`), never on the runtime's thread.
    /// Admissions can exceed the limit in a window by at most `units` per
    /// limiter holding leases on the key. `units` 0: off (the default); at
    /// most the smallest limit; not with [`block`](Self::block). `check` and
    /// `check_async` both take and renew leases (`check_async` answers from
    /// a live lease at once; a renewal runs on a library thread).
    pub fn lease(mut self, units: u64, duration: Duration) -> Self {
        self.lease_units = units;
        self.lease = Some(duration);
        self
    }

    /// Makes the limiter; every option is checked before any I/O.
    pub fn build(&self) -> Result<Limiter, Error> {
        let prefix = self.prefix.as_deref().map(|p| cstring("prefix", p)).transpose()?;
        let spec = self.spec.as_deref().map(|s| cstring("spec", s)).transpose()?;
        let o = sys::polylimit_limiter_options {
            algorithm: self.algorithm as i32,
            limit: self.limit,
            window_ms: ms_i64(self.window),
            prefix: prefix.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            clock: self.clock as i32,
            burst: self.burst,
            deny_cache_size: sat_i32(self.deny_cache_size),
            failure_policy: self.failure_policy as i32,
            breaker_failures: sat_i32(self.breaker_failures),
            breaker_cooldown_ms: setting(
                "breaker_cooldown_ms",
                bounds::MIN_BREAKER_COOLDOWN_MS,
                bounds::MAX_BREAKER_COOLDOWN_MS,
                self.breaker_cooldown.map(ms_i32),
            )?,
            shadow: self.shadow as i32,
            block_ms: ms_i64(self.block),
            durable_replicas: sat_i32(self.durable_replicas),
            durable_timeout_ms: setting(
                "durable_timeout_ms",
                bounds::MIN_DURABLE_TIMEOUT_MS,
                bounds::MAX_DURABLE_TIMEOUT_MS,
                self.durable_timeout.map(ms_i32),
            )?,
            durable_aof: self.durable_aof as i32,
            lease_units: i64::try_from(self.lease_units).unwrap_or(i64::MAX),
            lease_ms: match self.lease {
                None => 0,
                Some(d) if d.is_zero() => {
                    return Err(Error::invalid(format!(
                        "lease_ms = 0 is out of range {}..{}",
                        bounds::MIN_LEASE_MS,
                        bounds::MAX_LEASE_MS
                    )))
                }
                Some(d) => ms_i64(d),
            },
            ..Default::default()
        };
        let h = self.client.inner.read();
        if h.is_null() {
            return Err(Error::new(-11, "client is closed"));
        }
        let mut l: *mut sys::polylimit_limiter = ptr::null_mut();
        call(|err| match &spec {
            // SAFETY: a live client (read guard held); every pointer is valid
            // for the call and the library copies what it keeps.
            Some(s) => unsafe { sys::polylimit_limiter_new_spec(*h, s.as_ptr(), &o, &mut l, err) },
            None => unsafe { sys::polylimit_limiter_new(*h, &o, &mut l, err) },
        })?;
        drop(h);
        Ok(Limiter {
            inner: Arc::new(LimiterInner {
                handle: l,
                client: self.client.clone(),
                leases: self.lease_units > 0,
            }),
        })
    }
}

pub(crate) struct LimiterInner {
    pub(crate) handle: *mut sys::polylimit_limiter,
    /// Keeps the client open while the limiter lives; its lock orders an
    /// explicit close after calls in flight (and after the free).
    pub(crate) client: Client,
    /// Freeing gives the leases' unused units back: a round trip.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    leases: bool,
}

// SAFETY: limiter handles may be used from any number of threads at once (C
// ABI); freeing happens once, in Drop, when no call can be in flight.
unsafe impl Send for LimiterInner {}
unsafe impl Sync for LimiterInner {}

/// A limiter handle to free, with the client it belongs to.
struct Freeing {
    handle: *mut sys::polylimit_limiter,
    client: Client,
}

// SAFETY: a limiter handle may be freed from any thread (C ABI).
unsafe impl Send for Freeing {}

impl Drop for Freeing {
    fn drop(&mut self) {
        // The read guard: an explicit close of the client does not race the
        // free (the C ABI forbids it).
        let _client = self.client.inner.read();
        // SAFETY: the last reference: no call is in flight.
        unsafe { sys::polylimit_limiter_free(self.handle) };
    }
}

impl Drop for LimiterInner {
    fn drop(&mut self) {
        let freeing = Freeing {
            handle: self.handle,
            client: self.client.clone(),
        };
        // With leases, freeing waits for Redis (the unused units go back):
        // on a tokio runtime that is done on its blocking pool, never on the
        // runtime's thread. (If the runtime is shutting down and drops the
        // task unrun, dropping it frees the limiter there.)
        #[cfg(feature = "tokio")]
        if self.leases {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn_blocking(move || drop(freeing));
                return;
            }
        }
        drop(freeing);
    }
}

/// Decides checks for keys against one or more limits.
#[derive(Clone)]
pub struct Limiter {
    pub(crate) inner: Arc<LimiterInner>,
}

impl Limiter {
    /// Wraps a limiter handle the library made on `client` (a policy's own
    /// limiter, polylimit_http_policy_limiter); freed with the last clone.
    pub(crate) fn from_handle(handle: *mut sys::polylimit_limiter, client: Client) -> Limiter {
        Limiter {
            inner: Arc::new(LimiterInner {
                handle,
                client,
                leases: false,
            }),
        }
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter").finish_non_exhaustive()
    }
}

/// A check's answer. A denial is a Decision with `allowed == false`, not an error.
#[derive(Clone)]
pub struct Decision {
    /// The cost was admitted (and consumed).
    pub allowed: bool,
    /// Answered by the local deny cache.
    pub cached: bool,
    /// Answered by the failure policy (Redis could not answer).
    pub degraded: bool,
    /// Denied, but admitted because the limiter is in shadow mode.
    pub shadowed: bool,
    /// The limit that decided.
    pub limit: i64,
    /// Units left in the window after this decision.
    pub remaining: i64,
    /// 0 when allowed; else how long until this cost would be admitted.
    pub retry_after_ms: i64,
    /// Until the key is back to full capacity.
    pub reset_after_ms: i64,
    /// Units admitted: the cost or 0 (`check_at_most`: how many).
    pub granted: i64,
    raw: sys::polylimit_decision,
    limiter: Limiter,
}

impl fmt::Debug for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decision")
            .field("allowed", &self.allowed)
            .field("cached", &self.cached)
            .field("degraded", &self.degraded)
            .field("shadowed", &self.shadowed)
            .field("limit", &self.limit)
            .field("remaining", &self.remaining)
            .field("retry_after_ms", &self.retry_after_ms)
            .field("reset_after_ms", &self.reset_after_ms)
            .field("granted", &self.granted)
            .finish()
    }
}

impl Decision {
    pub(crate) fn new(raw: sys::polylimit_decision, limiter: &Limiter) -> Decision {
        Decision {
            allowed: raw.allowed != 0,
            cached: raw.cached != 0,
            degraded: raw.degraded != 0,
            shadowed: raw.shadowed != 0,
            limit: raw.limit,
            remaining: raw.remaining,
            retry_after_ms: raw.retry_after_ms,
            reset_after_ms: raw.reset_after_ms,
            granted: raw.granted,
            raw,
            limiter: limiter.clone(),
        }
    }

    /// The decision as the C ABI has it, from the public fields (which a
    /// caller may have set: [`Limiter::decision`]).
    pub(crate) fn to_sys(&self) -> sys::polylimit_decision {
        sys::polylimit_decision {
            allowed: self.allowed.into(),
            cached: self.cached.into(),
            degraded: self.degraded.into(),
            shadowed: self.shadowed.into(),
            limit: self.limit,
            remaining: self.remaining,
            retry_after_ms: self.retry_after_ms,
            reset_after_ms: self.reset_after_ms,
            granted: self.granted,
            ..self.raw
        }
    }

    /// `retry_after_ms` as a Duration.
    pub fn retry_after(&self) -> Duration {
        Duration::from_millis(self.retry_after_ms.max(0) as u64)
    }

    /// `reset_after_ms` as a Duration.
    pub fn reset_after(&self) -> Duration {
        Duration::from_millis(self.reset_after_ms.max(0) as u64)
    }

    /// The HTTP rate-limit response headers for this decision, as every
    /// binding formats them (`Retry-After` on a denial, `RateLimit-Limit`,
    /// `-Remaining`, `-Reset`, `RateLimit-Policy`, `RateLimit`), in order.
    pub fn headers(&self) -> Result<Vec<(String, String)>, Error> {
        // Formatting does no I/O, but it is a call on the limiter: it must
        // not race with an explicit close either.
        let _open = self.limiter.inner.client.inner.read();
        let text = take_string(|out, len, err| {
            // SAFETY: a live limiter (we hold a clone) and a decision it filled.
            unsafe { sys::polylimit_limiter_headers(self.limiter.inner.handle, &self.to_sys(), out, len, err) }
        })?;
        Ok(text
            .lines()
            .filter_map(|l| l.split_once(": ").map(|(k, v)| (k.to_string(), v.to_string())))
            .collect())
    }
}

type Key<'a> = (*const c_void, usize);

fn key_parts(key: &[u8]) -> Key<'_> {
    (key.as_ptr() as *const c_void, key.len())
}

impl Limiter {
    /// A decision of this limiter with these values, as a check could have
    /// made it (`granted` is 1 when allowed; set the other public fields as
    /// needed): for testing code that takes decisions, such as a
    /// [`Policy`]'s answers.
    pub fn decision(
        &self,
        allowed: bool,
        limit: i64,
        remaining: i64,
        retry_after_ms: i64,
        reset_after_ms: i64,
    ) -> Decision {
        let mut d = Decision::new(sys::polylimit_decision::default(), self);
        d.allowed = allowed;
        d.limit = limit;
        d.remaining = remaining;
        d.retry_after_ms = retry_after_ms;
        d.reset_after_ms = reset_after_ms;
        d.granted = i64::from(allowed);
        d
    }

    /// Runs a call that fills one decision, with the client's read lock held.
    fn decide(
        &self,
        f: impl FnOnce(*mut sys::polylimit_limiter, *mut sys::polylimit_decision, *mut sys::polylimit_error) -> i32,
    ) -> Result<Decision, Error> {
        let _open = self.inner.client.inner.read();
        let mut d = sys::polylimit_decision::default();
        call(|err| f(self.inner.handle, &mut d, err))?;
        Ok(Decision::new(d, self))
    }

    /// Admits `cost` units for `key`, all or nothing, in one atomic script
    /// call. Cost must be 1..=limit.
    pub fn check(&self, key: impl AsRef<[u8]>, cost: i64) -> Result<Decision, Error> {
        let (k, n) = key_parts(key.as_ref());
        // SAFETY: k/n describe a live slice for the duration of the call.
        self.decide(|l, d, e| unsafe { sys::polylimit_limiter_check(l, k, n, cost, d, e) })
    }

    /// As [`check`](Self::check), at an explicit time (microseconds since
    /// the Unix epoch) instead of the limiter's clock: for replays and tests.
    pub fn check_at(&self, key: impl AsRef<[u8]>, cost: i64, now_us: i64) -> Result<Decision, Error> {
        let (k, n) = key_parts(key.as_ref());
        // SAFETY: as in check.
        self.decide(|l, d, e| unsafe { sys::polylimit_limiter_check_at(l, k, n, cost, now_us, d, e) })
    }

    /// What a check of cost 1 would answer, consuming nothing.
    pub fn peek(&self, key: impl AsRef<[u8]>) -> Result<Decision, Error> {
        let (k, n) = key_parts(key.as_ref());
        // SAFETY: as in check.
        self.decide(|l, d, e| unsafe { sys::polylimit_limiter_peek(l, k, n, d, e) })
    }

    /// Admits as many units as fit now, up to `max_cost`; `granted` says how many.
    pub fn check_at_most(&self, key: impl AsRef<[u8]>, max_cost: i64) -> Result<Decision, Error> {
        let (k, n) = key_parts(key.as_ref());
        // SAFETY: as in check.
        self.decide(|l, d, e| unsafe { sys::polylimit_limiter_check_at_most(l, k, n, max_cost, d, e) })
    }

    /// Blocks the calling thread until `cost` units are admitted, for at most
    /// `timeout`; returns a denial early when admission would come later.
    /// Not for async code: it sleeps.
    pub fn acquire(&self, key: impl AsRef<[u8]>, cost: i64, timeout: Duration) -> Result<Decision, Error> {
        let (k, n) = key_parts(key.as_ref());
        let t = ms_i64(timeout);
        // SAFETY: as in check.
        self.decide(|l, d, e| unsafe { sys::polylimit_limiter_acquire(l, k, n, cost, t, d, e) })
    }

    /// A check against a limit given for this call only (`limit` per `window`).
    pub fn check_limit(
        &self,
        key: impl AsRef<[u8]>,
        cost: i64,
        limit: i64,
        window: Duration,
    ) -> Result<Decision, Error> {
        let (k, n) = key_parts(key.as_ref());
        let w = ms_i64(window);
        // SAFETY: as in check.
        self.decide(|l, d, e| unsafe { sys::polylimit_limiter_check_limit(l, k, n, cost, limit, w, d, e) })
    }

    /// Gives back up to `units` units taken earlier; answers as `peek`.
    pub fn refund(&self, key: impl AsRef<[u8]>, units: i64) -> Result<Decision, Error> {
        let (k, n) = key_parts(key.as_ref());
        // SAFETY: as in check.
        self.decide(|l, d, e| unsafe { sys::polylimit_limiter_refund(l, k, n, units, d, e) })
    }

    /// Clears the key: it is back to full capacity.
    pub fn reset(&self, key: impl AsRef<[u8]>) -> Result<(), Error> {
        let (k, n) = key_parts(key.as_ref());
        let _open = self.inner.client.inner.read();
        // SAFETY: as in check.
        call(|e| unsafe { sys::polylimit_limiter_reset(self.inner.handle, k, n, e) })
    }

    /// Decides many keys at `cost` each in one round trip per Redis node.
    /// Each key is all-or-nothing on its own and has its own result. The
    /// outer error is for a call refused as a whole before any key was
    /// looked at (more than `bounds::MAX_BATCH` keys).
    pub fn check_many<K: AsRef<[u8]>>(&self, keys: &[K], cost: i64) -> Result<Vec<Result<Decision, Error>>, Error> {
        let n = keys.len();
        let ptrs: Vec<*const c_void> = keys.iter().map(|k| k.as_ref().as_ptr() as *const c_void).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.as_ref().len()).collect();
        let mut out = vec![sys::polylimit_decision::default(); n];
        // 1 is no status the library writes: it marks "left untouched".
        let mut statuses = vec![1i32; n];
        let mut key_errors = vec![sys::polylimit_error::default(); n];
        let mut err = sys::polylimit_error::default();
        let rc = {
            let _open = self.inner.client.inner.read();
            // SAFETY: every array holds n elements and outlives the call;
            // keys[i] stays borrowed for the call.
            unsafe {
                sys::polylimit_limiter_check_many(
                    self.inner.handle,
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    n,
                    cost,
                    out.as_mut_ptr(),
                    statuses.as_mut_ptr(),
                    key_errors.as_mut_ptr(),
                    &mut err,
                )
            }
        };
        let whole = if rc == sys::POLYLIMIT_OK {
            Ok(())
        } else {
            Err(Error::from_c(rc, &err))
        };
        self.batch_results(whole, out, &statuses, &key_errors)
    }

    /// check_many's answer (also check_many_async's) from the call's status
    /// and the arrays the library filled; a status of 1 is a key it left
    /// untouched (the batch was refused as a whole).
    fn batch_results(
        &self,
        whole: Result<(), Error>,
        out: Vec<sys::polylimit_decision>,
        statuses: &[i32],
        key_errors: &[sys::polylimit_error],
    ) -> Result<Vec<Result<Decision, Error>>, Error> {
        if let Err(e) = whole {
            if statuses.contains(&1) {
                return Err(e);
            }
        }
        Ok(statuses
            .iter()
            .zip(out)
            .zip(key_errors)
            .map(|((&s, d), e)| {
                if s == sys::POLYLIMIT_OK {
                    Ok(Decision::new(d, self))
                } else {
                    Err(Error::from_c(s, e))
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_up_to_whole_milliseconds() {
        assert_eq!(ms_i64(Duration::ZERO), 0);
        assert_eq!(ms_i64(Duration::from_nanos(1)), 1);
        assert_eq!(ms_i64(Duration::from_micros(1500)), 2);
        assert_eq!(ms_i64(Duration::from_millis(7)), 7);
        assert_eq!(ms_i64(Duration::MAX), i64::MAX);
        assert_eq!(ms_i32(Duration::from_secs(10_000_000)), i32::MAX);
    }
}
