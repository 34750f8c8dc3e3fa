// polylimit_capi.cc - the C ABI: noexcept shims over the C++ core.
//
// Every entry point validates its pointers, calls the core inside try, and
// turns any exception into a status code plus a message in the caller's
// polylimit_error. No logic lives here beyond argument conversion.
#include "polylimit.h"

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "polylimit/client.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "polylimit/rate_spec.h"

struct polylimit_client {
  std::shared_ptr<polylimit::Client> rep;
};

struct polylimit_limiter {
  std::unique_ptr<polylimit::Limiter> rep;
};

namespace {

using polylimit::Error;
using polylimit::ErrorCode;

int to_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInternal: return POLYLIMIT_ERROR;
    case ErrorCode::kInvalidArgument: return POLYLIMIT_EINVALID;
    case ErrorCode::kUnavailable: return POLYLIMIT_EUNAVAILABLE;
    case ErrorCode::kTimeout: return POLYLIMIT_ETIMEOUT;
    case ErrorCode::kAuth: return POLYLIMIT_EAUTH;
    case ErrorCode::kPermission: return POLYLIMIT_EPERM;
    case ErrorCode::kScript: return POLYLIMIT_ESCRIPT;
    case ErrorCode::kPoolExhausted: return POLYLIMIT_EPOOL;
    case ErrorCode::kNoMemory: return POLYLIMIT_ENOMEM;
    case ErrorCode::kServer: return POLYLIMIT_ESERVER;
    case ErrorCode::kClosed: return POLYLIMIT_ECLOSED;
  }
  return POLYLIMIT_ERROR;
}

ErrorCode from_status(int status) {
  switch (status) {
    case POLYLIMIT_EINVALID: return ErrorCode::kInvalidArgument;
    case POLYLIMIT_EUNAVAILABLE: return ErrorCode::kUnavailable;
    case POLYLIMIT_ETIMEOUT: return ErrorCode::kTimeout;
    case POLYLIMIT_EAUTH: return ErrorCode::kAuth;
    case POLYLIMIT_EPERM: return ErrorCode::kPermission;
    case POLYLIMIT_ESCRIPT: return ErrorCode::kScript;
    case POLYLIMIT_EPOOL: return ErrorCode::kPoolExhausted;
    case POLYLIMIT_ENOMEM: return ErrorCode::kNoMemory;
    case POLYLIMIT_ESERVER: return ErrorCode::kServer;
    case POLYLIMIT_ECLOSED: return ErrorCode::kClosed;
    default: return ErrorCode::kInternal;
  }
}

int fail(polylimit_error* err, int code, const char* message, int sys_errno = 0) {
  if (err) {
    err->code = code;
    err->sys_errno = sys_errno;
    std::snprintf(err->message, sizeof err->message, "%s", message);
  }
  return code;
}

int ok(polylimit_error* err) {
  if (err) {
    err->code = POLYLIMIT_OK;
    err->sys_errno = 0;
    err->message[0] = '\0';
  }
  return POLYLIMIT_OK;
}

// Runs body; converts whatever it throws. body returns nothing.
template <typename F>
int guarded(polylimit_error* err, F&& body) noexcept {
  try {
    body();
    return ok(err);
  } catch (const Error& e) {
    return fail(err, to_status(e.code()), e.what(), e.sys_errno());
  } catch (const std::bad_alloc&) {
    return fail(err, POLYLIMIT_ENOMEM, "out of memory");
  } catch (const std::exception& e) {
    return fail(err, POLYLIMIT_ERROR, e.what());
  } catch (...) {
    return fail(err, POLYLIMIT_ERROR, "unknown internal error");
  }
}

int null_argument(polylimit_error* err, const char* name) {
  std::string msg = std::string(name) + " is NULL";
  return fail(err, POLYLIMIT_EINVALID, msg.c_str());
}

void fill(polylimit_decision* out, const polylimit::Decision& d) {
  std::memset(out, 0, sizeof *out);
  out->allowed = d.allowed ? 1 : 0;
  out->cached = d.cached ? 1 : 0;
  out->degraded = d.degraded ? 1 : 0;
  out->limit = d.limit;
  out->remaining = d.remaining;
  out->retry_after_ms = d.retry_after_ms;
  out->reset_after_ms = d.reset_after_ms;
  out->shadowed = d.shadowed ? 1 : 0;
  out->granted = d.granted;
}

