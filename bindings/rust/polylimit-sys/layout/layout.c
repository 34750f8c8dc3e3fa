/* Sizes, alignments and field offsets of every struct of polylimit.h, as the
 * C compiler lays them out. tests/layout.rs compares them with the Rust
 * declarations in src/lib.rs; the order here is the order of LAYOUT there. */
#include <stddef.h>
#include "polylimit.h"

#define S(t) sizeof(t), _Alignof(t)
#define O(t, f) offsetof(t, f)

const size_t polylimit_sys_layout[] = {
    S(polylimit_decision),
    O(polylimit_decision, allowed), O(polylimit_decision, cached), O(polylimit_decision, degraded),
    O(polylimit_decision, shadowed), O(polylimit_decision, reserved_flags_), O(polylimit_decision, limit),
    O(polylimit_decision, remaining), O(polylimit_decision, retry_after_ms), O(polylimit_decision, reset_after_ms),
    O(polylimit_decision, granted), O(polylimit_decision, reserved_),

    S(polylimit_stats),
    O(polylimit_stats, version), O(polylimit_stats, checks), O(polylimit_stats, admitted),
    O(polylimit_stats, denied), O(polylimit_stats, errors), O(polylimit_stats, round_trips),
    O(polylimit_stats, noscript_reloads), O(polylimit_stats, cache_hits), O(polylimit_stats, degraded),
    O(polylimit_stats, near_limit), O(polylimit_stats, latency_count), O(polylimit_stats, latency_sum_us),
    O(polylimit_stats, evicting_nodes), O(polylimit_stats, connect_attempts), O(polylimit_stats, latency_le_us),
    O(polylimit_stats, latency_buckets), O(polylimit_stats, script_calls), O(polylimit_stats, coalesced),
    O(polylimit_stats, leased_units), O(polylimit_stats, refunded_units), O(polylimit_stats, stranded_units),

    S(polylimit_error),
    O(polylimit_error, code), O(polylimit_error, sys_errno), O(polylimit_error, outcome_unknown),
    O(polylimit_error, reserved_), O(polylimit_error, message),

    S(polylimit_client_options),
    O(polylimit_client_options, version), O(polylimit_client_options, pool_size),
    O(polylimit_client_options, connect_timeout_ms), O(polylimit_client_options, command_timeout_ms),
    O(polylimit_client_options, acquire_timeout_ms), O(polylimit_client_options, keepalive_s),
    O(polylimit_client_options, disable_keepalive), O(polylimit_client_options, idle_check_ms),
    O(polylimit_client_options, name), O(polylimit_client_options, tls_ca_file),
    O(polylimit_client_options, tls_ca_dir), O(polylimit_client_options, tls_cert_file),
    O(polylimit_client_options, tls_key_file), O(polylimit_client_options, tls_server_name),
    O(polylimit_client_options, tls_insecure), O(polylimit_client_options, no_coalescing),

    S(polylimit_limiter_options),
    O(polylimit_limiter_options, version), O(polylimit_limiter_options, algorithm),
    O(polylimit_limiter_options, limit), O(polylimit_limiter_options, window_ms),
    O(polylimit_limiter_options, prefix), O(polylimit_limiter_options, clock),
    O(polylimit_limiter_options, burst), O(polylimit_limiter_options, deny_cache_size),
    O(polylimit_limiter_options, failure_policy), O(polylimit_limiter_options, breaker_failures),
    O(polylimit_limiter_options, breaker_cooldown_ms), O(polylimit_limiter_options, shadow),
    O(polylimit_limiter_options, block_ms), O(polylimit_limiter_options, durable_replicas),
    O(polylimit_limiter_options, durable_timeout_ms), O(polylimit_limiter_options, durable_aof),
    O(polylimit_limiter_options, lease_units), O(polylimit_limiter_options, lease_ms),

    S(polylimit_completion),
    O(polylimit_completion, token), O(polylimit_completion, status), O(polylimit_completion, reserved_),
    O(polylimit_completion, decision), O(polylimit_completion, error),

    S(polylimit_str),
    O(polylimit_str, ptr), O(polylimit_str, len),

    S(polylimit_http_request),
    O(polylimit_http_request, version), O(polylimit_http_request, method), O(polylimit_http_request, path),
    O(polylimit_http_request, route), O(polylimit_http_request, peer), O(polylimit_http_request, headers),
    O(polylimit_http_request, header_count), O(polylimit_http_request, user), O(polylimit_http_request, tenant),
    O(polylimit_http_request, app_key), O(polylimit_http_request, cost), O(polylimit_http_request, plan),

    S(polylimit_http_step),
    O(polylimit_http_step, action), O(polylimit_http_step, status), O(polylimit_http_step, rule),
    O(polylimit_http_step, limiter), O(polylimit_http_step, cost), O(polylimit_http_step, key_len),
    O(polylimit_http_step, key),

    S(polylimit_http_response),
    O(polylimit_http_response, status), O(polylimit_http_response, reserved_), O(polylimit_http_response, body),
    O(polylimit_http_response, body_len), O(polylimit_http_response, headers_len),
    O(polylimit_http_response, headers),
};

const size_t polylimit_sys_layout_len = sizeof polylimit_sys_layout / sizeof polylimit_sys_layout[0];

/* Version and option-struct versions the header was compiled with. */
const long long polylimit_sys_header_constants[] = {
    POLYLIMIT_VERSION_NUMBER, POLYLIMIT_CLIENT_OPTIONS_VERSION, POLYLIMIT_LIMITER_OPTIONS_VERSION,
    POLYLIMIT_STATS_VERSION, POLYLIMIT_STATS_LATENCY_BUCKETS,
    POLYLIMIT_HTTP_PROCEED, POLYLIMIT_HTTP_CHECK, POLYLIMIT_HTTP_RESPOND, POLYLIMIT_HTTP_NEED_APP_KEY,
    POLYLIMIT_HTTP_REQUEST_VERSION, POLYLIMIT_HTTP_KEY_MAX, POLYLIMIT_HTTP_HEADERS_MAX,
};

/* The HTTP policy's string constants, in the order tests/layout.rs lists them. */
const char *const polylimit_sys_http_strings[] = {
    POLYLIMIT_HTTP_CONTENT_TYPE, POLYLIMIT_HTTP_BODY_TOO_MANY_REQUESTS, POLYLIMIT_HTTP_BODY_UNAVAILABLE,
    POLYLIMIT_HTTP_BODY_NO_KEY, POLYLIMIT_HTTP_BODY_NO_CREDENTIAL, POLYLIMIT_HTTP_BODY_BAD_COST,
    POLYLIMIT_HTTP_BODY_FORBIDDEN,
};
