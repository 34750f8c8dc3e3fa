// redlimit_capi.cc - the C ABI: noexcept shims over the C++ core.
//
// Every entry point validates its pointers, calls the core inside try, and
// turns any exception into a status code plus a message in the caller's
// rl_error. No logic lives here beyond argument conversion.
#include "redlimit.h"

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

#include "redlimit/client.h"
#include "redlimit/errors.h"
#include "redlimit/limiter.h"
#include "redlimit/rate_spec.h"

struct rl_client {
  std::shared_ptr<redlimit::Client> rep;
};

struct rl_limiter {
  std::unique_ptr<redlimit::Limiter> rep;
};

namespace {

using redlimit::Error;
using redlimit::ErrorCode;

int to_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInternal: return RL_ERROR;
    case ErrorCode::kInvalidArgument: return RL_EINVALID;
    case ErrorCode::kUnavailable: return RL_EUNAVAILABLE;
    case ErrorCode::kTimeout: return RL_ETIMEOUT;
    case ErrorCode::kAuth: return RL_EAUTH;
    case ErrorCode::kPermission: return RL_EPERM;
    case ErrorCode::kScript: return RL_ESCRIPT;
    case ErrorCode::kPoolExhausted: return RL_EPOOL;
    case ErrorCode::kNoMemory: return RL_ENOMEM;
    case ErrorCode::kServer: return RL_ESERVER;
    case ErrorCode::kClosed: return RL_ECLOSED;
  }
  return RL_ERROR;
}

ErrorCode from_status(int status) {
  switch (status) {
    case RL_EINVALID: return ErrorCode::kInvalidArgument;
    case RL_EUNAVAILABLE: return ErrorCode::kUnavailable;
    case RL_ETIMEOUT: return ErrorCode::kTimeout;
    case RL_EAUTH: return ErrorCode::kAuth;
    case RL_EPERM: return ErrorCode::kPermission;
    case RL_ESCRIPT: return ErrorCode::kScript;
    case RL_EPOOL: return ErrorCode::kPoolExhausted;
    case RL_ENOMEM: return ErrorCode::kNoMemory;
    case RL_ESERVER: return ErrorCode::kServer;
    case RL_ECLOSED: return ErrorCode::kClosed;
    default: return ErrorCode::kInternal;
  }
}

int fail(rl_error* err, int code, const char* message, int sys_errno = 0) {
  if (err) {
    err->code = code;
    err->sys_errno = sys_errno;
    std::snprintf(err->message, sizeof err->message, "%s", message);
  }
  return code;
}

int ok(rl_error* err) {
  if (err) {
    err->code = RL_OK;
    err->sys_errno = 0;
    err->message[0] = '\0';
  }
  return RL_OK;
}

// Runs body; converts whatever it throws. body returns nothing.
template <typename F>
int guarded(rl_error* err, F&& body) noexcept {
  try {
    body();
    return ok(err);
  } catch (const Error& e) {
    return fail(err, to_status(e.code()), e.what(), e.sys_errno());
  } catch (const std::bad_alloc&) {
    return fail(err, RL_ENOMEM, "out of memory");
  } catch (const std::exception& e) {
    return fail(err, RL_ERROR, e.what());
  } catch (...) {
    return fail(err, RL_ERROR, "unknown internal error");
  }
}

int null_argument(rl_error* err, const char* name) {
  std::string msg = std::string(name) + " is NULL";
  return fail(err, RL_EINVALID, msg.c_str());
}