// Bytes of polylimit_limiter_options a caller of `version` owns; 0 for unknown.
size_t limiter_options_size(unsigned int version) {
  switch (version) {
    case 1: return offsetof(polylimit_limiter_options, burst);
    case 2: return sizeof(polylimit_limiter_options);
    default: return 0;
  }
}

// The caller's options, widened to the current version (new fields 0).
polylimit_limiter_options read_limiter_options(const polylimit_limiter_options* in) {
  size_t size = limiter_options_size(in->version);
  if (size == 0)
    polylimit::throw_invalid("options->version = " + std::to_string(in->version) +
                            " is not a known POLYLIMIT_LIMITER_OPTIONS_VERSION (1.." +
                            std::to_string(POLYLIMIT_LIMITER_OPTIONS_VERSION) + ")");
  polylimit_limiter_options o;
  std::memset(&o, 0, sizeof o);
  std::memcpy(&o, in, size);
  return o;
}

polylimit::Algorithm to_algorithm(int algorithm) {
  switch (algorithm) {
    case POLYLIMIT_ALG_SLIDING_LOG: return polylimit::Algorithm::kSlidingLog;
    case POLYLIMIT_ALG_SLIDING_COUNTER: return polylimit::Algorithm::kSlidingCounter;
    case POLYLIMIT_ALG_FIXED_WINDOW: return polylimit::Algorithm::kFixedWindow;
    case POLYLIMIT_ALG_GCRA: return polylimit::Algorithm::kGcra;
  }
  polylimit::throw_invalid("algorithm = " + std::to_string(algorithm) + " is unknown");
}

polylimit::ClockSource to_clock(int clock) {
  switch (clock) {
    case POLYLIMIT_CLOCK_SERVER: return polylimit::ClockSource::kServer;
    case POLYLIMIT_CLOCK_CLIENT: return polylimit::ClockSource::kClient;
  }
  polylimit::throw_invalid("clock = " + std::to_string(clock) + " is unknown");
}

// The options that polylimit_limiter_new and polylimit_limiter_new_spec share.
void apply_common(const polylimit_limiter_options& o, polylimit::LimiterOptions& lo) {
  if (o.prefix != nullptr) lo.prefix = o.prefix;
  if (o.deny_cache_size < 0)
    polylimit::throw_invalid("deny_cache_size = " + std::to_string(o.deny_cache_size) + " is negative");
  lo.deny_cache_size = static_cast<size_t>(o.deny_cache_size);
  switch (o.failure_policy) {
    case POLYLIMIT_FAIL_ERROR: lo.failure_policy = polylimit::FailurePolicy::kError; break;
    case POLYLIMIT_FAIL_OPEN: lo.failure_policy = polylimit::FailurePolicy::kFailOpen; break;
    case POLYLIMIT_FAIL_CLOSED: lo.failure_policy = polylimit::FailurePolicy::kFailClosed; break;
    case POLYLIMIT_FAIL_LOCAL: lo.failure_policy = polylimit::FailurePolicy::kLocal; break;
    default: polylimit::throw_invalid("failure_policy = " + std::to_string(o.failure_policy) + " is unknown");
  }
  lo.breaker_failures = o.breaker_failures;
  lo.shadow = o.shadow != 0;
  lo.block_ms = o.block_ms;
  if (o.breaker_cooldown_ms != 0) lo.breaker_cooldown_ms = o.breaker_cooldown_ms;
}

// A non-NULL pointer is needed unless the length is 0 (rejected by the core).
bool bad_key(const void* key, size_t key_len) { return key == nullptr && key_len != 0; }

std::string_view key_view(const void* key, size_t key_len) {
  return key_len ? std::string_view(static_cast<const char*>(key), key_len) : std::string_view();
}

}  // namespace

