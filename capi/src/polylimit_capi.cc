// polylimit_capi.cc - the C ABI: noexcept shims over the C++ core.
//
// Every entry point validates its pointers, calls the core inside try, and
// turns any exception into a status code plus a message in the caller's
// polylimit_error. No logic lives here beyond argument conversion.
#include "polylimit.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "polylimit/client.h"
#include "polylimit/errors.h"
#include "polylimit/headers.h"
#include "polylimit/http_policy.h"
#include "polylimit/limiter.h"
#include "polylimit/rate_spec.h"
#include "polylimit/reactor.h"
#include "polylimit/url.h"

struct polylimit_client {
  std::shared_ptr<polylimit::Client> rep;
};

struct polylimit_limiter {
  std::shared_ptr<polylimit::Limiter> rep;  // shared with its checks in flight
};

namespace {

using polylimit::Error;
using polylimit::ErrorCode;

// ErrorCode values are the C statuses (both come from the vocabulary).
int to_status(ErrorCode code) { return static_cast<int>(code); }

int fail(polylimit_error* err, int code, const char* message, int sys_errno = 0, bool outcome_unknown = false) {
  if (err) {
    std::memset(err, 0, offsetof(polylimit_error, message));
    err->code = code;
    err->sys_errno = sys_errno;
    err->outcome_unknown = outcome_unknown ? 1 : 0;
    std::snprintf(err->message, sizeof err->message, "%s", message);
  }
  return code;
}

int ok(polylimit_error* err) {
  if (err) {
    std::memset(err, 0, offsetof(polylimit_error, message));
    err->message[0] = '\0';
  }
  return POLYLIMIT_OK;
}

// The status and message of whatever an exception_ptr holds, and whether the
// failed call may have taken effect (Error::outcome_unknown).
int describe(const std::exception_ptr& error, std::string& message, int& sys_errno, bool& outcome_unknown) {
  sys_errno = 0;
  outcome_unknown = false;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    message = e.what();
    sys_errno = e.sys_errno();
    outcome_unknown = e.outcome_unknown();
    return to_status(e.code());
  } catch (const std::bad_alloc&) {
    message = "out of memory";
    return POLYLIMIT_ENOMEM;
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "unknown internal error";
  }
  return POLYLIMIT_ERROR;
}

// Runs body; converts whatever it throws. body returns nothing.
template <typename F>
int guarded(polylimit_error* err, F&& body) noexcept {
  try {
    body();
    return ok(err);
  } catch (...) {
    std::string message;
    int sys_errno = 0;
    bool unknown = false;
    int code = describe(std::current_exception(), message, sys_errno, unknown);
    return fail(err, code, message.c_str(), sys_errno, unknown);
  }
}

int null_argument(polylimit_error* err, const char* name) {
  std::string msg = std::string(name) + " is NULL";
  return fail(err, POLYLIMIT_EINVALID, msg.c_str());
}

void fill(polylimit_decision* out, const polylimit::Decision& d) {
  std::memset(out, 0, sizeof *out);
  // Every field of the C struct has a namesake in the core's Decision.
#define POLYLIMIT_FILL(name) out->name = static_cast<decltype(out->name)>(d.name);
  POLYLIMIT_DECISION_FIELDS(POLYLIMIT_FILL)
#undef POLYLIMIT_FILL
}

// Bytes of polylimit_limiter_options a caller of `version` owns; 0 for unknown.
size_t limiter_options_size(unsigned int version) {
  switch (version) {
    case 1: return offsetof(polylimit_limiter_options, burst);
    case 2: return offsetof(polylimit_limiter_options, durable_replicas);
    case 3: return offsetof(polylimit_limiter_options, lease_units);
    case 4: return sizeof(polylimit_limiter_options);
    default: return 0;
  }
}

size_t client_options_size(unsigned int version) {
  switch (version) {
    case 1: return offsetof(polylimit_client_options, name);
    case 2: return offsetof(polylimit_client_options, no_coalescing);
    case 3: return sizeof(polylimit_client_options);
    default: return 0;
  }
}

// The caller's options struct, widened to the current version: the fields
// its version has are copied, later ones are 0.
template <typename Options>
Options widen(const Options* in, size_t (*size_of)(unsigned int), const char* version_macro, unsigned int current) {
  size_t size = size_of(in->version);
  if (size == 0)
    polylimit::throw_invalid("options->version = " + std::to_string(in->version) + " is not a known " + version_macro +
                             " (1.." + std::to_string(current) + ")");
  Options o;
  std::memset(&o, 0, sizeof o);
  std::memcpy(&o, in, size);
  return o;
}

polylimit_client_options read_client_options(const polylimit_client_options* in) {
  return widen(in, client_options_size, "POLYLIMIT_CLIENT_OPTIONS_VERSION", POLYLIMIT_CLIENT_OPTIONS_VERSION);
}

std::string opt_string(const char* s) { return s == nullptr ? std::string() : std::string(s); }

// Copies a string the library made into memory the caller frees with polylimit_free.
void hand_over(const std::string& text, char** out, size_t* len) {
  char* buf = static_cast<char*>(std::malloc(text.size() + 1));
  if (buf == nullptr) throw std::bad_alloc();
  std::memcpy(buf, text.c_str(), text.size() + 1);
  *out = buf;
  if (len != nullptr) *len = text.size();
}

polylimit_limiter_options read_limiter_options(const polylimit_limiter_options* in) {
  return widen(in, limiter_options_size, "POLYLIMIT_LIMITER_OPTIONS_VERSION", POLYLIMIT_LIMITER_OPTIONS_VERSION);
}

// An enum value from C: checked against the generated names, then cast (the
// C and C++ enums share their values).
template <typename E, size_t N>
E to_enum(const char* what, int value, const char* const (&names)[N]) {
  if (value < 0 || static_cast<size_t>(value) >= N)
    polylimit::throw_invalid(std::string(what) + " = " + std::to_string(value) + " is unknown (0.." +
                             std::to_string(N - 1) + ")");
  return static_cast<E>(value);
}

polylimit::Algorithm to_algorithm(int v) {
  return to_enum<polylimit::Algorithm>("algorithm", v, polylimit::kAlgorithmNames);
}
polylimit::ClockSource to_clock(int v) { return to_enum<polylimit::ClockSource>("clock", v, polylimit::kClockNames); }

