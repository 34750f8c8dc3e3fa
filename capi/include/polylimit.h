/*
 * polylimit.h - the stable C ABI of polylimit, a distributed rate limiter on Redis.
 *
 * Conventions (see docs/api-stability.md and docs/error-model.md):
 *  - Handles are opaque and safe to share between threads.
 *  - Every fallible function returns an polylimit_status: POLYLIMIT_OK (0) or a negative
 *    POLYLIMIT_E* code. Callers must treat any unknown negative code like POLYLIMIT_ERROR.
 *  - Error detail goes into a caller-owned polylimit_error (may be NULL). There is no
 *    thread-local "last error".
 *  - A denial is a result (decision.allowed == 0), never an error.
 *  - Keys are bytes: pointer plus length, NUL bytes allowed.
 *  - Options structs start with a version field; initialise them with the
 *    *_INIT macro or the *_init() function. New fields are only appended.
 *  - Memory the library allocates is released by the library (polylimit_*_free /
 *    polylimit_free); every free function accepts NULL.
 */
#ifndef POLYLIMIT_H
#define POLYLIMIT_H

#include <stddef.h>
#include <stdint.h>

/* The single source of the version: CMake and every binding read it here. */
#define POLYLIMIT_VERSION_MAJOR 1
#define POLYLIMIT_VERSION_MINOR 0
#define POLYLIMIT_VERSION_PATCH 0
#define POLYLIMIT_VERSION_NUMBER (POLYLIMIT_VERSION_MAJOR * 10000 + POLYLIMIT_VERSION_MINOR * 100 + POLYLIMIT_VERSION_PATCH)
#define POLYLIMIT_VERSION_STRING "1.0.0"

#if defined(_WIN32) && !defined(POLYLIMIT_STATIC)
#  if defined(POLYLIMIT_BUILDING_LIBRARY)
#    define POLYLIMIT_EXTERN(type) __declspec(dllexport) type
#  else
#    define POLYLIMIT_EXTERN(type) __declspec(dllimport) type
#  endif
#elif defined(POLYLIMIT_BUILDING_LIBRARY)
#  define POLYLIMIT_EXTERN(type) __attribute__((visibility("default"))) type
#else
#  define POLYLIMIT_EXTERN(type) type
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. 0 is success; every error is negative. */
typedef enum polylimit_status {
    POLYLIMIT_OK = 0,
    POLYLIMIT_ERROR = -1,        /**< internal error; not retryable */
    POLYLIMIT_EINVALID = -2,     /**< bad argument; fix the call, do not retry */
    POLYLIMIT_EUNAVAILABLE = -3, /**< cannot connect or the connection broke; retry later */
    POLYLIMIT_ETIMEOUT = -4,     /**< the server did not answer in time; retry later */
    POLYLIMIT_EAUTH = -5,        /**< authentication failed (AUTH / ACL user) */
    POLYLIMIT_EPERM = -6,        /**< ACL denied a command or key (NOPERM) */
    POLYLIMIT_ESCRIPT = -7,      /**< the Lua script failed inside Redis */
    POLYLIMIT_EPOOL = -8,        /**< no pooled connection became free in time; retry later */
    POLYLIMIT_ENOMEM = -9,       /**< out of memory, here or in Redis (OOM) */
    POLYLIMIT_ESERVER = -10,     /**< the server answered with an unexpected error or reply */
    POLYLIMIT_ECLOSED = -11      /**< the handle was closed */
} polylimit_status;

/** Per-call error detail, owned by the caller. Nothing in it needs freeing. */
typedef struct polylimit_error {
    int code;          /**< the polylimit_status returned */
    int sys_errno;     /**< errno of the failing system call, or 0 */
    char message[256]; /**< NUL-terminated, names the argument or the cause */
} polylimit_error;

/** Clears an polylimit_error (code POLYLIMIT_OK, empty message). NULL is ignored. */
POLYLIMIT_EXTERN(void) polylimit_error_clear(polylimit_error *err);

/** Short constant name of a status code, e.g. "POLYLIMIT_ETIMEOUT". Never NULL. */
POLYLIMIT_EXTERN(const char *) polylimit_status_name(int code);