extern "C" {

void polylimit_error_clear(polylimit_error* err) { ok(err); }

const char* polylimit_status_name(int code) {
  switch (code) {
    case POLYLIMIT_OK: return "POLYLIMIT_OK";
    case POLYLIMIT_ERROR: return "POLYLIMIT_ERROR";
    case POLYLIMIT_EINVALID: return "POLYLIMIT_EINVALID";
    case POLYLIMIT_EUNAVAILABLE: return "POLYLIMIT_EUNAVAILABLE";
    case POLYLIMIT_ETIMEOUT: return "POLYLIMIT_ETIMEOUT";
    case POLYLIMIT_EAUTH: return "POLYLIMIT_EAUTH";
    case POLYLIMIT_EPERM: return "POLYLIMIT_EPERM";
    case POLYLIMIT_ESCRIPT: return "POLYLIMIT_ESCRIPT";
    case POLYLIMIT_EPOOL: return "POLYLIMIT_EPOOL";
    case POLYLIMIT_ENOMEM: return "POLYLIMIT_ENOMEM";
    case POLYLIMIT_ESERVER: return "POLYLIMIT_ESERVER";
    case POLYLIMIT_ECLOSED: return "POLYLIMIT_ECLOSED";
    default: return "POLYLIMIT_UNKNOWN";
  }
}

int polylimit_version_number(void) { return POLYLIMIT_VERSION_NUMBER; }
const char* polylimit_version_string(void) { return POLYLIMIT_VERSION_STRING; }

int polylimit_client_options_init(polylimit_client_options* opts, unsigned int version) {
  if (opts == nullptr) return POLYLIMIT_EINVALID;
  if (version != POLYLIMIT_CLIENT_OPTIONS_VERSION) return POLYLIMIT_EINVALID;
  polylimit_client_options init = POLYLIMIT_CLIENT_OPTIONS_INIT;
  *opts = init;
  return POLYLIMIT_OK;
}

int polylimit_limiter_options_init(polylimit_limiter_options* opts, unsigned int version) {
  if (opts == nullptr) return POLYLIMIT_EINVALID;
  size_t size = limiter_options_size(version);
  if (size == 0) return POLYLIMIT_EINVALID;
  polylimit_limiter_options init = POLYLIMIT_LIMITER_OPTIONS_INIT;
  init.version = version;
  std::memcpy(opts, &init, size);  // a version-1 caller's struct is shorter
  return POLYLIMIT_OK;
}

int polylimit_client_open(const char* url, const polylimit_client_options* options, polylimit_client** out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (url == nullptr) return null_argument(err, "url");
  return guarded(err, [&] {
    polylimit::ClientOptions co;
    if (options != nullptr) {
      if (options->version != POLYLIMIT_CLIENT_OPTIONS_VERSION)
        polylimit::throw_invalid("options->version = " + std::to_string(options->version) +
                                " is not POLYLIMIT_CLIENT_OPTIONS_VERSION (" + std::to_string(POLYLIMIT_CLIENT_OPTIONS_VERSION) +
                                ")");
      // 0 picks the default; negatives reach validate() and are rejected there.
      auto pick = [](int v, int def) { return v == 0 ? def : v; };
      co.pool.size = pick(options->pool_size, co.pool.size);
      co.pool.connect_timeout_ms = pick(options->connect_timeout_ms, co.pool.connect_timeout_ms);
      co.pool.command_timeout_ms = pick(options->command_timeout_ms, co.pool.command_timeout_ms);
      co.pool.acquire_timeout_ms = pick(options->acquire_timeout_ms, co.pool.acquire_timeout_ms);
      co.pool.keepalive_s = options->disable_keepalive ? 0 : pick(options->keepalive_s, co.pool.keepalive_s);
      if (options->disable_keepalive == 0 && options->keepalive_s < 0)
        polylimit::throw_invalid("keepalive_s = " + std::to_string(options->keepalive_s) +
                                " is negative (set disable_keepalive to turn keepalive off)");
      co.pool.idle_check_ms = pick(options->idle_check_ms, co.pool.idle_check_ms);
    }
    auto client = std::make_unique<polylimit_client>();
    client->rep = polylimit::Client::open(url, co);
    *out = client.release();
  });
}

void polylimit_client_close(polylimit_client* client) { delete client; }

int polylimit_limiter_new(polylimit_client* client, const polylimit_limiter_options* options, polylimit_limiter** out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (client == nullptr) return null_argument(err, "client");
  if (options == nullptr) return null_argument(err, "options");
  return guarded(err, [&] {
    const polylimit_limiter_options o = read_limiter_options(options);
    polylimit::LimiterOptions lo;
    lo.limit.algorithm = to_algorithm(o.algorithm);
    lo.clock = to_clock(o.clock);
    lo.limit.limit = o.limit;
    lo.limit.window_ms = o.window_ms;
    lo.limit.burst = o.burst;
    apply_common(o, lo);
    auto limiter = std::make_unique<polylimit_limiter>();
    limiter->rep = std::make_unique<polylimit::Limiter>(client->rep, std::move(lo));
    *out = limiter.release();
  });
}

int polylimit_limiter_new_spec(polylimit_client* client, const char* spec, const polylimit_limiter_options* options, polylimit_limiter** out,
                        polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (client == nullptr) return null_argument(err, "client");
  if (spec == nullptr) return null_argument(err, "spec");
  return guarded(err, [&] {
    polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
    if (options != nullptr) o = read_limiter_options(options);
    polylimit::LimiterOptions lo;
    lo.clock = to_clock(o.clock);
    lo.limits = polylimit::parse_rate_spec(spec, to_algorithm(o.algorithm));
    apply_common(o, lo);
    auto limiter = std::make_unique<polylimit_limiter>();
    limiter->rep = std::make_unique<polylimit::Limiter>(client->rep, std::move(lo));
    *out = limiter.release();
  });
}

void polylimit_limiter_free(polylimit_limiter* limiter) { delete limiter; }

int polylimit_check(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost, polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check(key_view(key, key_len), cost)); });
}

