/*
 * redlimit.h - the stable C ABI of redlimit, a distributed rate limiter on Redis.
 *
 * Conventions (see docs/api-stability.md and docs/error-model.md):
 *  - Handles are opaque and safe to share between threads.
 *  - Every fallible function returns an rl_status: RL_OK (0) or a negative
 *    RL_E* code. Callers must treat any unknown negative code like RL_ERROR.
 *  - Error detail goes into a caller-owned rl_error (may be NULL). There is no
 *    thread-local "last error".
 *  - A denial is a result (decision.allowed == 0), never an error.
 *  - Keys are bytes: pointer plus length, NUL bytes allowed.
 *  - Options structs start with a version field; initialise them with the
 *    *_INIT macro or the *_init() function. New fields are only appended.
 *  - Memory the library allocates is released by the library (rl_*_free /
 *    rl_free); every free function accepts NULL.
 */
#ifndef REDLIMIT_H
#define REDLIMIT_H

#include <stddef.h>
#include <stdint.h>

/* The single source of the version: CMake and every binding read it here. */
#define RL_VERSION_MAJOR 1
#define RL_VERSION_MINOR 0
#define RL_VERSION_PATCH 0
#define RL_VERSION_NUMBER (RL_VERSION_MAJOR * 10000 + RL_VERSION_MINOR * 100 + RL_VERSION_PATCH)
#define RL_VERSION_STRING "1.0.0"

#if defined(_WIN32) && !defined(RL_STATIC)
#  if defined(RL_BUILDING_LIBRARY)
#    define RL_EXTERN(type) __declspec(dllexport) type
#  else
#    define RL_EXTERN(type) __declspec(dllimport) type
#  endif
#elif defined(RL_BUILDING_LIBRARY)
#  define RL_EXTERN(type) __attribute__((visibility("default"))) type
#else
#  define RL_EXTERN(type) type
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. 0 is success; every error is negative. */
typedef enum rl_status {
    RL_OK = 0,
    RL_ERROR = -1,        /**< internal error; not retryable */
    RL_EINVALID = -2,     /**< bad argument; fix the call, do not retry */
    RL_EUNAVAILABLE = -3, /**< cannot connect or the connection broke; retry later */
    RL_ETIMEOUT = -4,     /**< the server did not answer in time; retry later */
    RL_EAUTH = -5,        /**< authentication failed (AUTH / ACL user) */
    RL_EPERM = -6,        /**< ACL denied a command or key (NOPERM) */
    RL_ESCRIPT = -7,      /**< the Lua script failed inside Redis */
    RL_EPOOL = -8,        /**< no pooled connection became free in time; retry later */
    RL_ENOMEM = -9,       /**< out of memory, here or in Redis (OOM) */
    RL_ESERVER = -10,     /**< the server answered with an unexpected error or reply */
    RL_ECLOSED = -11      /**< the handle was closed */
} rl_status;

/** Per-call error detail, owned by the caller. Nothing in it needs freeing. */
typedef struct rl_error {
    int code;          /**< the rl_status returned */
    int sys_errno;     /**< errno of the failing system call, or 0 */
    char message[256]; /**< NUL-terminated, names the argument or the cause */
} rl_error;

/** Clears an rl_error (code RL_OK, empty message). NULL is ignored. */
RL_EXTERN(void) rl_error_clear(rl_error *err);

/** Short constant name of a status code, e.g. "RL_ETIMEOUT". Never NULL. */
RL_EXTERN(const char *) rl_status_name(int code);

/** Run-time version of the library, as RL_VERSION_NUMBER / RL_VERSION_STRING. */
RL_EXTERN(int) rl_version_number(void);
RL_EXTERN(const char *) rl_version_string(void);

typedef struct rl_client rl_client;
typedef struct rl_limiter rl_limiter;

/* ---- client ------------------------------------------------------------ */

#define RL_CLIENT_OPTIONS_VERSION 1

/**
 * Connection options. A field left at 0 takes the default written beside it;
 * a negative value is rejected with RL_EINVALID.
 */
typedef struct rl_client_options {
    unsigned int version;       /**< RL_CLIENT_OPTIONS_VERSION */
    int pool_size;              /**< most connections open at once; 0: 8 */
    int connect_timeout_ms;     /**< TCP/unix connect; 0: 1000 */
    int command_timeout_ms;     /**< send plus reply of one command; 0: 1000 */
    int acquire_timeout_ms;     /**< wait for a free pooled connection; 0: 1000 */
    int keepalive_s;            /**< TCP keepalive interval; 0: 15; -1 is not
                                     allowed, use disable_keepalive */
    int disable_keepalive;      /**< non-zero: no TCP keepalive */
    int idle_check_ms;          /**< PING a connection idle longer than this
                                     before reuse; 0: 30000 */
} rl_client_options;

