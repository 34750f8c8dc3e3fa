//! Every struct declared in src/lib.rs has the C compiler's layout of
//! polylimit.h (layout/layout.c lists sizes, alignments and offsets).

use polylimit_sys::*;
use std::mem::{align_of, offset_of, size_of};

#[link(name = "polylimit_sys_layout", kind = "static")]
extern "C" {
    static polylimit_sys_layout: [usize; 0];
    static polylimit_sys_layout_len: usize;
    static polylimit_sys_header_constants: [i64; 12];
    static polylimit_sys_http_strings: [*const std::ffi::c_char; 7];
}

macro_rules! layout {
    ($($t:ty { $($f:ident),* })*) => {{
        let mut v: Vec<(String, usize)> = Vec::new();
        $(
            v.push((concat!("sizeof ", stringify!($t)).into(), size_of::<$t>()));
            v.push((concat!("alignof ", stringify!($t)).into(), align_of::<$t>()));
            $( v.push((concat!(stringify!($t), ".", stringify!($f)).into(), offset_of!($t, $f))); )*
        )*
        v
    }};
}

#[test]
fn structs_match_the_header() {
    let rust = layout! {
        polylimit_decision { allowed, cached, degraded, shadowed, reserved_flags_, limit, remaining,
                             retry_after_ms, reset_after_ms, granted, reserved_ }
        polylimit_stats { version, checks, admitted, denied, errors, round_trips, noscript_reloads,
                          cache_hits, degraded, near_limit, latency_count, latency_sum_us,
                          evicting_nodes, connect_attempts, latency_le_us, latency_buckets,
                          script_calls, coalesced, leased_units, refunded_units, stranded_units }
        polylimit_error { code, sys_errno, outcome_unknown, reserved_, message }
        polylimit_client_options { version, pool_size, connect_timeout_ms, command_timeout_ms,
                                   acquire_timeout_ms, keepalive_s, disable_keepalive, idle_check_ms,
                                   name, tls_ca_file, tls_ca_dir, tls_cert_file, tls_key_file,
                                   tls_server_name, tls_insecure, no_coalescing }
        polylimit_limiter_options { version, algorithm, limit, window_ms, prefix, clock, burst,
                                    deny_cache_size, failure_policy, breaker_failures,
                                    breaker_cooldown_ms, shadow, block_ms, durable_replicas,
                                    durable_timeout_ms, durable_aof, lease_units, lease_ms }
        polylimit_completion { token, status, reserved_, decision, error }
        polylimit_str { ptr, len }
        polylimit_http_request { version, method, path, route, peer, headers, header_count, user, tenant,
                                 app_key, cost, plan }
        polylimit_http_step { action, status, rule, limiter, cost, key_len, key }
        polylimit_http_response { status, reserved_, body, body_len, headers_len, headers }
    };
    // SAFETY: the C side defines the array with polylimit_sys_layout_len elements.
    let c = unsafe {
        std::slice::from_raw_parts(
            std::ptr::addr_of!(polylimit_sys_layout).cast::<usize>(),
            polylimit_sys_layout_len,
        )
    };
    assert_eq!(c.len(), rust.len(), "layout.c and this test list different fields");
    for ((what, r), c) in rust.iter().zip(c) {
        assert_eq!(r, c, "{what}: Rust {r}, C {c}");
    }
}

#[test]
fn constants_match_the_header() {
    // SAFETY: a plain C array of 12 long longs.
    let c = unsafe { polylimit_sys_header_constants };
    let rust = [
        POLYLIMIT_VERSION_NUMBER as i64,
        POLYLIMIT_CLIENT_OPTIONS_VERSION as i64,
        POLYLIMIT_LIMITER_OPTIONS_VERSION as i64,
        POLYLIMIT_STATS_VERSION as i64,
        POLYLIMIT_STATS_LATENCY_BUCKETS as i64,
        POLYLIMIT_HTTP_PROCEED as i64,
        POLYLIMIT_HTTP_CHECK as i64,
        POLYLIMIT_HTTP_RESPOND as i64,
        POLYLIMIT_HTTP_NEED_APP_KEY as i64,
        POLYLIMIT_HTTP_REQUEST_VERSION as i64,
        POLYLIMIT_HTTP_KEY_MAX as i64,
        POLYLIMIT_HTTP_HEADERS_MAX as i64,
    ];
    assert_eq!(c, rust);
}

#[test]
fn http_strings_match_the_header() {
    // SAFETY: a C array of 7 pointers to NUL-terminated string literals.
    let c = unsafe { polylimit_sys_http_strings };
    let rust = [
        POLYLIMIT_HTTP_CONTENT_TYPE,
        POLYLIMIT_HTTP_BODY_TOO_MANY_REQUESTS,
        POLYLIMIT_HTTP_BODY_UNAVAILABLE,
        POLYLIMIT_HTTP_BODY_NO_KEY,
        POLYLIMIT_HTTP_BODY_NO_CREDENTIAL,
        POLYLIMIT_HTTP_BODY_BAD_COST,
        POLYLIMIT_HTTP_BODY_FORBIDDEN,
    ];
    for (c, r) in c.iter().zip(rust) {
        // SAFETY: see above.
        let c = unsafe { std::ffi::CStr::from_ptr(*c) };
        assert_eq!(c.to_str().unwrap(), r);
    }
}

#[test]
fn version_matches_the_linked_library() {
    // SAFETY: no arguments; returns a static NUL-terminated string.
    let (n, s) = unsafe {
        (
            polylimit_version_number(),
            std::ffi::CStr::from_ptr(polylimit_version_string()),
        )
    };
    assert_eq!(n, POLYLIMIT_VERSION_NUMBER);
    // One version covers every artifact: the crate's is the library's.
    assert_eq!(s.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}