int polylimit_check_at(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost, int64_t now_us,
                polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check_at(key_view(key, key_len), cost, now_us)); });
}

int polylimit_peek(polylimit_limiter* limiter, const void* key, size_t key_len, polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->peek(key_view(key, key_len))); });
}

int polylimit_check_many(polylimit_limiter* limiter, const void* const* keys, const size_t* key_lens, size_t n, int64_t cost,
                  polylimit_decision* out, int* statuses, polylimit_error* err) {
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (n == 0) return ok(err);
  if (keys == nullptr) return null_argument(err, "keys");
  if (key_lens == nullptr) return null_argument(err, "key_lens");
  if (out == nullptr) return null_argument(err, "out");
  if (statuses == nullptr) return null_argument(err, "statuses");
  if (n > polylimit::kMaxBatch)
    return fail(err, POLYLIMIT_EINVALID, ("n = " + std::to_string(n) + " is larger than " +
                                   std::to_string(polylimit::kMaxBatch)).c_str());
  return guarded(err, [&] {
    std::vector<std::string_view> views(n);
    for (size_t i = 0; i < n; ++i) {
      std::memset(&out[i], 0, sizeof out[i]);
      statuses[i] = POLYLIMIT_OK;
      // A NULL key with a length cannot be read; the core rejects empty keys.
      views[i] = bad_key(keys[i], key_lens[i]) ? std::string_view() : key_view(keys[i], key_lens[i]);
    }
    std::vector<polylimit::Outcome> outcomes;
    try {
      outcomes = limiter->rep->check_many(views, cost);
    } catch (const Error& e) {  // the whole batch failed (e.g. a bad cost)
      for (size_t i = 0; i < n; ++i) statuses[i] = to_status(e.code());
      throw;
    }
    int first = POLYLIMIT_OK;
    std::string first_message;
    for (size_t i = 0; i < n; ++i) {
      if (bad_key(keys[i], key_lens[i])) {
        statuses[i] = POLYLIMIT_EINVALID;
        if (first == POLYLIMIT_OK) {
          first = POLYLIMIT_EINVALID;
          first_message = "keys[" + std::to_string(i) + "] is NULL";
        }
        continue;
      }
      if (!outcomes[i].error) {
        fill(&out[i], outcomes[i].decision);
        continue;
      }
      int code = POLYLIMIT_ERROR;
      std::string message;
      try {
        std::rethrow_exception(outcomes[i].error);
      } catch (const Error& e) {
        code = to_status(e.code());
        message = e.what();
      } catch (const std::bad_alloc&) {
        code = POLYLIMIT_ENOMEM;
        message = "out of memory";
      } catch (const std::exception& e) {
        message = e.what();
      } catch (...) {
        message = "unknown internal error";
      }
      statuses[i] = code;
      if (first == POLYLIMIT_OK) {
        first = code;
        first_message = "keys[" + std::to_string(i) + "]: " + message;
      }
    }
    if (first != POLYLIMIT_OK) throw Error(from_status(first), first_message);
  });
}