#define RL_CLIENT_OPTIONS_INIT { RL_CLIENT_OPTIONS_VERSION, 0, 0, 0, 0, 0, 0, 0 }

/** Fills opts with defaults for the given version (for callers without macros). */
RL_EXTERN(int) rl_client_options_init(rl_client_options *opts, unsigned int version);

/**
 * Opens a client for a URL:
 *   redis://[user:pass@]host:port[/db]   unix:///path/to.sock[?db=N]   memory://
 * Connections are made lazily, on the first command.
 *
 * @param url      NUL-terminated URL (required)
 * @param options  NULL for defaults
 * @param out      receives the client; free it with rl_client_close
 * @param err      may be NULL
 * @return RL_OK or RL_EINVALID (bad URL or option)
 */
RL_EXTERN(int) rl_client_open(const char *url, const rl_client_options *options,
                              rl_client **out, rl_error *err);

/**
 * Closes the client and frees it. Limiters made from it keep working on their
 * own reference until they are freed. NULL is ignored.
 */
RL_EXTERN(void) rl_client_close(rl_client *client);

/* ---- limiter ----------------------------------------------------------- */

typedef enum rl_algorithm {
    RL_ALG_SLIDING_LOG = 0,     /**< exact sliding-window log (ZSET); the default */
    RL_ALG_SLIDING_COUNTER = 1, /**< two fixed windows weighted by elapsed time; O(1)
                                     memory, approximate: at most limit * (1 + f)
                                     units in any window, f < 1 the elapsed part of
                                     the current fixed window */
    RL_ALG_FIXED_WINDOW = 2,    /**< a counter per window-aligned interval; O(1); up
                                     to 2 * limit around a window edge */
    RL_ALG_GCRA = 3             /**< GCRA / token bucket: limit per window, smooth,
                                     up to `burst` at once; O(1) */
} rl_algorithm;

typedef enum rl_clock {
    RL_CLOCK_SERVER = 0, /**< time from the Redis server (TIME); the default */
    RL_CLOCK_CLIENT = 1  /**< time from this process's realtime clock */
} rl_clock;

/** What rl_check answers when Redis cannot answer in time (timeout, refused or
 * broken connection, pool exhausted, circuit breaker open). */
typedef enum rl_failure_policy {
    RL_FAIL_ERROR = 0,  /**< return the error code (the default) */
    RL_FAIL_OPEN = 1,   /**< admit; decision.degraded = 1 */
    RL_FAIL_CLOSED = 2, /**< deny; degraded = 1, retry_after_ms = the breaker cool-down */
    RL_FAIL_LOCAL = 3   /**< decide with an in-process limiter (same algorithm and
                             limits, this process only); degraded = 1 */
} rl_failure_policy;

/* Version 2 appended `burst`. Version 1 structs (without it) stay accepted. */
#define RL_LIMITER_OPTIONS_VERSION 2

/** Upper bounds; values above them are rejected with RL_EINVALID. */
#define RL_MAX_LIMIT 1000000LL              /**< units per window; also the largest burst */
#define RL_MAX_WINDOW_MS 31622400000LL      /**< 366 days */
#define RL_MAX_PREFIX_LEN 256

typedef struct rl_limiter_options {
    unsigned int version;   /**< RL_LIMITER_OPTIONS_VERSION */
    int algorithm;          /**< an rl_algorithm */
    int64_t limit;          /**< units admitted per window, 1..RL_MAX_LIMIT */
    int64_t window_ms;      /**< window length, 1..RL_MAX_WINDOW_MS */
    const char *prefix;     /**< Redis key prefix; NULL: "rl" (copied) */
    int clock;              /**< an rl_clock */
    /* version 2 */
    int64_t burst;          /**< RL_ALG_GCRA: units admitted at once, 0..RL_MAX_LIMIT;
                                 0: limit. Other algorithms: must be 0 */
    int deny_cache_size;    /**< local deny cache: after Redis denies a key with
                                 retry_after R, rl_check of that key (same or larger
                                 cost) in this process is denied locally, with
                                 decision.cached = 1 and no round trip, until R has
                                 passed; rl_reset clears it. 0: off; else the most
                                 keys remembered (LRU), up to 10000000 */
    int failure_policy;     /**< an rl_failure_policy */
    int breaker_failures;   /**< circuit breaker: after this many consecutive
                                 failures, fail fast (then apply failure_policy)
                                 for breaker_cooldown_ms, then let one probe
                                 through; 0: no breaker */
    int breaker_cooldown_ms; /**< 0: 1000; at most 3600000 */
    int shadow;             /**< non-zero: shadow (dry-run) mode: decide, consume and
                                 count as usual but always admit; a would-be denial
                                 comes back allowed with decision.shadowed = 1 */
    int64_t block_ms;       /**< punitive block: a key denied by a check stays denied
                                 for block_ms (retry_after_ms says so), even once the
                                 limit would admit it; 0: off; at most RL_MAX_WINDOW_MS */
} rl_limiter_options;