/** Run-time version of the library, as POLYLIMIT_VERSION_NUMBER / POLYLIMIT_VERSION_STRING. */
POLYLIMIT_EXTERN(int) polylimit_version_number(void);
POLYLIMIT_EXTERN(const char *) polylimit_version_string(void);

typedef struct polylimit_client polylimit_client;
typedef struct polylimit_limiter polylimit_limiter;

/* ---- client ------------------------------------------------------------ */

#define POLYLIMIT_CLIENT_OPTIONS_VERSION 1

/**
 * Connection options. A field left at 0 takes the default written beside it;
 * a negative value is rejected with POLYLIMIT_EINVALID.
 */
typedef struct polylimit_client_options {
    unsigned int version;       /**< POLYLIMIT_CLIENT_OPTIONS_VERSION */
    int pool_size;              /**< most connections open at once; 0: 8 */
    int connect_timeout_ms;     /**< TCP/unix connect; 0: 1000 */
    int command_timeout_ms;     /**< send plus reply of one command; 0: 1000 */
    int acquire_timeout_ms;     /**< wait for a free pooled connection; 0: 1000 */
    int keepalive_s;            /**< TCP keepalive interval; 0: 15; -1 is not
                                     allowed, use disable_keepalive */
    int disable_keepalive;      /**< non-zero: no TCP keepalive */
    int idle_check_ms;          /**< PING a connection idle longer than this
                                     before reuse; 0: 30000 */
} polylimit_client_options;

#define POLYLIMIT_CLIENT_OPTIONS_INIT { POLYLIMIT_CLIENT_OPTIONS_VERSION, 0, 0, 0, 0, 0, 0, 0 }

/** Fills opts with defaults for the given version (for callers without macros). */
POLYLIMIT_EXTERN(int) polylimit_client_options_init(polylimit_client_options *opts, unsigned int version);

/**
 * Opens a client for a URL:
 *   redis://[user:pass@]host:port[/db]   unix:///path/to.sock[?db=N]   memory://
 * Connections are made lazily, on the first command.
 *
 * @param url      NUL-terminated URL (required)
 * @param options  NULL for defaults
 * @param out      receives the client; free it with polylimit_client_close
 * @param err      may be NULL
 * @return POLYLIMIT_OK or POLYLIMIT_EINVALID (bad URL or option)
 */
POLYLIMIT_EXTERN(int) polylimit_client_open(const char *url, const polylimit_client_options *options,
                              polylimit_client **out, polylimit_error *err);

/**
 * Closes the client and frees it. Limiters made from it keep working on their
 * own reference until they are freed. NULL is ignored.
 */
POLYLIMIT_EXTERN(void) polylimit_client_close(polylimit_client *client);

/* ---- limiter ----------------------------------------------------------- */

typedef enum polylimit_algorithm {
    POLYLIMIT_ALG_SLIDING_LOG = 0,     /**< exact sliding-window log (ZSET); the default */
    POLYLIMIT_ALG_SLIDING_COUNTER = 1, /**< two fixed windows weighted by elapsed time; O(1)
                                     memory, approximate: at most limit * (1 + f)
                                     units in any window, f < 1 the elapsed part of
                                     the current fixed window */
    POLYLIMIT_ALG_FIXED_WINDOW = 2,    /**< a counter per window-aligned interval; O(1); up
                                     to 2 * limit around a window edge */
    POLYLIMIT_ALG_GCRA = 3             /**< GCRA / token bucket: limit per window, smooth,
                                     up to `burst` at once; O(1) */
} polylimit_algorithm;

typedef enum polylimit_clock {
    POLYLIMIT_CLOCK_SERVER = 0, /**< time from the Redis server (TIME); the default */
    POLYLIMIT_CLOCK_CLIENT = 1  /**< time from this process's realtime clock */
} polylimit_clock;

/** What polylimit_check answers when Redis cannot answer in time (timeout, refused or
 * broken connection, pool exhausted, circuit breaker open). */