// The options that polylimit_limiter_new and polylimit_limiter_new_spec share.
void apply_common(const polylimit_limiter_options& o, polylimit::LimiterOptions& lo) {
  if (o.prefix != nullptr) lo.prefix = o.prefix;
  polylimit::check_bound(polylimit::bounds::kDenyCacheSize, o.deny_cache_size);  // before the size_t cast
  lo.deny_cache_size = static_cast<size_t>(o.deny_cache_size);
  lo.failure_policy =
      to_enum<polylimit::FailurePolicy>("failure_policy", o.failure_policy, polylimit::kFailurePolicyNames);
  lo.breaker_failures = o.breaker_failures;
  lo.shadow = o.shadow != 0;
  lo.block_ms = o.block_ms;
  if (o.breaker_cooldown_ms != 0) lo.breaker_cooldown_ms = o.breaker_cooldown_ms;
  lo.durable_replicas = o.durable_replicas;
  if (o.durable_timeout_ms != 0) lo.durable_timeout_ms = o.durable_timeout_ms;
  lo.durable_aof = o.durable_aof != 0;
  lo.lease_units = o.lease_units;
  if (o.lease_ms != 0) lo.lease_ms = o.lease_ms;
}

// A non-NULL pointer is needed unless the length is 0 (rejected by the core).
bool bad_key(const void* key, size_t key_len) { return key == nullptr && key_len != 0; }

std::string_view key_view(const void* key, size_t key_len) {
  return key_len ? std::string_view(static_cast<const char*>(key), key_len) : std::string_view();
}

// check_many's per-key results into the caller's arrays; returns (and puts
// in err) the status of the first key that failed. null_keys[i]: key i was a
// NULL pointer with a length (the core saw an empty key in its place).
int report_many(const std::vector<polylimit::Outcome>& outcomes, const std::vector<bool>& null_keys,
                polylimit_decision* out, int* statuses, polylimit_error* key_errors, polylimit_error* err) {
  const size_t n = outcomes.size();
  int first = POLYLIMIT_OK;
  std::string first_message;
  bool any_unknown = false;
  for (size_t i = 0; i < n; ++i) {
    std::string message;
    int sys_errno = 0;
    bool unknown = false;
    int code = POLYLIMIT_OK;
    std::memset(&out[i], 0, sizeof out[i]);
    if (null_keys[i]) {
      code = POLYLIMIT_EINVALID;
      message = "key is NULL";
    } else if (outcomes[i].error) {
      code = describe(outcomes[i].error, message, sys_errno, unknown);
      any_unknown = any_unknown || unknown;
    } else {
      fill(&out[i], outcomes[i].decision);
    }
    statuses[i] = code;
    if (key_errors != nullptr) {
      if (code == POLYLIMIT_OK)
        ok(&key_errors[i]);
      else
        fail(&key_errors[i], code, message.c_str(), sys_errno, unknown);
    }
    if (code != POLYLIMIT_OK && first == POLYLIMIT_OK) {
      first = code;
      first_message = "keys[" + std::to_string(i) + "]: " + message;
    }
  }
  return first == POLYLIMIT_OK ? ok(err) : fail(err, first, first_message.c_str(), 0, any_unknown);
}

}  // namespace

extern "C" {

void polylimit_error_clear(polylimit_error* err) { ok(err); }

const char* polylimit_status_name(int code) {
  for (const polylimit::StatusInfo& info : polylimit::kStatuses)
    if (info.status == code) return info.c_name;
  return "POLYLIMIT_UNKNOWN";
}

int polylimit_version_number(void) { return POLYLIMIT_VERSION_NUMBER; }
const char* polylimit_version_string(void) { return POLYLIMIT_VERSION_STRING; }

int polylimit_client_options_init(polylimit_client_options* opts, unsigned int version) {
  if (opts == nullptr) return POLYLIMIT_EINVALID;
  size_t size = client_options_size(version);
  if (size == 0) return POLYLIMIT_EINVALID;
  polylimit_client_options init = POLYLIMIT_CLIENT_OPTIONS_INIT;
  init.version = version;
  std::memcpy(opts, &init, size);  // a version-1 caller's struct is shorter
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

int polylimit_client_open(const char* url, const polylimit_client_options* options, polylimit_client** out,
                          polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  return guarded(err, [&] {
    polylimit::ClientOptions co;
    if (options != nullptr) {
      const polylimit_client_options o = read_client_options(options);
      options = &o;
      co.name = opt_string(o.name);
      co.tls.ca_file = opt_string(o.tls_ca_file);
      co.tls.ca_dir = opt_string(o.tls_ca_dir);
      co.tls.cert_file = opt_string(o.tls_cert_file);
      co.tls.key_file = opt_string(o.tls_key_file);
      co.tls.server_name = opt_string(o.tls_server_name);
      co.tls.insecure = o.tls_insecure != 0;
      co.coalesce = o.no_coalescing == 0;
      // 0 picks the default; negatives reach validate() and are rejected there.
      auto pick = [](int v, int def) { return v == 0 ? def : v; };
      co.pool.size = pick(options->pool_size, co.pool.size);
      co.pool.connect_timeout_ms = pick(options->connect_timeout_ms, co.pool.connect_timeout_ms);
      co.pool.command_timeout_ms = pick(options->command_timeout_ms, co.pool.command_timeout_ms);
      co.pool.acquire_timeout_ms = pick(options->acquire_timeout_ms, co.pool.acquire_timeout_ms);
      co.pool.keepalive_s = options->disable_keepalive ? 0 : pick(options->keepalive_s, co.pool.keepalive_s);
      co.pool.idle_check_ms = pick(options->idle_check_ms, co.pool.idle_check_ms);
    }
    auto client = std::make_unique<polylimit_client>();
    client->rep = polylimit::Client::open(url == nullptr ? std::string() : std::string(url), co);
    *out = client.release();
  });
}

void polylimit_client_close(polylimit_client* client) {
  if (client == nullptr) return;
  client->rep->close();  // limiters keep the core client alive, closed
  delete client;
}

int polylimit_limiter_new(polylimit_client* client, const polylimit_limiter_options* options, polylimit_limiter** out,
                          polylimit_error* err) {
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
    limiter->rep = std::make_shared<polylimit::Limiter>(client->rep, std::move(lo));
    *out = limiter.release();
  });
}

int polylimit_limiter_new_spec(polylimit_client* client, const char* spec, const polylimit_limiter_options* options,
                               polylimit_limiter** out, polylimit_error* err) {
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
    limiter->rep = std::make_shared<polylimit::Limiter>(client->rep, std::move(lo));
    *out = limiter.release();
  });
}

void polylimit_limiter_free(polylimit_limiter* limiter) { delete limiter; }

int polylimit_limiter_check(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost,
                            polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check(key_view(key, key_len), cost)); });
}

int polylimit_limiter_check_at(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost,
                               int64_t now_us, polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check_at(key_view(key, key_len), cost, now_us)); });
}

int polylimit_limiter_peek(polylimit_limiter* limiter, const void* key, size_t key_len, polylimit_decision* out,
                           polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->peek(key_view(key, key_len))); });
}