int polylimit_check_at_most(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t max_cost, polylimit_decision* out,
                     polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check_at_most(key_view(key, key_len), max_cost)); });
}

int polylimit_acquire(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost, int64_t timeout_ms,
               polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  if (timeout_ms < 0 || timeout_ms > polylimit::kMaxWindowMs)
    return fail(err, POLYLIMIT_EINVALID, ("timeout_ms = " + std::to_string(timeout_ms) + " is out of range 0.." +
                                   std::to_string(polylimit::kMaxWindowMs)).c_str());
  return guarded(err, [&] {
    fill(out, limiter->rep->acquire(key_view(key, key_len), cost, std::chrono::milliseconds(timeout_ms)));
  });
}

int polylimit_check_limit(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost, int64_t limit,
                   int64_t window_ms, polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] {
    polylimit::LimitParams p;
    p.algorithm = limiter->rep->limits()[0].algorithm;
    p.limit = limit;
    p.window_ms = window_ms;
    fill(out, limiter->rep->check_with(key_view(key, key_len), cost, {p}));
  });
}

int polylimit_refund(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t units, polylimit_decision* out,
              polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->refund(key_view(key, key_len), units)); });
}

int polylimit_reset(polylimit_limiter* limiter, const void* key, size_t key_len, polylimit_error* err) {
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { limiter->rep->reset(key_view(key, key_len)); });
}

int polylimit_client_stats(polylimit_client* client, polylimit_stats* out, polylimit_error* err) {
  if (client == nullptr) return null_argument(err, "client");
  if (out == nullptr) return null_argument(err, "out");
  if (out->version != POLYLIMIT_STATS_VERSION)
    return fail(err, POLYLIMIT_EINVALID, ("out->version = " + std::to_string(out->version) +
                                   " is not POLYLIMIT_STATS_VERSION (" + std::to_string(POLYLIMIT_STATS_VERSION) + ")").c_str());
  return guarded(err, [&] {
    static_assert(POLYLIMIT_STATS_LATENCY_BUCKETS == polylimit::kLatencyBuckets, "bucket count");
    polylimit::Stats s = client->rep->stats();
    polylimit_stats r;
    std::memset(&r, 0, sizeof r);
    r.version = POLYLIMIT_STATS_VERSION;
    r.checks = s.checks;
    r.admitted = s.admitted;
    r.denied = s.denied;
    r.errors = s.errors;
    r.round_trips = s.round_trips;
    r.noscript_reloads = s.noscript_reloads;
    r.cache_hits = s.cache_hits;
    r.degraded = s.degraded;
    r.near_limit = s.near_limit;
    r.latency_count = s.latency_count;
    r.latency_sum_us = s.latency_sum_us;
    for (size_t i = 0; i < polylimit::kLatencyBuckets; ++i) {
      r.latency_le_us[i] = i + 1 < polylimit::kLatencyBuckets ? polylimit::kLatencyBoundsUs[i] : UINT64_MAX;
      r.latency_buckets[i] = s.latency_buckets[i];
    }
    *out = r;
  });
}

int polylimit_client_stats_prometheus(polylimit_client* client, char** out, size_t* len, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (client == nullptr) return null_argument(err, "client");
  return guarded(err, [&] {
    std::string text = polylimit::to_prometheus(client->rep->stats());
    char* buf = static_cast<char*>(std::malloc(text.size() + 1));  // released by polylimit_free
    if (buf == nullptr) throw std::bad_alloc();
    std::memcpy(buf, text.c_str(), text.size() + 1);
    *out = buf;
    if (len != nullptr) *len = text.size();
  });
}

void polylimit_free(void* ptr) { std::free(ptr); }

}  // extern "C"