typedef enum polylimit_failure_policy {
    POLYLIMIT_FAIL_ERROR = 0,  /**< return the error code (the default) */
    POLYLIMIT_FAIL_OPEN = 1,   /**< admit; decision.degraded = 1 */
    POLYLIMIT_FAIL_CLOSED = 2, /**< deny; degraded = 1, retry_after_ms = the breaker cool-down */
    POLYLIMIT_FAIL_LOCAL = 3   /**< decide with an in-process limiter (same algorithm and
                             limits, this process only); degraded = 1 */
} polylimit_failure_policy;

/* Version 2 appended `burst`. Version 1 structs (without it) stay accepted. */
#define POLYLIMIT_LIMITER_OPTIONS_VERSION 2

/** Upper bounds; values above them are rejected with POLYLIMIT_EINVALID. */
#define POLYLIMIT_MAX_LIMIT 1000000LL              /**< units per window; also the largest burst */
#define POLYLIMIT_MAX_WINDOW_MS 31622400000LL      /**< 366 days */
#define POLYLIMIT_MAX_PREFIX_LEN 256

typedef struct polylimit_limiter_options {
    unsigned int version;   /**< POLYLIMIT_LIMITER_OPTIONS_VERSION */
    int algorithm;          /**< an polylimit_algorithm */
    int64_t limit;          /**< units admitted per window, 1..POLYLIMIT_MAX_LIMIT */
    int64_t window_ms;      /**< window length, 1..POLYLIMIT_MAX_WINDOW_MS */
    const char *prefix;     /**< Redis key prefix; NULL: "pl" (copied) */
    int clock;              /**< an polylimit_clock */
    /* version 2 */
    int64_t burst;          /**< POLYLIMIT_ALG_GCRA: units admitted at once, 0..POLYLIMIT_MAX_LIMIT;
                                 0: limit. Other algorithms: must be 0 */
    int deny_cache_size;    /**< local deny cache: after Redis denies a key with
                                 retry_after R, polylimit_check of that key (same or larger
                                 cost) in this process is denied locally, with
                                 decision.cached = 1 and no round trip, until R has
                                 passed; polylimit_reset clears it. 0: off; else the most
                                 keys remembered (LRU), up to 10000000 */
    int failure_policy;     /**< an polylimit_failure_policy */
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
                                 limit would admit it; 0: off; at most POLYLIMIT_MAX_WINDOW_MS */
} polylimit_limiter_options;

#define POLYLIMIT_LIMITER_OPTIONS_INIT { POLYLIMIT_LIMITER_OPTIONS_VERSION, POLYLIMIT_ALG_SLIDING_LOG, 0, 0, NULL, POLYLIMIT_CLOCK_SERVER, 0, 0, \
                                  POLYLIMIT_FAIL_ERROR, 0, 0, 0, 0 }

/**
 * Fills opts with defaults for the given version (1 or 2); only the fields of
 * that version are written. limit and window_ms stay 0.
 */
POLYLIMIT_EXTERN(int) polylimit_limiter_options_init(polylimit_limiter_options *opts, unsigned int version);

/**
 * Makes a limiter on a client. Validates everything before any I/O.
 *
 * @param client   an open client (the limiter keeps its own reference)
 * @param options  required: limit and window_ms have no default
 * @param out      receives the limiter; free it with polylimit_limiter_free
 * @return POLYLIMIT_OK or POLYLIMIT_EINVALID
 */
POLYLIMIT_EXTERN(int) polylimit_limiter_new(polylimit_client *client, const polylimit_limiter_options *options,
                              polylimit_limiter **out, polylimit_error *err);

/**
 * Makes a limiter from a rate spec: one or more limits for the same keys, all
 * of which must admit a check (or none consumes anything):
 *   "100/minute"   "10/s"   "5 per 2 seconds"   "10/s; 1000/hour"
 *   "10/s burst 20"  (POLYLIMIT_ALG_GCRA only)
 * Units: ms, s, m (min), h, d and their long names, case-insensitive.
 * The Decision reports the tightest limit: the one that denied, or the one
 * with the least remaining.
 *
 * @param client   an open client (the limiter keeps its own reference)
 * @param spec     NUL-terminated rate spec (required)
 * @param options  NULL for defaults; every field is used (algorithm, prefix,
 *                 clock, deny cache, failure policy, breaker, shadow, block)
 *                 except limit, window_ms and burst, which the spec sets
 * @param out      receives the limiter; free it with polylimit_limiter_free
 * @return POLYLIMIT_OK or POLYLIMIT_EINVALID with a message quoting the bad part of spec
 */