int polylimit_limiter_check_many(polylimit_limiter* limiter, const void* const* keys, const size_t* key_lens, size_t n,
                                 int64_t cost, polylimit_decision* out, int* statuses, polylimit_error* key_errors,
                                 polylimit_error* err) {
  // Bad array arguments: every key gets the same status (when it can be told).
  auto reject = [&](int code, const std::string& message, bool unknown = false) {
    if (statuses != nullptr)
      for (size_t i = 0; i < n; ++i) statuses[i] = code;
    if (key_errors != nullptr)
      for (size_t i = 0; i < n; ++i) fail(&key_errors[i], code, message.c_str(), 0, unknown);
    return fail(err, code, message.c_str(), 0, unknown);
  };
  if (limiter == nullptr) return reject(POLYLIMIT_EINVALID, "limiter is NULL");
  if (n == 0) return ok(err);
  if (statuses == nullptr) return reject(POLYLIMIT_EINVALID, "statuses is NULL");
  try {
    polylimit::check_batch_size(n);
  } catch (const Error& e) {
    return fail(err, POLYLIMIT_EINVALID, e.what());  // arrays untouched: n may not be their length
  }
  if (keys == nullptr) return reject(POLYLIMIT_EINVALID, "keys is NULL");
  if (key_lens == nullptr) return reject(POLYLIMIT_EINVALID, "key_lens is NULL");
  if (out == nullptr) return reject(POLYLIMIT_EINVALID, "out is NULL");
  std::vector<polylimit::Outcome> outcomes;
  std::vector<std::string_view> views;
  try {
    views.resize(n);
    for (size_t i = 0; i < n; ++i) {
      std::memset(&out[i], 0, sizeof out[i]);
      // A NULL key with a length cannot be read: it is reported below, and
      // the core sees an empty key in its place.
      views[i] = bad_key(keys[i], key_lens[i]) ? std::string_view() : key_view(keys[i], key_lens[i]);
    }
    outcomes = limiter->rep->check_many(views, cost);
  } catch (...) {  // the whole batch failed (a bad cost, a closed client)
    std::string message;
    int sys_errno = 0;
    bool unknown = false;
    int code = describe(std::current_exception(), message, sys_errno, unknown);
    return reject(code, message, unknown);
  }
  std::vector<bool> null_keys(n);
  for (size_t i = 0; i < n; ++i) null_keys[i] = bad_key(keys[i], key_lens[i]);
  return report_many(outcomes, null_keys, out, statuses, key_errors, err);
}

int polylimit_limiter_check_at_most(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t max_cost,
                                    polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->check_at_most(key_view(key, key_len), max_cost)); });
}

int polylimit_limiter_acquire(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost,
                              int64_t timeout_ms, polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] {
    fill(out, limiter->rep->acquire(key_view(key, key_len), cost, std::chrono::milliseconds(timeout_ms)));
  });
}

int polylimit_limiter_check_limit(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost,
                                  int64_t limit, int64_t window_ms, polylimit_decision* out, polylimit_error* err) {
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

int polylimit_limiter_refund(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t units,
                             polylimit_decision* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, sizeof *out);
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { fill(out, limiter->rep->refund(key_view(key, key_len), units)); });
}

int polylimit_limiter_reset(polylimit_limiter* limiter, const void* key, size_t key_len, polylimit_error* err) {
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return guarded(err, [&] { limiter->rep->reset(key_view(key, key_len)); });
}

int polylimit_client_stats(polylimit_client* client, polylimit_stats* out, polylimit_error* err) {
  if (client == nullptr) return null_argument(err, "client");
  if (out == nullptr) return null_argument(err, "out");
  // Version 1 structs end before the counters version 2 appended.
  const unsigned int version = out->version;
  if (version != 1 && version != POLYLIMIT_STATS_VERSION)
    return fail(err, POLYLIMIT_EINVALID,
                ("out->version = " + std::to_string(version) + " is not a known POLYLIMIT_STATS_VERSION (1.." +
                 std::to_string(POLYLIMIT_STATS_VERSION) + ")")
                    .c_str());
  return guarded(err, [&] {
    static_assert(POLYLIMIT_STATS_LATENCY_BUCKETS == polylimit::kLatencyBuckets, "bucket count");
    polylimit::Stats s = client->rep->stats();
    polylimit_stats r;
    std::memset(&r, 0, sizeof r);
    r.version = version;
#define POLYLIMIT_COPY(name) r.name = s.name;
    POLYLIMIT_STATS_COUNTERS(POLYLIMIT_COPY)
#undef POLYLIMIT_COPY
    for (size_t i = 0; i < polylimit::kLatencyBuckets; ++i) {
      r.latency_le_us[i] = i + 1 < polylimit::kLatencyBuckets ? polylimit::kLatencyBoundsUs[i] : UINT64_MAX;
      r.latency_buckets[i] = s.latency_buckets[i];
    }
    std::memcpy(out, &r, version == 1 ? offsetof(polylimit_stats, script_calls) : sizeof r);
  });
}

int polylimit_client_stats_prometheus(polylimit_client* client, char** out, size_t* len, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (client == nullptr) return null_argument(err, "client");
  return guarded(err,
                 [&] { hand_over(polylimit::to_prometheus(client->rep->stats(), client->rep->name()), out, len); });
}

int polylimit_clients_stats_prometheus(polylimit_client* const* clients, size_t n, char** out, size_t* len,
                                       polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (clients == nullptr) return null_argument(err, "clients");
  return guarded(err, [&] {
    if (n < 1 || n > static_cast<size_t>(POLYLIMIT_MAX_BATCH))
      polylimit::throw_invalid("n = " + std::to_string(n) + " is out of range 1.." +
                               std::to_string(POLYLIMIT_MAX_BATCH));
    std::vector<std::pair<std::string, polylimit::Stats>> all;
    all.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (clients[i] == nullptr) polylimit::throw_invalid("clients[" + std::to_string(i) + "] is NULL");
      all.emplace_back(clients[i]->rep->name(), clients[i]->rep->stats());
    }
    hand_over(polylimit::to_prometheus(all), out, len);
  });
}

int polylimit_limiter_headers(const polylimit_limiter* limiter, const polylimit_decision* decision, char** out,
                              size_t* len, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (decision == nullptr) return null_argument(err, "decision");
  return guarded(err, [&] {
    polylimit::Decision d;
    d.allowed = decision->allowed != 0;
    d.limit = decision->limit;
    d.remaining = decision->remaining;
    d.retry_after_ms = decision->retry_after_ms;
    d.reset_after_ms = decision->reset_after_ms;
    hand_over(polylimit::format_headers(limiter->rep->headers(d)), out, len);
  });
}

