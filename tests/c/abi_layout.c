/*
 * The layout of every public struct, pinned: a change that moves a field or
 * changes a size fails the build here (and tools/abi-check.sh fails CI). The
 * numbers are for LP64 (x86_64, aarch64); a deliberate change in a major
 * version updates them together with capi/abi/.
 */
#include <stddef.h>
#include <stdint.h>

#include "polylimit.h"

#if UINTPTR_MAX == 0xffffffffffffffffu
#define PIN(type, field, offset) _Static_assert(offsetof(type, field) == (offset), #type "." #field " moved")
#define SIZE(type, size) _Static_assert(sizeof(type) == (size), "sizeof(" #type ") changed")

SIZE(polylimit_error, 272);
PIN(polylimit_error, code, 0);
PIN(polylimit_error, sys_errno, 4);
PIN(polylimit_error, outcome_unknown, 8);
PIN(polylimit_error, reserved_, 12);
PIN(polylimit_error, message, 16);

SIZE(polylimit_client_options, 88);
PIN(polylimit_client_options, version, 0);
PIN(polylimit_client_options, pool_size, 4);
PIN(polylimit_client_options, connect_timeout_ms, 8);
PIN(polylimit_client_options, command_timeout_ms, 12);
PIN(polylimit_client_options, acquire_timeout_ms, 16);
PIN(polylimit_client_options, keepalive_s, 20);
PIN(polylimit_client_options, disable_keepalive, 24);
PIN(polylimit_client_options, idle_check_ms, 28);
PIN(polylimit_client_options, name, 32); /* version 2 */
PIN(polylimit_client_options, tls_ca_file, 40);
PIN(polylimit_client_options, tls_ca_dir, 48);
PIN(polylimit_client_options, tls_cert_file, 56);
PIN(polylimit_client_options, tls_key_file, 64);
PIN(polylimit_client_options, tls_server_name, 72);
PIN(polylimit_client_options, tls_insecure, 80);
PIN(polylimit_client_options, no_coalescing, 84); /* version 3 */

SIZE(polylimit_limiter_options, 112);
PIN(polylimit_limiter_options, version, 0);
PIN(polylimit_limiter_options, algorithm, 4);
PIN(polylimit_limiter_options, limit, 8);
PIN(polylimit_limiter_options, window_ms, 16);
PIN(polylimit_limiter_options, prefix, 24);
PIN(polylimit_limiter_options, clock, 32);
PIN(polylimit_limiter_options, burst, 40); /* version 2 starts here */
PIN(polylimit_limiter_options, deny_cache_size, 48);
PIN(polylimit_limiter_options, failure_policy, 52);
PIN(polylimit_limiter_options, breaker_failures, 56);
PIN(polylimit_limiter_options, breaker_cooldown_ms, 60);
PIN(polylimit_limiter_options, shadow, 64);
PIN(polylimit_limiter_options, block_ms, 72);
PIN(polylimit_limiter_options, durable_replicas, 80); /* version 3 starts here */
PIN(polylimit_limiter_options, durable_timeout_ms, 84);
PIN(polylimit_limiter_options, durable_aof, 88);
PIN(polylimit_limiter_options, lease_units, 96); /* version 4 starts here */
PIN(polylimit_limiter_options, lease_ms, 104);

SIZE(polylimit_decision, 72);
PIN(polylimit_decision, allowed, 0);
PIN(polylimit_decision, cached, 1);
PIN(polylimit_decision, degraded, 2);
PIN(polylimit_decision, shadowed, 3);
PIN(polylimit_decision, reserved_flags_, 4);
PIN(polylimit_decision, limit, 8);
PIN(polylimit_decision, remaining, 16);
PIN(polylimit_decision, retry_after_ms, 24);
PIN(polylimit_decision, reset_after_ms, 32);
PIN(polylimit_decision, granted, 40);
PIN(polylimit_decision, reserved_, 48);

SIZE(polylimit_stats, 408);
PIN(polylimit_stats, version, 0);
PIN(polylimit_stats, checks, 8);
PIN(polylimit_stats, admitted, 16);
PIN(polylimit_stats, denied, 24);
PIN(polylimit_stats, errors, 32);
PIN(polylimit_stats, round_trips, 40);
PIN(polylimit_stats, noscript_reloads, 48);
PIN(polylimit_stats, cache_hits, 56);
PIN(polylimit_stats, degraded, 64);
PIN(polylimit_stats, near_limit, 72);
PIN(polylimit_stats, latency_count, 80);
PIN(polylimit_stats, latency_sum_us, 88);
PIN(polylimit_stats, evicting_nodes, 96);
PIN(polylimit_stats, connect_attempts, 104);
PIN(polylimit_stats, latency_le_us, 112);
PIN(polylimit_stats, latency_buckets, 240);
PIN(polylimit_stats, script_calls, 368); /* version 2 */
PIN(polylimit_stats, coalesced, 376);
PIN(polylimit_stats, leased_units, 384);
PIN(polylimit_stats, refunded_units, 392);
PIN(polylimit_stats, stranded_units, 400);

/* Enum values are ABI too. */
_Static_assert(POLYLIMIT_ECLOSED == -11, "status values moved");
_Static_assert(POLYLIMIT_ENOTDURABLE == -12, "status values moved");
_Static_assert(POLYLIMIT_ALG_GCRA == 3, "algorithm values moved");
_Static_assert(POLYLIMIT_FAIL_LOCAL == 3, "failure policy values moved");
_Static_assert(POLYLIMIT_CLOCK_CLIENT == 1, "clock values moved");
#endif

int abi_layout_pinned(void);
int abi_layout_pinned(void) { return 1; }