POLYLIMIT_EXTERN(int) polylimit_limiter_new_spec(polylimit_client *client, const char *spec, const polylimit_limiter_options *options,
                                   polylimit_limiter **out, polylimit_error *err);

/** Frees a limiter. NULL is ignored. */
POLYLIMIT_EXTERN(void) polylimit_limiter_free(polylimit_limiter *limiter);

/** One decision. Filled by polylimit_check / polylimit_peek. */
typedef struct polylimit_decision {
    uint8_t allowed;        /**< 1: the cost was admitted (and consumed) */
    uint8_t cached;         /**< 1: answered by the local deny cache */
    uint8_t degraded;       /**< 1: answered by the failure policy */
    uint8_t shadowed;       /**< 1: denied, but admitted because the limiter is in
                                 shadow mode */
    int64_t limit;          /**< the limit that decided */
    int64_t remaining;      /**< units left in the window after this decision */
    int64_t retry_after_ms; /**< 0 when allowed; else until this cost would be admitted */
    int64_t reset_after_ms; /**< until the key is back to full capacity */
    int64_t granted;        /**< units admitted: cost or 0; polylimit_check_at_most: how many */
    int64_t reserved_[3];   /**< room for fields added in 1.x; zeroed */
} polylimit_decision;

/**
 * Admits cost units for key, all or nothing, in one atomic script call.
 *
 * @param key      key bytes (NUL allowed); key_len 0 is rejected
 * @param cost     1..limit
 * @param out      receives the decision (required)
 * @return POLYLIMIT_OK whether admitted or denied; an error code otherwise
 */
POLYLIMIT_EXTERN(int) polylimit_check(polylimit_limiter *limiter, const void *key, size_t key_len, int64_t cost,
                        polylimit_decision *out, polylimit_error *err);

/**
 * As polylimit_check, with the time given by the caller (microseconds since the Unix
 * epoch) instead of the limiter's clock: client-clock mode for one call, as
 * replays and tests need.
 */
POLYLIMIT_EXTERN(int) polylimit_check_at(polylimit_limiter *limiter, const void *key, size_t key_len, int64_t cost,
                           int64_t now_us, polylimit_decision *out, polylimit_error *err);

/**
 * Reports what polylimit_check of cost 1 would answer, without consuming anything.
 * allowed says whether one unit would be admitted now.
 */
POLYLIMIT_EXTERN(int) polylimit_peek(polylimit_limiter *limiter, const void *key, size_t key_len,
                       polylimit_decision *out, polylimit_error *err);

/**
 * Decides n keys at once, cost units each, pipelined: one round trip to Redis
 * for the whole batch. Each key is decided on its own (all or nothing per
 * key, not across keys).
 *
 * @param keys      n key pointers (a key may hold NUL bytes)
 * @param key_lens  n key lengths
 * @param n         number of keys, 0..100000; 0 does nothing
 * @param out       n decisions, filled for every key whose status is POLYLIMIT_OK
 * @param statuses  n status codes, one per key (POLYLIMIT_OK or an POLYLIMIT_E* code)
 * @return POLYLIMIT_OK when every key was decided; otherwise the status of the first
 *         key that failed, with err naming it (e.g. "keys[3]: key is empty").
 *         POLYLIMIT_EINVALID without touching out/statuses for bad array arguments.
 */
POLYLIMIT_EXTERN(int) polylimit_check_many(polylimit_limiter *limiter, const void *const *keys, const size_t *key_lens, size_t n,
                             int64_t cost, polylimit_decision *out, int *statuses, polylimit_error *err);