int polylimit_redact_url(const char* url, char** out, size_t* len, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (url == nullptr) return null_argument(err, "url");
  return guarded(err, [&] { hand_over(polylimit::redact_url(url), out, len); });
}

void polylimit_free(void* ptr) { std::free(ptr); }

}  // extern "C"

// ------------------------------------------------------------ non-blocking checks

namespace {

// A completion is pushed by a library thread, or by the thread reading
// replies in polylimit_queue_poll (the queue's reactor); the queue lives
// until the caller's handle is freed and the last check in flight has
// completed.
struct QueueState {
  std::mutex mu;
  // Completions not yet polled: items[head..]. A vector, not a deque: a
  // completion is larger than a deque's block, so each would allocate one.
  std::vector<polylimit_completion> items;
  size_t head = 0;
  bool empty() const { return head == items.size(); }
  int fd = -1;            // eventfd: 1 while items wait (or after a wake); in the reactor's set
  bool signaled = false;  // fd was written since the last reset
  bool freed = false;     // the caller's handle is gone: drop completions
  bool woken = false;
  std::atomic<size_t> outstanding{0};
  // The epoll set the caller watches (polylimit_queue_fd): fd plus the
  // sockets of connections with this queue's calls in flight.
  std::shared_ptr<polylimit::Reactor> reactor;

  ~QueueState() {
    if (fd >= 0) ::close(fd);
  }
  void signal() {
    const uint64_t one = 1;
    while (::write(fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    signaled = true;
  }
  void reset_signal() {
    uint64_t value;
    while (::read(fd, &value, sizeof value) < 0 && errno == EINTR) {
    }
    signaled = false;
  }
  void push(const polylimit_completion& c) {
    push(c, [](polylimit_completion&) {});
  }
  // `write` fills caller memory (check_many's arrays) and may finish the
  // completion. It runs under the lock and only while the caller's handle
  // lives: after polylimit_queue_free nothing is written, so freeing the
  // queue is how a caller stops the library from touching those arrays.
  template <typename Write>
  void push(polylimit_completion c, Write&& write) {
    std::lock_guard<std::mutex> lock(mu);
    outstanding.fetch_sub(1, std::memory_order_relaxed);
    if (freed) return;
    write(c);
    if (head >= 64 && head * 2 >= items.size()) {  // a poller that never empties it: drop what it took
      items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(head));
      head = 0;
    }
    items.push_back(c);
    // Under the lock: a poll that empties the queue resets the fd, and a
    // late signal would leave it readable with nothing to take. A thread
    // reading this queue's replies takes them itself right after: no signal.
    if (!signaled && !polylimit::Reactor::driving(reactor.get())) signal();
  }
};

}  // namespace

struct polylimit_queue {
  std::shared_ptr<QueueState> state;
};

namespace {

// The completion of a call that returns a decision (or, `no_decision`,
// nothing: reset), as the core's callbacks report it.
polylimit_completion completion(uint64_t token, const polylimit::Decision& d, const std::exception_ptr& error,
                                bool no_decision = false) {
  polylimit_completion c;
  std::memset(&c, 0, sizeof c);
  c.token = token;
  if (error) {
    std::string message;
    int sys_errno = 0;
    bool unknown = false;
    c.status = describe(error, message, sys_errno, unknown);
    fail(&c.error, c.status, message.c_str(), sys_errno, unknown);
  } else {
    c.status = POLYLIMIT_OK;
    if (!no_decision) fill(&c.decision, d);
    ok(&c.error);
  }
  return c;
}

// Counts the call as outstanding, then lets `start` hand the core its
// callback; when `start` throws, nothing was queued and the error is the
// submit's return value.
template <typename Start>
int submit(polylimit_queue* queue, polylimit_error* err, Start&& start) noexcept {
  std::shared_ptr<QueueState> state = queue->state;
  return guarded(err, [&] {
    state->outstanding.fetch_add(1, std::memory_order_relaxed);
    // Its replies are read by the thread that polls this queue.
    polylimit::Reactor::Scope scope(state->reactor);
    try {
      start(state);
    } catch (...) {
      state->outstanding.fetch_sub(1, std::memory_order_relaxed);
      throw;
    }
  });
}

// The callback of the calls that complete with a decision.
polylimit::Limiter::CheckDone decision_done(std::shared_ptr<QueueState> state, uint64_t token) {
  return [state = std::move(state), token](const polylimit::Decision& d, std::exception_ptr error) {
    state->push(completion(token, d, error));
  };
}

}  // namespace

int polylimit_queue_new(polylimit_queue** out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  return guarded(err, [&] {
    auto q = std::make_unique<polylimit_queue>();
    q->state = std::make_shared<QueueState>();
    q->state->fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->state->fd < 0) throw Error(ErrorCode::kInternal, std::string("eventfd: ") + std::strerror(errno), errno);
    q->state->reactor = polylimit::Reactor::make();
    q->state->reactor->add_signal(q->state->fd);
    *out = q.release();
  });
}

void polylimit_queue_free(polylimit_queue* queue) {
  if (queue == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(queue->state->mu);
    queue->state->freed = true;
    queue->state->items.clear();
    queue->state->head = 0;
    queue->state->woken = true;
    queue->state->signal();  // threads waiting in polylimit_queue_poll return
  }
  delete queue;
}

int polylimit_queue_fd(const polylimit_queue* queue) { return queue == nullptr ? -1 : queue->state->reactor->fd(); }

size_t polylimit_queue_poll(polylimit_queue* queue, polylimit_completion* out, size_t max, int timeout_ms) {
  if (queue == nullptr || out == nullptr || max == 0) return 0;
  std::shared_ptr<QueueState> state = queue->state;
  QueueState& q = *state;
  // Read only for a bounded wait: an event loop's look (0) reads no clock.
  const auto until = timeout_ms > 0 ? std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)
                                    : std::chrono::steady_clock::time_point();
  int wait_ms = 0;
  for (;;) {
    // Reads the replies that are in (this queue's and any other calls on
    // those connections), waiting up to wait_ms for one or for a completion.
    q.reactor->drive(wait_ms);
    {
      std::lock_guard<std::mutex> lock(q.mu);
      size_t n = 0;
      while (n < max && !q.empty()) out[n++] = q.items[q.head++];
      if (q.empty()) {
        q.items.clear();  // keeps its capacity
        q.head = 0;
      }
      if (n > 0 || q.woken) {
        if (q.empty()) {
          if (q.signaled) q.reset_signal();
          q.woken = false;
        } else if (!q.signaled) {
          q.signal();  // pushed by this thread's read, unsignalled: readable while completions wait
        }
        return n;
      }
    }
    if (timeout_ms == 0) return 0;
    if (timeout_ms > 0) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      if (left <= 0) return 0;
      wait_ms = static_cast<int>(left);
    } else {
      wait_ms = -1;
    }
  }
}