void fill(rl_decision* out, const redlimit::Decision& d) {
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

// Bytes of rl_limiter_options a caller of `version` owns; 0 for unknown.
size_t limiter_options_size(unsigned int version) {
  switch (version) {
    case 1: return offsetof(rl_limiter_options, burst);
    case 2: return sizeof(rl_limiter_options);
    default: return 0;
  }
}

// The caller's options, widened to the current version (new fields 0).
rl_limiter_options read_limiter_options(const rl_limiter_options* in) {
  size_t size = limiter_options_size(in->version);
  if (size == 0)
    redlimit::throw_invalid("options->version = " + std::to_string(in->version) +
                            " is not a known RL_LIMITER_OPTIONS_VERSION (1.." +
                            std::to_string(RL_LIMITER_OPTIONS_VERSION) + ")");
  rl_limiter_options o;
  std::memset(&o, 0, sizeof o);
  std::memcpy(&o, in, size);
  return o;
}

redlimit::Algorithm to_algorithm(int algorithm) {
  switch (algorithm) {
    case RL_ALG_SLIDING_LOG: return redlimit::Algorithm::kSlidingLog;
    case RL_ALG_SLIDING_COUNTER: return redlimit::Algorithm::kSlidingCounter;
    case RL_ALG_FIXED_WINDOW: return redlimit::Algorithm::kFixedWindow;
    case RL_ALG_GCRA: return redlimit::Algorithm::kGcra;
  }
  redlimit::throw_invalid("algorithm = " + std::to_string(algorithm) + " is unknown");
}

redlimit::ClockSource to_clock(int clock) {
  switch (clock) {
    case RL_CLOCK_SERVER: return redlimit::ClockSource::kServer;
    case RL_CLOCK_CLIENT: return redlimit::ClockSource::kClient;
  }
  redlimit::throw_invalid("clock = " + std::to_string(clock) + " is unknown");
}

// The options that rl_limiter_new and rl_limiter_new_spec share.
void apply_common(const rl_limiter_options& o, redlimit::LimiterOptions& lo) {
  if (o.prefix != nullptr) lo.prefix = o.prefix;
  if (o.deny_cache_size < 0)
    redlimit::throw_invalid("deny_cache_size = " + std::to_string(o.deny_cache_size) + " is negative");
  lo.deny_cache_size = static_cast<size_t>(o.deny_cache_size);
  switch (o.failure_policy) {
    case RL_FAIL_ERROR: lo.failure_policy = redlimit::FailurePolicy::kError; break;
    case RL_FAIL_OPEN: lo.failure_policy = redlimit::FailurePolicy::kFailOpen; break;
    case RL_FAIL_CLOSED: lo.failure_policy = redlimit::FailurePolicy::kFailClosed; break;
    case RL_FAIL_LOCAL: lo.failure_policy = redlimit::FailurePolicy::kLocal; break;
    default: redlimit::throw_invalid("failure_policy = " + std::to_string(o.failure_policy) + " is unknown");
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

void rl_error_clear(rl_error* err) { ok(err); }

const char* rl_status_name(int code) {
  switch (code) {
    case RL_OK: return "RL_OK";
    case RL_ERROR: return "RL_ERROR";
    case RL_EINVALID: return "RL_EINVALID";
    case RL_EUNAVAILABLE: return "RL_EUNAVAILABLE";
    case RL_ETIMEOUT: return "RL_ETIMEOUT";
    case RL_EAUTH: return "RL_EAUTH";
    case RL_EPERM: return "RL_EPERM";
    case RL_ESCRIPT: return "RL_ESCRIPT";
    case RL_EPOOL: return "RL_EPOOL";
    case RL_ENOMEM: return "RL_ENOMEM";
    case RL_ESERVER: return "RL_ESERVER";
    case RL_ECLOSED: return "RL_ECLOSED";
    default: return "RL_UNKNOWN";
  }
}

int rl_version_number(void) { return RL_VERSION_NUMBER; }
const char* rl_version_string(void) { return RL_VERSION_STRING; }

int rl_client_options_init(rl_client_options* opts, unsigned int version) {
  if (opts == nullptr) return RL_EINVALID;
  if (version != RL_CLIENT_OPTIONS_VERSION) return RL_EINVALID;
  rl_client_options init = RL_CLIENT_OPTIONS_INIT;
  *opts = init;
  return RL_OK;
}

int rl_limiter_options_init(rl_limiter_options* opts, unsigned int version) {
  if (opts == nullptr) return RL_EINVALID;
  size_t size = limiter_options_size(version);
  if (size == 0) return RL_EINVALID;
  rl_limiter_options init = RL_LIMITER_OPTIONS_INIT;
  init.version = version;
  std::memcpy(opts, &init, size);  // a version-1 caller's struct is shorter
  return RL_OK;
}

int rl_client_open(const char* url, const rl_client_options* options, rl_client** out, rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (url == nullptr) return null_argument(err, "url");
  return guarded(err, [&] {
    redlimit::ClientOptions co;
    if (options != nullptr) {
      if (options->version != RL_CLIENT_OPTIONS_VERSION)
        redlimit::throw_invalid("options->version = " + std::to_string(options->version) +
                                " is not RL_CLIENT_OPTIONS_VERSION (" + std::to_string(RL_CLIENT_OPTIONS_VERSION) +
                                ")");
      // 0 picks the default; negatives reach validate() and are rejected there.
      auto pick = [](int v, int def) { return v == 0 ? def : v; };
      co.pool.size = pick(options->pool_size, co.pool.size);
      co.pool.connect_timeout_ms = pick(options->connect_timeout_ms, co.pool.connect_timeout_ms);
      co.pool.command_timeout_ms = pick(options->command_timeout_ms, co.pool.command_timeout_ms);
      co.pool.acquire_timeout_ms = pick(options->acquire_timeout_ms, co.pool.acquire_timeout_ms);
      co.pool.keepalive_s = options->disable_keepalive ? 0 : pick(options->keepalive_s, co.pool.keepalive_s);
      if (options->disable_keepalive == 0 && options->keepalive_s < 0)
        redlimit::throw_invalid("keepalive_s = " + std::to_string(options->keepalive_s) +
                                " is negative (set disable_keepalive to turn keepalive off)");
      co.pool.idle_check_ms = pick(options->idle_check_ms, co.pool.idle_check_ms);
    }
    auto client = std::make_unique<rl_client>();
    client->rep = redlimit::Client::open(url, co);
    *out = client.release();
  });
}

void rl_client_close(rl_client* client) { delete client; }

int rl_limiter_new(rl_client* client, const rl_limiter_options* options, rl_limiter** out, rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (client == nullptr) return null_argument(err, "client");
  if (options == nullptr) return null_argument(err, "options");
  return guarded(err, [&] {
    const rl_limiter_options o = read_limiter_options(options);
    redlimit::LimiterOptions lo;
    lo.limit.algorithm = to_algorithm(o.algorithm);
    lo.clock = to_clock(o.clock);
    lo.limit.limit = o.limit;
    lo.limit.window_ms = o.window_ms;
    lo.limit.burst = o.burst;
    apply_common(o, lo);
    auto limiter = std::make_unique<rl_limiter>();
    limiter->rep = std::make_unique<redlimit::Limiter>(client->rep, std::move(lo));
    *out = limiter.release();
  });
}

int rl_limiter_new_spec(rl_client* client, const char* spec, const rl_limiter_options* options, rl_limiter** out,
                        rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (client == nullptr) return null_argument(err, "client");
  if (spec == nullptr) return null_argument(err, "spec");
  return guarded(err, [&] {
    rl_limiter_options o = RL_LIMITER_OPTIONS_INIT;
    if (options != nullptr) o = read_limiter_options(options);
    redlimit::LimiterOptions lo;
    lo.clock = to_clock(o.clock);
    lo.limits = redlimit::parse_rate_spec(spec, to_algorithm(o.algorithm));
    apply_common(o, lo);
    auto limiter = std::make_unique<rl_limiter>();
    limiter->rep = std::make_unique<redlimit::Limiter>(client->rep, std::move(lo));
    *out = limiter.release();
  });
}

void rl_limiter_free(rl_limiter* limiter) { delete limiter; }

int rl_check(rl_limiter* limiter, const void* key, size_t key_len, int64_t cost, rl_decision* out, rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check(key_view(key, key_len), cost)); });
}