#define RL_LIMITER_OPTIONS_INIT { RL_LIMITER_OPTIONS_VERSION, RL_ALG_SLIDING_LOG, 0, 0, NULL, RL_CLOCK_SERVER, 0, 0, \
                                  RL_FAIL_ERROR, 0, 0, 0, 0 }

/**
 * Fills opts with defaults for the given version (1 or 2); only the fields of
 * that version are written. limit and window_ms stay 0.
 */
RL_EXTERN(int) rl_limiter_options_init(rl_limiter_options *opts, unsigned int version);

/**
 * Makes a limiter on a client. Validates everything before any I/O.
 *
 * @param client   an open client (the limiter keeps its own reference)
 * @param options  required: limit and window_ms have no default
 * @param out      receives the limiter; free it with rl_limiter_free
 * @return RL_OK or RL_EINVALID
 */
RL_EXTERN(int) rl_limiter_new(rl_client *client, const rl_limiter_options *options,
                              rl_limiter **out, rl_error *err);

/**
 * Makes a limiter from a rate spec: one or more limits for the same keys, all
 * of which must admit a check (or none consumes anything):
 *   "100/minute"   "10/s"   "5 per 2 seconds"   "10/s; 1000/hour"
 *   "10/s burst 20"  (RL_ALG_GCRA only)
 * Units: ms, s, m (min), h, d and their long names, case-insensitive.
 * The Decision reports the tightest limit: the one that denied, or the one
 * with the least remaining.
 *
 * @param client   an open client (the limiter keeps its own reference)
 * @param spec     NUL-terminated rate spec (required)
 * @param options  NULL for defaults; every field is used (algorithm, prefix,
 *                 clock, deny cache, failure policy, breaker, shadow, block)
 *                 except limit, window_ms and burst, which the spec sets
 * @param out      receives the limiter; free it with rl_limiter_free
 * @return RL_OK or RL_EINVALID with a message quoting the bad part of spec
 */
RL_EXTERN(int) rl_limiter_new_spec(rl_client *client, const char *spec, const rl_limiter_options *options,
                                   rl_limiter **out, rl_error *err);

/** Frees a limiter. NULL is ignored. */
RL_EXTERN(void) rl_limiter_free(rl_limiter *limiter);

/** One decision. Filled by rl_check / rl_peek. */
typedef struct rl_decision {
    uint8_t allowed;        /**< 1: the cost was admitted (and consumed) */
    uint8_t cached;         /**< 1: answered by the local deny cache */
    uint8_t degraded;       /**< 1: answered by the failure policy */
    uint8_t shadowed;       /**< 1: denied, but admitted because the limiter is in
                                 shadow mode */
    int64_t limit;          /**< the limit that decided */
    int64_t remaining;      /**< units left in the window after this decision */
    int64_t retry_after_ms; /**< 0 when allowed; else until this cost would be admitted */
    int64_t reset_after_ms; /**< until the key is back to full capacity */
    int64_t granted;        /**< units admitted: cost or 0; rl_check_at_most: how many */
    int64_t reserved_[3];   /**< room for fields added in 1.x; zeroed */
} rl_decision;

/**
 * Admits cost units for key, all or nothing, in one atomic script call.
 *
 * @param key      key bytes (NUL allowed); key_len 0 is rejected
 * @param cost     1..limit
 * @param out      receives the decision (required)
 * @return RL_OK whether admitted or denied; an error code otherwise
 */
RL_EXTERN(int) rl_check(rl_limiter *limiter, const void *key, size_t key_len, int64_t cost,
                        rl_decision *out, rl_error *err);

/**
 * As rl_check, with the time given by the caller (microseconds since the Unix
 * epoch) instead of the limiter's clock: client-clock mode for one call, as
 * replays and tests need.
 */
RL_EXTERN(int) rl_check_at(rl_limiter *limiter, const void *key, size_t key_len, int64_t cost,
                           int64_t now_us, rl_decision *out, rl_error *err);

/**
 * Reports what rl_check of cost 1 would answer, without consuming anything.
 * allowed says whether one unit would be admitted now.
 */
RL_EXTERN(int) rl_peek(rl_limiter *limiter, const void *key, size_t key_len,
                       rl_decision *out, rl_error *err);