void polylimit_queue_wake(polylimit_queue* queue) {
  if (queue == nullptr) return;
  std::lock_guard<std::mutex> lock(queue->state->mu);
  queue->state->woken = true;
  if (!queue->state->signaled) queue->state->signal();
}

size_t polylimit_queue_outstanding(const polylimit_queue* queue) {
  return queue == nullptr ? 0 : queue->state->outstanding.load(std::memory_order_relaxed);
}

namespace {

// The arguments every one-key submit takes: a limiter, a key and a queue.
int submit_arguments(const polylimit_limiter* limiter, const void* key, size_t key_len, const polylimit_queue* queue,
                     polylimit_error* err) {
  if (limiter == nullptr) return null_argument(err, "limiter");
  if (queue == nullptr) return null_argument(err, "queue");
  if (bad_key(key, key_len)) return null_argument(err, "key");
  return POLYLIMIT_OK;
}

}  // namespace

int polylimit_limiter_submit_check(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost,
                                   polylimit_queue* queue, uint64_t token, polylimit_error* err) {
  if (int rc = submit_arguments(limiter, key, key_len, queue, err)) return rc;
  return submit(queue, err, [&](std::shared_ptr<QueueState> state) {
    polylimit::Limiter::check_async(limiter->rep, key_view(key, key_len), cost, decision_done(state, token));
  });
}

int polylimit_limiter_submit_peek(polylimit_limiter* limiter, const void* key, size_t key_len, polylimit_queue* queue,
                                  uint64_t token, polylimit_error* err) {
  if (int rc = submit_arguments(limiter, key, key_len, queue, err)) return rc;
  return submit(queue, err, [&](std::shared_ptr<QueueState> state) {
    polylimit::Limiter::peek_async(limiter->rep, key_view(key, key_len), decision_done(state, token));
  });
}

int polylimit_limiter_submit_check_at_most(polylimit_limiter* limiter, const void* key, size_t key_len,
                                           int64_t max_cost, polylimit_queue* queue, uint64_t token,
                                           polylimit_error* err) {
  if (int rc = submit_arguments(limiter, key, key_len, queue, err)) return rc;
  return submit(queue, err, [&](std::shared_ptr<QueueState> state) {
    polylimit::Limiter::check_at_most_async(limiter->rep, key_view(key, key_len), max_cost,
                                            decision_done(state, token));
  });
}

int polylimit_limiter_submit_check_limit(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost,
                                         int64_t limit, int64_t window_ms, polylimit_queue* queue, uint64_t token,
                                         polylimit_error* err) {
  if (int rc = submit_arguments(limiter, key, key_len, queue, err)) return rc;
  return submit(queue, err, [&](std::shared_ptr<QueueState> state) {
    polylimit::LimitParams p;
    p.algorithm = limiter->rep->limits()[0].algorithm;
    p.limit = limit;
    p.window_ms = window_ms;
    polylimit::Limiter::check_with_async(limiter->rep, key_view(key, key_len), cost, {p}, decision_done(state, token));
  });
}

int polylimit_limiter_submit_refund(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t units,
                                    polylimit_queue* queue, uint64_t token, polylimit_error* err) {
  if (int rc = submit_arguments(limiter, key, key_len, queue, err)) return rc;
  return submit(queue, err, [&](std::shared_ptr<QueueState> state) {
    polylimit::Limiter::refund_async(limiter->rep, key_view(key, key_len), units, decision_done(state, token));
  });
}

int polylimit_limiter_submit_reset(polylimit_limiter* limiter, const void* key, size_t key_len, polylimit_queue* queue,
                                   uint64_t token, polylimit_error* err) {
  if (int rc = submit_arguments(limiter, key, key_len, queue, err)) return rc;
  return submit(queue, err, [&](std::shared_ptr<QueueState> state) {
    polylimit::Limiter::reset_async(limiter->rep, key_view(key, key_len), [state, token](std::exception_ptr error) {
      state->push(completion(token, polylimit::Decision{}, error, /*no_decision=*/true));
    });
  });
}

int polylimit_limiter_submit_acquire(polylimit_limiter* limiter, const void* key, size_t key_len, int64_t cost,
                                     int64_t timeout_ms, polylimit_queue* queue, uint64_t token, polylimit_error* err) {
  if (int rc = submit_arguments(limiter, key, key_len, queue, err)) return rc;
  return submit(queue, err, [&](std::shared_ptr<QueueState> state) {
    polylimit::Limiter::acquire_async(limiter->rep, key_view(key, key_len), cost, std::chrono::milliseconds(timeout_ms),
                                      decision_done(state, token));
  });
}

int polylimit_limiter_submit_check_many(polylimit_limiter* limiter, const void* const* keys, const size_t* key_lens,
                                        size_t n, int64_t cost, polylimit_decision* out, int* statuses,
                                        polylimit_error* key_errors, polylimit_queue* queue, uint64_t token,
                                        polylimit_error* err) {
  // Argument errors as polylimit_limiter_check_many reports them.
  auto reject = [&](int code, const std::string& message, bool unknown = false) {
    if (statuses != nullptr)
      for (size_t i = 0; i < n; ++i) statuses[i] = code;
    if (key_errors != nullptr)
      for (size_t i = 0; i < n; ++i) fail(&key_errors[i], code, message.c_str(), 0, unknown);
    return fail(err, code, message.c_str(), 0, unknown);
  };
  if (queue == nullptr) return null_argument(err, "queue");
  if (limiter == nullptr) return reject(POLYLIMIT_EINVALID, "limiter is NULL");
  if (n == 0) {  // nothing to decide, but the completion still comes, once
    return submit(queue, err, [&](std::shared_ptr<QueueState> state) {
      state->push(completion(token, polylimit::Decision{}, nullptr, true));
    });
  }
  if (statuses == nullptr) return reject(POLYLIMIT_EINVALID, "statuses is NULL");
  try {
    polylimit::check_batch_size(n);
  } catch (const Error& e) {
    return fail(err, POLYLIMIT_EINVALID, e.what());  // arrays untouched: n may not be their length
  }
  if (keys == nullptr) return reject(POLYLIMIT_EINVALID, "keys is NULL");
  if (key_lens == nullptr) return reject(POLYLIMIT_EINVALID, "key_lens is NULL");
  if (out == nullptr) return reject(POLYLIMIT_EINVALID, "out is NULL");
  polylimit_error submit_err;
  int code = submit(queue, &submit_err, [&](std::shared_ptr<QueueState> state) {
    // The core copies the keys before check_many_async returns; the arrays
    // are written when the batch completes (QueueState::push).
    std::vector<std::string_view> views(n);
    auto null_keys = std::make_shared<std::vector<bool>>(n);
    for (size_t i = 0; i < n; ++i) {
      (*null_keys)[i] = bad_key(keys[i], key_lens[i]);
      views[i] = (*null_keys)[i] ? std::string_view() : key_view(keys[i], key_lens[i]);
    }
    polylimit::Limiter::check_many_async(
        limiter->rep, views, cost,
        [state, token, null_keys, out, statuses, key_errors](std::vector<polylimit::Outcome> outcomes) {
          polylimit_completion c;
          std::memset(&c, 0, sizeof c);
          c.token = token;
          state->push(c, [&](polylimit_completion& done) {
            done.status = report_many(outcomes, *null_keys, out, statuses, key_errors, &done.error);
          });
        });
  });
  // A failure of the whole batch (a bad cost, a closed client): every key
  // gets it, as from polylimit_limiter_check_many.
  if (code != POLYLIMIT_OK) return reject(code, submit_err.message, submit_err.outcome_unknown != 0);
  return ok(err);
}