/**
 * Admits as many units as fit now, up to max_cost (allowed = 1 when at least
 * one did); out->granted says how many. Never over-admits (the grant is an
 * all-or-nothing check of what was free); may take two round trips.
 */
POLYLIMIT_EXTERN(int) polylimit_check_at_most(polylimit_limiter *limiter, const void *key, size_t key_len, int64_t max_cost,
                                polylimit_decision *out, polylimit_error *err);

/**
 * Blocks until cost units are admitted, sleeping retry_after between tries,
 * for at most timeout_ms (0: one try). Returns POLYLIMIT_OK with allowed = 0 when
 * admission would come later than the timeout (it returns early then).
 */
POLYLIMIT_EXTERN(int) polylimit_acquire(polylimit_limiter *limiter, const void *key, size_t key_len, int64_t cost, int64_t timeout_ms,
                          polylimit_decision *out, polylimit_error *err);

/**
 * As polylimit_check with the limit given for this call only (limits that change at
 * run time): `limit` units per `window_ms`, the limiter's algorithm (GCRA:
 * burst = limit). Replaces all of the limiter's limits for this call; the
 * deny cache is not used.
 */
POLYLIMIT_EXTERN(int) polylimit_check_limit(polylimit_limiter *limiter, const void *key, size_t key_len, int64_t cost, int64_t limit,
                              int64_t window_ms, polylimit_decision *out, polylimit_error *err);

/**
 * Gives back up to `units` units taken earlier (e.g. the operation they paid
 * for failed), then fills out as polylimit_peek would. Sliding log: the newest
 * units; fixed window and sliding counter: units of the current window;
 * GCRA: the TAT moves back. Clears the key's deny-cache entry.
 * @param units  1..POLYLIMIT_MAX_LIMIT
 */
POLYLIMIT_EXTERN(int) polylimit_refund(polylimit_limiter *limiter, const void *key, size_t key_len, int64_t units, polylimit_decision *out,
                         polylimit_error *err);

/** Clears the key's state: it is back to full capacity. */
POLYLIMIT_EXTERN(int) polylimit_reset(polylimit_limiter *limiter, const void *key, size_t key_len, polylimit_error *err);

/* ---- metrics ----------------------------------------------------------- */

#define POLYLIMIT_STATS_VERSION 1
#define POLYLIMIT_STATS_LATENCY_BUCKETS 16

/** Counters of one client (all its limiters), since it was opened. */
typedef struct polylimit_stats {
    unsigned int version;       /**< set by the caller: POLYLIMIT_STATS_VERSION */
    uint64_t checks;            /**< checks decided or failed (polylimit_check, polylimit_check_at,
                                     each key of polylimit_check_many) */
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
    uint64_t latency_le_us[POLYLIMIT_STATS_LATENCY_BUCKETS];   /**< bucket upper bounds (us);
                                                             the last is UINT64_MAX (+Inf) */
    uint64_t latency_buckets[POLYLIMIT_STATS_LATENCY_BUCKETS]; /**< checks per bucket (not cumulative) */
} polylimit_stats;

#define POLYLIMIT_STATS_INIT { POLYLIMIT_STATS_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, { 0 }, { 0 } }

/**
 * Copies the client's counters into out. Set out->version = POLYLIMIT_STATS_VERSION
 * first (POLYLIMIT_STATS_INIT does).
 * @return POLYLIMIT_OK, or POLYLIMIT_EINVALID for NULL arguments or an unknown version
 */
POLYLIMIT_EXTERN(int) polylimit_client_stats(polylimit_client *client, polylimit_stats *out, polylimit_error *err);

/**
 * The client's counters in the Prometheus text format (metric names start
 * with "polylimit_"). *out receives a NUL-terminated string that the caller
 * frees with polylimit_free; *len (may be NULL) its length without the NUL.
 */
POLYLIMIT_EXTERN(int) polylimit_client_stats_prometheus(polylimit_client *client, char **out, size_t *len, polylimit_error *err);

/** Frees memory that the library allocated and handed over. NULL is ignored. */
POLYLIMIT_EXTERN(void) polylimit_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* POLYLIMIT_H */