int rl_check_at(rl_limiter* limiter, const void* key, size_t key_len, int64_t cost, int64_t now_us,
                rl_decision* out, rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check_at(key_view(key, key_len), cost, now_us)); });
}

int rl_peek(rl_limiter* limiter, const void* key, size_t key_len, rl_decision* out, rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->peek(key_view(key, key_len))); });
}

int rl_check_many(rl_limiter* limiter, const void* const* keys, const size_t* key_lens, size_t n, int64_t cost,
                  rl_decision* out, int* statuses, rl_error* err) {
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (n == 0) return ok(err);
  if (keys == nullptr) return null_argument(err, "keys");
  if (key_lens == nullptr) return null_argument(err, "key_lens");
  if (out == nullptr) return null_argument(err, "out");
  if (statuses == nullptr) return null_argument(err, "statuses");
  if (n > redlimit::kMaxBatch)
    return fail(err, RL_EINVALID, ("n = " + std::to_string(n) + " is larger than " +
                                   std::to_string(redlimit::kMaxBatch)).c_str());
  return guarded(err, [&] {
    std::vector<std::string_view> views(n);
    for (size_t i = 0; i < n; ++i) {
      std::memset(&out[i], 0, sizeof out[i]);
      statuses[i] = RL_OK;
      // A NULL key with a length cannot be read; the core rejects empty keys.
      views[i] = bad_key(keys[i], key_lens[i]) ? std::string_view() : key_view(keys[i], key_lens[i]);
    }
    std::vector<redlimit::Outcome> outcomes;
    try {
      outcomes = limiter->rep->check_many(views, cost);
    } catch (const Error& e) {  // the whole batch failed (e.g. a bad cost)
      for (size_t i = 0; i < n; ++i) statuses[i] = to_status(e.code());
      throw;
    }
    int first = RL_OK;
    std::string first_message;
    for (size_t i = 0; i < n; ++i) {
      if (bad_key(keys[i], key_lens[i])) {
        statuses[i] = RL_EINVALID;
        if (first == RL_OK) {
          first = RL_EINVALID;
          first_message = "keys[" + std::to_string(i) + "] is NULL";
        }
        continue;
      }
      if (!outcomes[i].error) {
        fill(&out[i], outcomes[i].decision);
        continue;
      }
      int code = RL_ERROR;
      std::string message;
      try {
        std::rethrow_exception(outcomes[i].error);
      } catch (const Error& e) {
        code = to_status(e.code());
        message = e.what();
      } catch (const std::bad_alloc&) {
        code = RL_ENOMEM;
        message = "out of memory";
      } catch (const std::exception& e) {
        message = e.what();
      } catch (...) {
        message = "unknown internal error";
      }
      statuses[i] = code;
      if (first == RL_OK) {
        first = code;
        first_message = "keys[" + std::to_string(i) + "]: " + message;
      }
    }
    if (first != RL_OK) throw Error(from_status(first), first_message);
  });
}