// ------------------------------------------------------------ the HTTP request policy

// A reference on a policy: each handle holds one (polylimit_http_policy_free
// drops it); the policy keeps its limiters.
struct polylimit_http_policy {
  std::shared_ptr<const polylimit::http::Policy> rep;
};

struct polylimit_http_live {
  std::unique_ptr<polylimit::http::LivePolicy> rep;
};

namespace {

std::string_view str_view(const polylimit_str& s) {
  return s.ptr == nullptr ? std::string_view() : std::string_view(s.ptr, s.len);
}

// The header values of a request: on the stack for the usual few.
struct HeaderValues {
  std::string_view inline_[16];
  std::vector<std::string_view> more;
  std::string_view* resize(size_t n) {
    if (n <= 16) return inline_;
    more.resize(n);
    return more.data();
  }
};

// The core's view of a request; `values` holds the header values.
bool to_request(const polylimit_http_request* in, polylimit::http::Request& out, HeaderValues& values,
                polylimit_error* err) {
  if (in->version != 1 && in->version != POLYLIMIT_HTTP_REQUEST_VERSION) {
    fail(err, POLYLIMIT_EINVALID, "request.version: unknown; use POLYLIMIT_HTTP_REQUEST_VERSION");
    return false;
  }
  if (in->headers == nullptr && in->header_count != 0) {
    null_argument(err, "request.headers");
    return false;
  }
  out.method = str_view(in->method);
  out.path = str_view(in->path);
  out.route = str_view(in->route);
  out.peer = str_view(in->peer);
  std::string_view* v = values.resize(in->header_count);
  for (size_t i = 0; i < in->header_count; ++i) v[i] = str_view(in->headers[i]);
  out.headers = v;
  out.header_count = in->header_count;
  out.user = str_view(in->user);
  out.tenant = str_view(in->tenant);
  out.app_key = str_view(in->app_key);
  out.cost = in->cost;
  // A version 1 request has no plan (and its caller no resolver).
  out.plan = in->version >= 2 ? str_view(in->plan) : std::string_view("", 0);
  return true;
}

void to_step(const polylimit::http::Step& s, polylimit_http_step* out) {
  if (s.key.size() > POLYLIMIT_HTTP_KEY_MAX)
    polylimit::throw_invalid("request.app_key: the key is longer than POLYLIMIT_HTTP_KEY_MAX (" +
                             std::to_string(POLYLIMIT_HTTP_KEY_MAX) + ") bytes");
  out->action = static_cast<int>(s.action);
  out->status = s.status;
  out->rule = s.rule;
  out->limiter = s.limiter;
  out->cost = s.cost;
  out->key_len = s.key.size();
  std::memcpy(out->key, s.key.data(), s.key.size());
}

// The core's Step; `with_key`: the key too (the answer needs none).
polylimit::http::Step from_step(const polylimit_http_step* in, bool with_key = true) {
  polylimit::http::Step s;
  s.action = static_cast<polylimit::http::Action>(in->action);
  s.status = in->status;
  s.rule = in->rule;
  s.limiter = in->limiter;
  s.cost = in->cost;
  if (with_key) s.key.assign(in->key, std::min<size_t>(in->key_len, POLYLIMIT_HTTP_KEY_MAX));
  return s;
}

polylimit::Decision to_decision(const polylimit_decision& in) {
  polylimit::Decision d;
#define POLYLIMIT_TAKE(name) d.name = static_cast<decltype(d.name)>(in.name);
  POLYLIMIT_DECISION_FIELDS(POLYLIMIT_TAKE)
#undef POLYLIMIT_TAKE
  return d;
}

void to_answer(const polylimit::http::Answer& a, polylimit_http_response* out) {
  out->status = a.status;
  out->body = a.body.empty() ? "" : a.body.data();
  out->body_len = a.body.size();
  // "Name: value\n" each, straight into the caller's buffer.
  size_t n = 0;
  auto put = [&](const char* p, size_t len) {
    if (n + len >= POLYLIMIT_HTTP_HEADERS_MAX)
      throw Error(ErrorCode::kInternal, "the response headers outgrew POLYLIMIT_HTTP_HEADERS_MAX");
    std::memcpy(out->headers + n, p, len);
    n += len;
  };
  for (const auto& h : a.headers) {
    put(h.name.data(), h.name.size());
    put(": ", 2);
    put(h.value.data(), h.value.size());
    put("\n", 1);
  }
  out->headers[n] = '\0';
  out->headers_len = n;
}

polylimit::http::Answer answer_of(const polylimit_http_policy* policy, const polylimit::http::Step& s,
                                  const polylimit::Decision* d) {
  if (s.action == polylimit::http::Action::kRespond) return policy->rep->respond(s);
  if (s.action == polylimit::http::Action::kCheck) return policy->rep->answer(s, d);
  return {};
}

}  // namespace

extern "C" {

int polylimit_http_policy_new(const char* document, size_t document_len, polylimit_limiter* const* limiters,
                              size_t n_limiters, polylimit_http_policy** out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (document == nullptr) return null_argument(err, "document");
  if (limiters == nullptr && n_limiters != 0) return null_argument(err, "limiters");
  for (size_t i = 0; i < n_limiters; ++i)
    if (limiters[i] == nullptr) return null_argument(err, ("limiters[" + std::to_string(i) + "]").c_str());
  return polylimit_http_policy_load(nullptr, document, document_len, limiters, n_limiters, out, err);
}

}  // extern "C"