/**
 * Decides n keys at once, cost units each, pipelined: one round trip to Redis
 * for the whole batch. Each key is decided on its own (all or nothing per
 * key, not across keys).
 *
 * @param keys      n key pointers (a key may hold NUL bytes)
 * @param key_lens  n key lengths
 * @param n         number of keys, 0..100000; 0 does nothing
 * @param out       n decisions, filled for every key whose status is RL_OK
 * @param statuses  n status codes, one per key (RL_OK or an RL_E* code)
 * @return RL_OK when every key was decided; otherwise the status of the first
 *         key that failed, with err naming it (e.g. "keys[3]: key is empty").
 *         RL_EINVALID without touching out/statuses for bad array arguments.
 */
RL_EXTERN(int) rl_check_many(rl_limiter *limiter, const void *const *keys, const size_t *key_lens, size_t n,
                             int64_t cost, rl_decision *out, int *statuses, rl_error *err);

/**
 * Admits as many units as fit now, up to max_cost (allowed = 1 when at least
 * one did); out->granted says how many. Never over-admits (the grant is an
 * all-or-nothing check of what was free); may take two round trips.
 */
RL_EXTERN(int) rl_check_at_most(rl_limiter *limiter, const void *key, size_t key_len, int64_t max_cost,
                                rl_decision *out, rl_error *err);

/**
 * Blocks until cost units are admitted, sleeping retry_after between tries,
 * for at most timeout_ms (0: one try). Returns RL_OK with allowed = 0 when
 * admission would come later than the timeout (it returns early then).
 */
RL_EXTERN(int) rl_acquire(rl_limiter *limiter, const void *key, size_t key_len, int64_t cost, int64_t timeout_ms,
                          rl_decision *out, rl_error *err);

/**
 * As rl_check with the limit given for this call only (limits that change at
 * run time): `limit` units per `window_ms`, the limiter's algorithm (GCRA:
 * burst = limit). Replaces all of the limiter's limits for this call; the
 * deny cache is not used.
 */
RL_EXTERN(int) rl_check_limit(rl_limiter *limiter, const void *key, size_t key_len, int64_t cost, int64_t limit,
                              int64_t window_ms, rl_decision *out, rl_error *err);

/**
 * Gives back up to `units` units taken earlier (e.g. the operation they paid
 * for failed), then fills out as rl_peek would. Sliding log: the newest
 * units; fixed window and sliding counter: units of the current window;
 * GCRA: the TAT moves back. Clears the key's deny-cache entry.
 * @param units  1..RL_MAX_LIMIT
 */
RL_EXTERN(int) rl_refund(rl_limiter *limiter, const void *key, size_t key_len, int64_t units, rl_decision *out,
                         rl_error *err);

/** Clears the key's state: it is back to full capacity. */
RL_EXTERN(int) rl_reset(rl_limiter *limiter, const void *key, size_t key_len, rl_error *err);

/* ---- metrics ----------------------------------------------------------- */

#define RL_STATS_VERSION 1
#define RL_STATS_LATENCY_BUCKETS 16

/** Counters of one client (all its limiters), since it was opened. */
typedef struct rl_stats {
    unsigned int version;       /**< set by the caller: RL_STATS_VERSION */
    uint64_t checks;            /**< checks decided or failed (rl_check, rl_check_at,
                                     each key of rl_check_many) */
    uint64_t admitted;
    uint64_t denied;
    uint64_t errors;            /**< checks that returned an error */
    uint64_t round_trips;       /**< to Redis; a pipelined batch is one */
    uint64_t noscript_reloads;  /**< SCRIPT LOADs after a NOSCRIPT reply */
    uint64_t cache_hits;        /**< answered by the local deny cache */
    uint64_t degraded;          /**< answered by the failure policy */
    uint64_t near_limit;        /**< admitted with remaining below 10% of the limit */
    uint64_t latency_count;     /**< checks in the histogram */
    uint64_t latency_sum_us;
    uint64_t latency_le_us[RL_STATS_LATENCY_BUCKETS];   /**< bucket upper bounds (us);
                                                             the last is UINT64_MAX (+Inf) */
    uint64_t latency_buckets[RL_STATS_LATENCY_BUCKETS]; /**< checks per bucket (not cumulative) */
} rl_stats;

#define RL_STATS_INIT { RL_STATS_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, { 0 }, { 0 } }

/**
 * Copies the client's counters into out. Set out->version = RL_STATS_VERSION
 * first (RL_STATS_INIT does).
 * @return RL_OK, or RL_EINVALID for NULL arguments or an unknown version
 */
RL_EXTERN(int) rl_client_stats(rl_client *client, rl_stats *out, rl_error *err);

/**
 * The client's counters in the Prometheus text format (metric names start
 * with "redlimit_"). *out receives a NUL-terminated string that the caller
 * frees with rl_free; *len (may be NULL) its length without the NUL.
 */
RL_EXTERN(int) rl_client_stats_prometheus(rl_client *client, char **out, size_t *len, rl_error *err);

/** Frees memory that the library allocated and handed over. NULL is ignored. */
RL_EXTERN(void) rl_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* REDLIMIT_H */
