//! Raw FFI declarations for `polylimit.h`, the C ABI of polylimit.
//!
//! Hand-written, for the functions the safe `polylimit` crate calls; the
//! `layout` test compares every struct here with the C compiler's layout of
//! the header. Use the `polylimit` crate unless you need the raw calls.
//! Status codes and enum values are generated into `polylimit` from the
//! vocabulary table; the few this crate needs itself are below.
#![no_std]
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_uint, c_void};

pub const POLYLIMIT_VERSION_NUMBER: c_int = 10000;
pub const POLYLIMIT_CLIENT_OPTIONS_VERSION: c_uint = 3;
pub const POLYLIMIT_LIMITER_OPTIONS_VERSION: c_uint = 4;
pub const POLYLIMIT_STATS_VERSION: c_uint = 2;
pub const POLYLIMIT_STATS_LATENCY_BUCKETS: usize = 16;
pub const POLYLIMIT_OK: c_int = 0;

// The HTTP request policy (polylimit_http_*).
pub const POLYLIMIT_HTTP_PROCEED: c_int = 0;
pub const POLYLIMIT_HTTP_CHECK: c_int = 1;
pub const POLYLIMIT_HTTP_RESPOND: c_int = 2;
pub const POLYLIMIT_HTTP_NEED_APP_KEY: c_int = 3;
pub const POLYLIMIT_HTTP_NEED_PLAN: c_int = 4;
pub const POLYLIMIT_HTTP_REQUEST_VERSION: c_uint = 2;
pub const POLYLIMIT_HTTP_KEY_MAX: usize = 1024;
pub const POLYLIMIT_HTTP_HEADERS_MAX: usize = 4096;
pub const POLYLIMIT_HTTP_CONTENT_TYPE: &str = "text/plain; charset=utf-8";
pub const POLYLIMIT_HTTP_BODY_TOO_MANY_REQUESTS: &str = "Too Many Requests\n";
pub const POLYLIMIT_HTTP_BODY_UNAVAILABLE: &str = "Rate limiter unavailable\n";
pub const POLYLIMIT_HTTP_BODY_NO_KEY: &str = "no rate-limit key in the request\n";
pub const POLYLIMIT_HTTP_BODY_NO_CREDENTIAL: &str = "no credential to rate-limit the request by\n";
pub const POLYLIMIT_HTTP_BODY_BAD_COST: &str = "invalid request cost\n";
pub const POLYLIMIT_HTTP_BODY_FORBIDDEN: &str = "Forbidden\n";

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct polylimit_decision {
    pub allowed: u8,
    pub cached: u8,
    pub degraded: u8,
    pub shadowed: u8,
    pub reserved_flags_: [u8; 4],
    pub limit: i64,
    pub remaining: i64,
    pub retry_after_ms: i64,
    pub reset_after_ms: i64,
    pub granted: i64,
    pub reserved_: [i64; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct polylimit_stats {
    pub version: c_uint,
    pub checks: u64,
    pub admitted: u64,
    pub denied: u64,
    pub errors: u64,
    pub round_trips: u64,
    pub noscript_reloads: u64,
    pub cache_hits: u64,
    pub degraded: u64,
    pub near_limit: u64,
    pub latency_count: u64,
    pub latency_sum_us: u64,
    pub evicting_nodes: u64,
    pub connect_attempts: u64,
    pub latency_le_us: [u64; POLYLIMIT_STATS_LATENCY_BUCKETS],
    pub latency_buckets: [u64; POLYLIMIT_STATS_LATENCY_BUCKETS],
    // version 2
    pub script_calls: u64,
    pub coalesced: u64,
    pub leased_units: u64,
    pub refunded_units: u64,
    pub stranded_units: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct polylimit_error {
    pub code: c_int,
    pub sys_errno: c_int,
    pub outcome_unknown: c_int,
    pub reserved_: [c_int; 1],
    pub message: [c_char; 256],
}

impl Default for polylimit_error {
    fn default() -> Self {
        polylimit_error {
            code: 0,
            sys_errno: 0,
            outcome_unknown: 0,
            reserved_: [0],
            message: [0; 256],
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct polylimit_client_options {
    pub version: c_uint,
    pub pool_size: c_int,
    pub connect_timeout_ms: c_int,
    pub command_timeout_ms: c_int,
    pub acquire_timeout_ms: c_int,
    pub keepalive_s: c_int,
    pub disable_keepalive: c_int,
    pub idle_check_ms: c_int,
    pub name: *const c_char,
    pub tls_ca_file: *const c_char,
    pub tls_ca_dir: *const c_char,
    pub tls_cert_file: *const c_char,
    pub tls_key_file: *const c_char,
    pub tls_server_name: *const c_char,
    pub tls_insecure: c_int,
    pub no_coalescing: c_int,
}

impl Default for polylimit_client_options {
    /// POLYLIMIT_CLIENT_OPTIONS_INIT.
    fn default() -> Self {
        polylimit_client_options {
            version: POLYLIMIT_CLIENT_OPTIONS_VERSION,
            pool_size: 0,
            connect_timeout_ms: 0,
            command_timeout_ms: 0,
            acquire_timeout_ms: 0,
            keepalive_s: 0,
            disable_keepalive: 0,
            idle_check_ms: 0,
            name: core::ptr::null(),
            tls_ca_file: core::ptr::null(),
            tls_ca_dir: core::ptr::null(),
            tls_cert_file: core::ptr::null(),
            tls_key_file: core::ptr::null(),
            tls_server_name: core::ptr::null(),
            tls_insecure: 0,
            no_coalescing: 0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct polylimit_limiter_options {
    pub version: c_uint,
    pub algorithm: c_int,
    pub limit: i64,
    pub window_ms: i64,
    pub prefix: *const c_char,
    pub clock: c_int,
    pub burst: i64,
    pub deny_cache_size: c_int,
    pub failure_policy: c_int,
    pub breaker_failures: c_int,
    pub breaker_cooldown_ms: c_int,
    pub shadow: c_int,
    pub block_ms: i64,
    pub durable_replicas: c_int,
    pub durable_timeout_ms: c_int,
    pub durable_aof: c_int,
    pub lease_units: i64,
    pub lease_ms: i64,
}

impl Default for polylimit_limiter_options {
    /// POLYLIMIT_LIMITER_OPTIONS_INIT (every enum at its 0 default).
    fn default() -> Self {
        polylimit_limiter_options {
            version: POLYLIMIT_LIMITER_OPTIONS_VERSION,
            algorithm: 0,
            limit: 0,
            window_ms: 0,
            prefix: core::ptr::null(),
            clock: 0,
            burst: 0,
            deny_cache_size: 0,
            failure_policy: 0,
            breaker_failures: 0,
            breaker_cooldown_ms: 0,
            shadow: 0,
            block_ms: 0,
            durable_replicas: 0,
            durable_timeout_ms: 0,
            durable_aof: 0,
            lease_units: 0,
            lease_ms: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct polylimit_completion {
    pub token: u64,
    pub status: c_int,
    pub reserved_: [c_int; 3],
    pub decision: polylimit_decision,
    pub error: polylimit_error,
}

/// A string that may be absent: `ptr` null means absent, `len` 0 empty.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct polylimit_str {
    pub ptr: *const c_char,
    pub len: usize,
}

impl Default for polylimit_str {
    /// Absent.
    fn default() -> Self {
        polylimit_str {
            ptr: core::ptr::null(),
            len: 0,
        }
    }
}

/// One request, described by the middleware; everything is borrowed for the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct polylimit_http_request {
    pub version: c_uint,
    pub method: polylimit_str,
    pub path: polylimit_str,
    pub route: polylimit_str,
    pub peer: polylimit_str,
    pub headers: *const polylimit_str,
    pub header_count: usize,
    pub user: polylimit_str,
    pub tenant: polylimit_str,
    pub app_key: polylimit_str,
    pub cost: i64,
    /// (version 2) the tenant's plan as the application's resolver gave it;
    /// absent: not resolved; present and empty: no resolver.
    pub plan: polylimit_str,
}

impl Default for polylimit_http_request {
    /// Version POLYLIMIT_HTTP_REQUEST_VERSION, every string absent, cost 0.
    fn default() -> Self {
        polylimit_http_request {
            version: POLYLIMIT_HTTP_REQUEST_VERSION,
            method: polylimit_str::default(),
            path: polylimit_str::default(),
            route: polylimit_str::default(),
            peer: polylimit_str::default(),
            headers: core::ptr::null(),
            header_count: 0,
            user: polylimit_str::default(),
            tenant: polylimit_str::default(),
            app_key: polylimit_str::default(),
            cost: 0,
            plan: polylimit_str::default(),
        }
    }
}

/// What to do with a request (polylimit_http_prepare).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct polylimit_http_step {
    pub action: c_int,
    pub status: c_int,
    pub rule: c_int,
    pub limiter: c_int,
    pub cost: i64,
    pub key_len: usize,
    pub key: [c_char; POLYLIMIT_HTTP_KEY_MAX],
}

impl Default for polylimit_http_step {
    fn default() -> Self {
        polylimit_http_step {
            action: POLYLIMIT_HTTP_PROCEED,
            status: 0,
            rule: -1,
            limiter: -1,
            cost: 0,
            key_len: 0,
            key: [0; POLYLIMIT_HTTP_KEY_MAX],
        }
    }
}

/// The response to give (polylimit_http_answer, polylimit_http_decide).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct polylimit_http_response {
    pub status: c_int,
    pub reserved_: c_int,
    pub body: *const c_char,
    pub body_len: usize,
    pub headers_len: usize,
    pub headers: [c_char; POLYLIMIT_HTTP_HEADERS_MAX],
}

impl Default for polylimit_http_response {
    fn default() -> Self {
        polylimit_http_response {
            status: 0,
            reserved_: 0,
            body: core::ptr::null(),
            body_len: 0,
            headers_len: 0,
            headers: [0; POLYLIMIT_HTTP_HEADERS_MAX],
        }
    }
}

/// Opaque handles.
#[repr(C)]
pub struct polylimit_client {
    _private: [u8; 0],
}
#[repr(C)]
pub struct polylimit_limiter {
    _private: [u8; 0],
}
#[repr(C)]
pub struct polylimit_queue {
    _private: [u8; 0],
}
#[repr(C)]
pub struct polylimit_http_policy {
    _private: [u8; 0],
}
/// A policy that can be replaced while requests run (polylimit_http_live_*).
#[repr(C)]
pub struct polylimit_http_live {
    _private: [u8; 0],
}

extern "C" {
    pub fn polylimit_error_clear(err: *mut polylimit_error);
    pub fn polylimit_status_name(code: c_int) -> *const c_char;
    pub fn polylimit_version_number() -> c_int;
    pub fn polylimit_version_string() -> *const c_char;

    pub fn polylimit_client_options_init(opts: *mut polylimit_client_options, version: c_uint) -> c_int;
    pub fn polylimit_client_open(
        url: *const c_char,
        options: *const polylimit_client_options,
        out: *mut *mut polylimit_client,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_client_close(client: *mut polylimit_client);

    pub fn polylimit_limiter_options_init(opts: *mut polylimit_limiter_options, version: c_uint) -> c_int;
    pub fn polylimit_limiter_new(
        client: *mut polylimit_client,
        options: *const polylimit_limiter_options,
        out: *mut *mut polylimit_limiter,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_new_spec(
        client: *mut polylimit_client,
        spec: *const c_char,
        options: *const polylimit_limiter_options,
        out: *mut *mut polylimit_limiter,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_free(limiter: *mut polylimit_limiter);

    pub fn polylimit_limiter_check(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        cost: i64,
        out: *mut polylimit_decision,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_check_at(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        cost: i64,
        now_us: i64,
        out: *mut polylimit_decision,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_peek(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        out: *mut polylimit_decision,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_check_many(
        limiter: *mut polylimit_limiter,
        keys: *const *const c_void,
        key_lens: *const usize,
        n: usize,
        cost: i64,
        out: *mut polylimit_decision,
        statuses: *mut c_int,
        key_errors: *mut polylimit_error,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_check_at_most(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        max_cost: i64,
        out: *mut polylimit_decision,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_acquire(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        cost: i64,
        timeout_ms: i64,
        out: *mut polylimit_decision,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_check_limit(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        cost: i64,
        limit: i64,
        window_ms: i64,
        out: *mut polylimit_decision,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_refund(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        units: i64,
        out: *mut polylimit_decision,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_reset(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        err: *mut polylimit_error,
    ) -> c_int;

    pub fn polylimit_queue_new(out: *mut *mut polylimit_queue, err: *mut polylimit_error) -> c_int;
    pub fn polylimit_queue_free(queue: *mut polylimit_queue);
    pub fn polylimit_queue_fd(queue: *const polylimit_queue) -> c_int;
    pub fn polylimit_queue_poll(
        queue: *mut polylimit_queue,
        out: *mut polylimit_completion,
        max: usize,
        timeout_ms: c_int,
    ) -> usize;
    pub fn polylimit_queue_wake(queue: *mut polylimit_queue);
    pub fn polylimit_queue_outstanding(queue: *const polylimit_queue) -> usize;
    pub fn polylimit_limiter_submit_check(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        cost: i64,
        queue: *mut polylimit_queue,
        token: u64,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_submit_peek(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        queue: *mut polylimit_queue,
        token: u64,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_submit_check_at_most(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        max_cost: i64,
        queue: *mut polylimit_queue,
        token: u64,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_submit_check_limit(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        cost: i64,
        limit: i64,
        window_ms: i64,
        queue: *mut polylimit_queue,
        token: u64,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_submit_refund(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        units: i64,
        queue: *mut polylimit_queue,
        token: u64,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_submit_reset(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        queue: *mut polylimit_queue,
        token: u64,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_submit_acquire(
        limiter: *mut polylimit_limiter,
        key: *const c_void,
        key_len: usize,
        cost: i64,
        timeout_ms: i64,
        queue: *mut polylimit_queue,
        token: u64,
        err: *mut polylimit_error,
    ) -> c_int;
    /// `out`, `statuses` and `key_errors` belong to the library until the
    /// completion with `token` has been polled from `queue` (or the queue
    /// has been freed): keep them alive and untouched until then.
    pub fn polylimit_limiter_submit_check_many(
        limiter: *mut polylimit_limiter,
        keys: *const *const c_void,
        key_lens: *const usize,
        n: usize,
        cost: i64,
        out: *mut polylimit_decision,
        statuses: *mut c_int,
        key_errors: *mut polylimit_error,
        queue: *mut polylimit_queue,
        token: u64,
        err: *mut polylimit_error,
    ) -> c_int;

    pub fn polylimit_client_stats(
        client: *mut polylimit_client,
        out: *mut polylimit_stats,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_client_stats_prometheus(
        client: *mut polylimit_client,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_limiter_headers(
        limiter: *const polylimit_limiter,
        decision: *const polylimit_decision,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut polylimit_error,
    ) -> c_int;

    pub fn polylimit_http_policy_new(
        document: *const c_char,
        document_len: usize,
        limiters: *const *mut polylimit_limiter,
        n_limiters: usize,
        out: *mut *mut polylimit_http_policy,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_policy_free(policy: *mut polylimit_http_policy);
    pub fn polylimit_http_policy_load(
        client: *mut polylimit_client,
        document: *const c_char,
        document_len: usize,
        limiters: *const *mut polylimit_limiter,
        n_limiters: usize,
        out: *mut *mut polylimit_http_policy,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_policy_limiter_count(policy: *const polylimit_http_policy) -> usize;
    pub fn polylimit_http_policy_limiter(
        policy: *const polylimit_http_policy,
        index: usize,
        out: *mut *mut polylimit_limiter,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_policy_limiter_plan(policy: *const polylimit_http_policy, index: usize) -> *const c_char;
    pub fn polylimit_http_policy_resolver_timeout_ms(policy: *const polylimit_http_policy) -> i64;
    pub fn polylimit_http_policy_id(policy: *const polylimit_http_policy) -> u64;
    pub fn polylimit_http_policy_header_count(policy: *const polylimit_http_policy) -> usize;
    pub fn polylimit_http_policy_header_name(policy: *const polylimit_http_policy, i: usize) -> *const c_char;
    pub fn polylimit_http_policy_rule_count(policy: *const polylimit_http_policy) -> usize;
    pub fn polylimit_http_policy_rule_name(policy: *const polylimit_http_policy, rule: usize) -> *const c_char;
    pub fn polylimit_http_policy_rule_limiter(policy: *const polylimit_http_policy, rule: usize) -> c_int;
    pub fn polylimit_http_prepare(
        policy: *const polylimit_http_policy,
        request: *const polylimit_http_request,
        out: *mut polylimit_http_step,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_answer(
        policy: *const polylimit_http_policy,
        step: *const polylimit_http_step,
        decision: *const polylimit_decision,
        out: *mut polylimit_http_response,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_decide(
        policy: *const polylimit_http_policy,
        request: *const polylimit_http_request,
        step: *mut polylimit_http_step,
        decision: *mut polylimit_decision,
        response: *mut polylimit_http_response,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_refund_due(
        policy: *const polylimit_http_policy,
        step: *const polylimit_http_step,
        decision: *const polylimit_decision,
        status: c_int,
    ) -> c_int;
    pub fn polylimit_http_settle(
        policy: *const polylimit_http_policy,
        step: *const polylimit_http_step,
        decision: *const polylimit_decision,
        status: c_int,
        refunded: *mut c_int,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_policy_metrics_prometheus(
        policy: *const polylimit_http_policy,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut polylimit_error,
    ) -> c_int;

    pub fn polylimit_http_live_new(
        client: *mut polylimit_client,
        document: *const c_char,
        document_len: usize,
        limiters: *const *mut polylimit_limiter,
        n_limiters: usize,
        out: *mut *mut polylimit_http_live,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_live_open(
        client: *mut polylimit_client,
        path: *const c_char,
        limiters: *const *mut polylimit_limiter,
        n_limiters: usize,
        watch_ms: c_int,
        out: *mut *mut polylimit_http_live,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_live_free(live: *mut polylimit_http_live);
    pub fn polylimit_http_live_current(live: *const polylimit_http_live) -> *mut polylimit_http_policy;
    pub fn polylimit_http_live_reload(
        live: *mut polylimit_http_live,
        document: *const c_char,
        document_len: usize,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_live_reload_file(live: *mut polylimit_http_live, err: *mut polylimit_error) -> c_int;
    pub fn polylimit_http_live_generation(live: *const polylimit_http_live) -> u64;
    pub fn polylimit_http_live_last_error(
        live: *const polylimit_http_live,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_live_cached_plan(
        live: *const polylimit_http_live,
        tenant: *const c_char,
        tenant_len: usize,
        out: *mut c_char,
        cap: usize,
    ) -> c_int;
    pub fn polylimit_http_live_cache_plan(
        live: *mut polylimit_http_live,
        tenant: *const c_char,
        tenant_len: usize,
        plan: *const c_char,
        plan_len: usize,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_http_live_metrics_prometheus(
        live: *const polylimit_http_live,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut polylimit_error,
    ) -> c_int;

    pub fn polylimit_redact_url(
        url: *const c_char,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut polylimit_error,
    ) -> c_int;
    pub fn polylimit_free(ptr: *mut c_void);
}