namespace {

// The application's limiters and the client, as the core's policy takes them.
int policy_sources(polylimit_client* client, polylimit_limiter* const* limiters, size_t n_limiters,
                   polylimit::http::PolicySources& out, polylimit_error* err) {
  if (limiters == nullptr && n_limiters != 0) return null_argument(err, "limiters");
  for (size_t i = 0; i < n_limiters; ++i) {
    if (limiters[i] == nullptr) return null_argument(err, ("limiters[" + std::to_string(i) + "]").c_str());
    out.limiters.push_back(limiters[i]->rep);
  }
  if (client != nullptr) out.client = client->rep;
  return POLYLIMIT_OK;
}

}  // namespace

extern "C" {

int polylimit_http_policy_load(polylimit_client* client, const char* document, size_t document_len,
                               polylimit_limiter* const* limiters, size_t n_limiters, polylimit_http_policy** out,
                               polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (document == nullptr) return null_argument(err, "document");
  polylimit::http::PolicySources sources;
  if (int rc = policy_sources(client, limiters, n_limiters, sources, err); rc != POLYLIMIT_OK) return rc;
  return guarded(err, [&] {
    auto p = std::make_unique<polylimit_http_policy>();
    p->rep = polylimit::http::Policy::load(std::string_view(document, document_len), std::move(sources));
    *out = p.release();
  });
}

void polylimit_http_policy_free(polylimit_http_policy* policy) { delete policy; }

size_t polylimit_http_policy_limiter_count(const polylimit_http_policy* policy) {
  return policy == nullptr ? 0 : policy->rep->limiter_count();
}

int polylimit_http_policy_limiter(const polylimit_http_policy* policy, size_t index, polylimit_limiter** out,
                                  polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (policy == nullptr) return null_argument(err, "policy");
  if (index >= policy->rep->limiter_count())
    return fail(err, POLYLIMIT_EINVALID,
                ("index: " + std::to_string(index) + " is not one of the policy's " +
                 std::to_string(policy->rep->limiter_count()) + " limiters")
                    .c_str());
  const auto& l = policy->rep->limiter(static_cast<int>(index));
  if (!l)
    return fail(err, POLYLIMIT_EINVALID,
                ("index: limiter " + std::to_string(index) +
                 " is the document's own; make the policy with polylimit_http_policy_load and a client")
                    .c_str());
  return guarded(err, [&] { *out = new polylimit_limiter{l}; });
}

const char* polylimit_http_policy_limiter_plan(const polylimit_http_policy* policy, size_t index) {
  if (policy == nullptr || index >= policy->rep->limiter_count()) return nullptr;
  return policy->rep->limiter_plan(static_cast<int>(index)).c_str();
}

int64_t polylimit_http_policy_resolver_timeout_ms(const polylimit_http_policy* policy) {
  if (policy == nullptr || !policy->rep->resolver().enabled) return 0;
  return policy->rep->resolver().timeout_ms;
}

uint64_t polylimit_http_policy_id(const polylimit_http_policy* policy) {
  return policy == nullptr ? 0 : policy->rep->id();
}

size_t polylimit_http_policy_header_count(const polylimit_http_policy* policy) {
  return policy == nullptr ? 0 : policy->rep->header_names().size();
}

const char* polylimit_http_policy_header_name(const polylimit_http_policy* policy, size_t i) {
  if (policy == nullptr || i >= policy->rep->header_names().size()) return nullptr;
  return policy->rep->header_names()[i].c_str();
}

size_t polylimit_http_policy_rule_count(const polylimit_http_policy* policy) {
  return policy == nullptr ? 0 : policy->rep->rule_count();
}

const char* polylimit_http_policy_rule_name(const polylimit_http_policy* policy, size_t rule) {
  if (policy == nullptr || rule >= policy->rep->rule_count()) return nullptr;
  return policy->rep->rule_name(static_cast<int>(rule)).c_str();
}

int polylimit_http_policy_rule_limiter(const polylimit_http_policy* policy, size_t rule) {
  if (policy == nullptr || rule >= policy->rep->rule_count()) return -1;
  return policy->rep->rule_limiter(static_cast<int>(rule));
}

int polylimit_http_policy_rule_counts_all(const polylimit_http_policy* policy, size_t rule) {
  if (policy == nullptr || rule >= policy->rep->rule_count()) return 0;
  return policy->rep->counts_all(static_cast<int>(rule)) ? 1 : 0;
}

int polylimit_http_prepare(const polylimit_http_policy* policy, const polylimit_http_request* request,
                           polylimit_http_step* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, offsetof(polylimit_http_step, key));
  out->rule = -1;
  if (policy == nullptr) return null_argument(err, "policy");
  if (request == nullptr) return null_argument(err, "request");
  return guarded(err, [&] {
    polylimit::http::Request r;
    HeaderValues values;
    if (!to_request(request, r, values, err)) throw Error(ErrorCode::kInvalidArgument, err ? err->message : "request");
    to_step(policy->rep->prepare(r), out);
  });
}

int polylimit_http_answer(const polylimit_http_policy* policy, const polylimit_http_step* step,
                          const polylimit_decision* decision, polylimit_http_response* out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  std::memset(out, 0, offsetof(polylimit_http_response, headers));
  out->headers[0] = '\0';
  out->body = "";
  if (policy == nullptr) return null_argument(err, "policy");
  if (step == nullptr) return null_argument(err, "step");
  return guarded(err, [&] {
    polylimit::Decision d;
    if (decision != nullptr) d = to_decision(*decision);
    to_answer(answer_of(policy, from_step(step, false), decision != nullptr ? &d : nullptr), out);
  });
}

int polylimit_http_decide(const polylimit_http_policy* policy, const polylimit_http_request* request,
                          polylimit_http_step* step, polylimit_decision* decision, polylimit_http_response* response,
                          polylimit_error* err) {
  if (step == nullptr) return null_argument(err, "step");
  if (response == nullptr) return null_argument(err, "response");
  if (decision != nullptr) std::memset(decision, 0, sizeof *decision);
  std::memset(step, 0, offsetof(polylimit_http_step, key));
  step->rule = -1;
  std::memset(response, 0, offsetof(polylimit_http_response, headers));
  response->headers[0] = '\0';
  response->body = "";
  if (policy == nullptr) return null_argument(err, "policy");
  if (request == nullptr) return null_argument(err, "request");
  // A failed check is an answer (503, or on with on_error "allow"), not a
  // failure of the call; its detail still goes to `err` for the caller's log.
  polylimit_error failure;
  bool check_failed = false;
  int rc = guarded(err, [&] {
    polylimit::http::Request r;
    HeaderValues values;
    if (!to_request(request, r, values, err)) throw Error(ErrorCode::kInvalidArgument, err ? err->message : "request");
    polylimit::http::Step s = policy->rep->prepare(r);
    to_step(s, step);
    if (s.action != polylimit::http::Action::kCheck) {
      to_answer(answer_of(policy, s, nullptr), response);
      return;
    }
    const auto& limiter = policy->rep->limiter(policy->rep->step_limiter(s));
    if (!limiter)
      throw Error(ErrorCode::kInvalidArgument, "the policy's own limits need a client: use polylimit_http_policy_load");
    polylimit::Decision d;
    try {
      d = limiter->check(s.key, s.cost);
    } catch (const Error& e) {
      check_failed = true;
      fail(&failure, to_status(e.code()), e.what(), e.sys_errno(), e.outcome_unknown());
    }
    if (!check_failed && decision != nullptr) fill(decision, d);
    to_answer(policy->rep->answer(s, check_failed ? nullptr : &d), response);
  });
  if (rc == POLYLIMIT_OK && check_failed && err != nullptr) *err = failure;
  return rc;
}