int rl_check_at_most(rl_limiter* limiter, const void* key, size_t key_len, int64_t max_cost, rl_decision* out,
                     rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check_at_most(key_view(key, key_len), max_cost)); });
}

int rl_acquire(rl_limiter* limiter, const void* key, size_t key_len, int64_t cost, int64_t timeout_ms,
               rl_decision* out, rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  if (timeout_ms < 0 || timeout_ms > redlimit::kMaxWindowMs)
    return fail(err, RL_EINVALID, ("timeout_ms = " + std::to_string(timeout_ms) + " is out of range 0.." +
                                   std::to_string(redlimit::kMaxWindowMs)).c_str());
  return guarded(err, [&] {
    fill(out, limiter->rep->acquire(key_view(key, key_len), cost, std::chrono::milliseconds(timeout_ms)));
  });
}

int rl_check_limit(rl_limiter* limiter, const void* key, size_t key_len, int64_t cost, int64_t limit,
                   int64_t window_ms, rl_decision* out, rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] {
    redlimit::LimitParams p;
    p.algorithm = limiter->rep->limits()[0].algorithm;
    p.limit = limit;
    p.window_ms = window_ms;
    fill(out, limiter->rep->check_with(key_view(key, key_len), cost, {p}));
  });
}

int rl_refund(rl_limiter* limiter, const void* key, size_t key_len, int64_t units, rl_decision* out,
              rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->refund(key_view(key, key_len), units)); });
}

int rl_reset(rl_limiter* limiter, const void* key, size_t key_len, rl_error* err) {
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { limiter->rep->reset(key_view(key, key_len)); });
}

int rl_client_stats(rl_client* client, rl_stats* out, rl_error* err) {
  if (client == nullptr) return null_argument(err, "client");
  if (out == nullptr) return null_argument(err, "out");
  if (out->version != RL_STATS_VERSION)
    return fail(err, RL_EINVALID, ("out->version = " + std::to_string(out->version) +
                                   " is not RL_STATS_VERSION (" + std::to_string(RL_STATS_VERSION) + ")").c_str());
  return guarded(err, [&] {
    static_assert(RL_STATS_LATENCY_BUCKETS == redlimit::kLatencyBuckets, "bucket count");
    redlimit::Stats s = client->rep->stats();
    rl_stats r;
    std::memset(&r, 0, sizeof r);
    r.version = RL_STATS_VERSION;
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
    for (size_t i = 0; i < redlimit::kLatencyBuckets; ++i) {
      r.latency_le_us[i] = i + 1 < redlimit::kLatencyBuckets ? redlimit::kLatencyBoundsUs[i] : UINT64_MAX;
      r.latency_buckets[i] = s.latency_buckets[i];
    }
    *out = r;
  });
}

int rl_client_stats_prometheus(rl_client* client, char** out, size_t* len, rl_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (client == nullptr) return null_argument(err, "client");
  return guarded(err, [&] {
    std::string text = redlimit::to_prometheus(client->rep->stats());
    char* buf = static_cast<char*>(std::malloc(text.size() + 1));  // released by rl_free
    if (buf == nullptr) throw std::bad_alloc();
    std::memcpy(buf, text.c_str(), text.size() + 1);
    *out = buf;
    if (len != nullptr) *len = text.size();
  });
}

void rl_free(void* ptr) { std::free(ptr); }

}  // extern "C"