int polylimit_http_refund_due(const polylimit_http_policy* policy, const polylimit_http_step* step,
                              const polylimit_decision* decision, int status) {
  if (policy == nullptr || step == nullptr || decision == nullptr) return 0;
  return policy->rep->refund_due(from_step(step, false), to_decision(*decision), status) ? 1 : 0;
}

int polylimit_http_settle(const polylimit_http_policy* policy, const polylimit_http_step* step,
                          const polylimit_decision* decision, int status, int* refunded, polylimit_error* err) {
  if (refunded != nullptr) *refunded = 0;
  if (policy == nullptr) return null_argument(err, "policy");
  if (step == nullptr) return null_argument(err, "step");
  if (decision == nullptr) return null_argument(err, "decision");
  return guarded(err, [&] {
    polylimit::http::Step s = from_step(step);
    if (!policy->rep->refund_due(s, to_decision(*decision), status)) return;
    const auto& limiter = policy->rep->limiter(policy->rep->step_limiter(s));
    if (!limiter)
      throw Error(ErrorCode::kInvalidArgument, "the policy's own limits need a client: use polylimit_http_policy_load");
    limiter->refund(s.key, s.cost);
    if (refunded != nullptr) *refunded = 1;
  });
}

int polylimit_http_policy_metrics_prometheus(const polylimit_http_policy* policy, char** out, size_t* len,
                                             polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (policy == nullptr) return null_argument(err, "policy");
  return guarded(err, [&] { hand_over(policy->rep->metrics_prometheus(), out, len); });
}

// ---- the live policy ---------------------------------------------------------

int polylimit_http_live_new(polylimit_client* client, const char* document, size_t document_len,
                            polylimit_limiter* const* limiters, size_t n_limiters, polylimit_http_live** out,
                            polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (document == nullptr) return null_argument(err, "document");
  polylimit::http::PolicySources sources;
  if (int rc = policy_sources(client, limiters, n_limiters, sources, err); rc != POLYLIMIT_OK) return rc;
  return guarded(err, [&] {
    auto l = std::make_unique<polylimit_http_live>();
    l->rep =
        std::make_unique<polylimit::http::LivePolicy>(std::string_view(document, document_len), std::move(sources));
    *out = l.release();
  });
}

int polylimit_http_live_open(polylimit_client* client, const char* path, polylimit_limiter* const* limiters,
                             size_t n_limiters, int watch_ms, polylimit_http_live** out, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (path == nullptr) return null_argument(err, "path");
  polylimit::http::PolicySources sources;
  if (int rc = policy_sources(client, limiters, n_limiters, sources, err); rc != POLYLIMIT_OK) return rc;
  return guarded(err, [&] {
    auto l = std::make_unique<polylimit_http_live>();
    l->rep = polylimit::http::LivePolicy::open(path, std::move(sources), watch_ms);
    *out = l.release();
  });
}

void polylimit_http_live_free(polylimit_http_live* live) { delete live; }

int polylimit_http_live_set_has_resolver(polylimit_http_live* live, int has_resolver, polylimit_error* err) {
  if (live == nullptr) return null_argument(err, "live");
  return guarded(err, [&] { live->rep->set_has_resolver(has_resolver != 0); });
}

polylimit_http_policy* polylimit_http_live_current(const polylimit_http_live* live) {
  if (live == nullptr) return nullptr;
  try {
    return new polylimit_http_policy{live->rep->current()};
  } catch (...) {
    return nullptr;  // out of memory
  }
}

int polylimit_http_live_reload(polylimit_http_live* live, const char* document, size_t document_len,
                               polylimit_error* err) {
  if (live == nullptr) return null_argument(err, "live");
  if (document == nullptr) return null_argument(err, "document");
  return guarded(err, [&] { live->rep->reload(std::string_view(document, document_len)); });
}

int polylimit_http_live_reload_file(polylimit_http_live* live, polylimit_error* err) {
  if (live == nullptr) return null_argument(err, "live");
  return guarded(err, [&] { live->rep->reload_file(); });
}

uint64_t polylimit_http_live_generation(const polylimit_http_live* live) {
  return live == nullptr ? 0 : live->rep->generation();
}

int polylimit_http_live_last_error(const polylimit_http_live* live, char** out, size_t* len, polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (live == nullptr) return null_argument(err, "live");
  return guarded(err, [&] { hand_over(live->rep->last_error(), out, len); });
}

int polylimit_http_live_cached_plan(const polylimit_http_live* live, const char* tenant, size_t tenant_len, char* out,
                                    size_t cap) {
  if (live == nullptr || tenant == nullptr || out == nullptr || cap == 0) return 0;
  try {
    auto plan = live->rep->cached_plan(std::string_view(tenant, tenant_len));
    if (!plan) return 0;
    size_t n = std::min(plan->size(), cap - 1);
    std::memcpy(out, plan->data(), n);
    out[n] = '\0';
    return 1;
  } catch (...) {
    return 0;
  }
}

int polylimit_http_live_cache_plan(polylimit_http_live* live, const char* tenant, size_t tenant_len, const char* plan,
                                   size_t plan_len, polylimit_error* err) {
  if (live == nullptr) return null_argument(err, "live");
  if (tenant == nullptr) return null_argument(err, "tenant");
  if (plan == nullptr) return null_argument(err, "plan");
  return guarded(
      err, [&] { live->rep->cache_plan(std::string_view(tenant, tenant_len), std::string_view(plan, plan_len)); });
}

int polylimit_http_live_metrics_prometheus(const polylimit_http_live* live, char** out, size_t* len,
                                           polylimit_error* err) {
  if (out == nullptr) return null_argument(err, "out");
  *out = nullptr;
  if (len != nullptr) *len = 0;
  if (live == nullptr) return null_argument(err, "live");
  return guarded(err, [&] { hand_over(live->rep->metrics_prometheus(), out, len); });
}

}  // extern "C"
