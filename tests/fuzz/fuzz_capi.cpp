// fuzz_capi.cpp - the C ABI on memory://, driven by the input.
//
// The bytes choose a sequence of calls on one in-process client: limiters
// from fuzzed options or rate specs, then check / check_at / check_many /
// check_at_most / check_limit / acquire (no wait) / peek / refund / reset /
// headers / stats / Prometheus pages with fuzzed keys, costs and times, and
// sometimes polylimit_client_open with a fuzzed URL (never used for a call:
// it may name a real host). Invariants: no crash, no leak (LeakSanitizer),
// every error comes with its code and a non-empty message, a success with an
// empty one, and every decision is within its limits.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "polylimit.h"

namespace {

constexpr size_t kMaxLimiters = 4;
constexpr int kMaxCalls = 48;

void check_status(int status, const polylimit_error& err, const char* call) {
  if (status == POLYLIMIT_OK) {
    FUZZ_CHECK(err.code == POLYLIMIT_OK && err.message[0] == '\0', "%s: OK with code %d, message '%s'", call, err.code,
               err.message);
    return;
  }
  FUZZ_CHECK(status < 0, "%s: status %d", call, status);
  FUZZ_CHECK(err.code == status, "%s: returned %d, err.code %d", call, status, err.code);
  FUZZ_CHECK(err.message[0] != '\0', "%s: %s without a message", call, polylimit_status_name(status));
  FUZZ_CHECK(std::memchr(err.message, '\0', sizeof err.message) != nullptr, "%s: message not terminated", call);
  FUZZ_CHECK(std::strcmp(polylimit_status_name(status), "POLYLIMIT_UNKNOWN") != 0, "%s: unknown status %d", call,
             status);
}

void check_decision(const polylimit_decision& d, const char* call) {
  FUZZ_CHECK(d.allowed <= 1 && d.cached <= 1 && d.degraded <= 1 && d.shadowed <= 1, "%s: flag not 0/1", call);
  FUZZ_CHECK(d.remaining >= 0, "%s: remaining %lld", call, static_cast<long long>(d.remaining));
  FUZZ_CHECK(d.retry_after_ms >= 0 && d.reset_after_ms >= 0, "%s: negative duration", call);
  FUZZ_CHECK(d.granted >= 0, "%s: granted %lld", call, static_cast<long long>(d.granted));
  FUZZ_CHECK(d.allowed || d.granted == 0 || d.shadowed, "%s: denied yet granted %lld", call,
             static_cast<long long>(d.granted));
  for (auto r : d.reserved_) FUZZ_CHECK(r == 0, "%s: reserved field set", call);
  for (auto r : d.reserved_flags_) FUZZ_CHECK(r == 0, "%s: reserved flag set", call);
}

// Mostly small numbers (fast, and where the limits are), sometimes the edges.
int64_t amount(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return in.ConsumeIntegral<int64_t>();
    case 1: {
      static const int64_t kEdges[] = {0,
                                       -1,
                                       1000000,
                                       1000001,
                                       31622400000,
                                       31622400001,
                                       std::numeric_limits<int64_t>::max(),
                                       std::numeric_limits<int64_t>::min()};
      return kEdges[in.ConsumeIntegralInRange<size_t>(0, 7)];
    }
    default: return in.ConsumeIntegralInRange<int64_t>(0, 20);
  }
}

std::string key(FuzzedDataProvider& in) {
  std::string k = in.ConsumeRandomLengthString(24);
  if (in.ConsumeBool() && !k.empty()) {  // past 128 bytes the storage key is a digest
    const size_t times = in.ConsumeIntegralInRange<size_t>(1, 200);
    std::string long_key;
    for (size_t i = 0; i < times; ++i) long_key += k;
    k = long_key;
  }
  return k;
}

struct Session {
  explicit Session(FuzzedDataProvider& provider) : in(provider) {}
  FuzzedDataProvider& in;
  polylimit_client* client = nullptr;
  bool client_closed = false;
  std::vector<polylimit_limiter*> limiters;
  polylimit_decision last{};
  polylimit_limiter* last_limiter = nullptr;

  polylimit_limiter* pick() {
    if (limiters.empty()) return nullptr;
    return limiters[in.ConsumeIntegralInRange<size_t>(0, limiters.size() - 1)];
  }

  polylimit_limiter_options options() {
    polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
    if (in.ConsumeIntegralInRange<int>(0, 7) == 0) o.version = in.ConsumeIntegralInRange<unsigned>(0, 4);
    o.algorithm = in.ConsumeIntegralInRange<int>(-1, 4);
    o.limit = amount(in);
    o.window_ms = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(1, 5000) : amount(in);
    o.clock = in.ConsumeIntegralInRange<int>(-1, 2);
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) o.burst = amount(in);
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) o.deny_cache_size = in.ConsumeIntegralInRange<int>(-1, 100);
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) o.failure_policy = in.ConsumeIntegralInRange<int>(-1, 3);
    if (in.ConsumeIntegralInRange<int>(0, 5) == 0) {
      o.breaker_failures = in.ConsumeIntegralInRange<int>(-1, 5);
      o.breaker_cooldown_ms = in.ConsumeIntegralInRange<int>(-1, 1000);
    }
    o.shadow = in.ConsumeIntegralInRange<int>(0, 5) == 0;
    if (in.ConsumeIntegralInRange<int>(0, 5) == 0) o.block_ms = amount(in);
    if (in.ConsumeIntegralInRange<int>(0, 5) == 0) {  // memory://: validated, then a no-op
      o.durable_replicas = in.ConsumeIntegralInRange<int>(-1, 101);
      o.durable_timeout_ms = in.ConsumeIntegralInRange<int>(-1, 2000);
      o.durable_aof = in.ConsumeBool();
    }
    return o;
  }

  void new_limiter(bool from_spec) {
    if (limiters.size() >= kMaxLimiters) return;
    polylimit_limiter_options o = options();
    std::string prefix;
    const bool with_prefix = in.ConsumeIntegralInRange<int>(0, 3) == 0;
    if (with_prefix) {
      prefix = in.ConsumeRandomLengthString(300);
      o.prefix = prefix.c_str();
    }
    std::string spec;
    if (from_spec) spec = in.ConsumeRandomLengthString(64);
    polylimit_limiter* l = nullptr;
    polylimit_error err;
    const int status = from_spec
                           ? polylimit_limiter_new_spec(client, spec.c_str(), in.ConsumeBool() ? &o : nullptr, &l, &err)
                           : polylimit_limiter_new(client, &o, &l, &err);
    check_status(status, err, from_spec ? "limiter_new_spec" : "limiter_new");
    FUZZ_CHECK((status == POLYLIMIT_OK) == (l != nullptr), "limiter_new: status %d, limiter %p", status,
               static_cast<void*>(l));
    if (l) limiters.push_back(l);
  }

  void decided(int status, const polylimit_error& err, const polylimit_decision& d, polylimit_limiter* l,
               const char* call) {
    check_status(status, err, call);
    if (status != POLYLIMIT_OK) return;
    check_decision(d, call);
    last = d;
    last_limiter = l;
  }

  void one_key_call(int which) {
    polylimit_limiter* l = pick();
    if (!l) return;
    const std::string k = key(in);
    polylimit_decision d{};
    polylimit_error err;
    int status = 0;
    const char* call = "";
    switch (which) {
      case 0:
        call = "check";
        status = polylimit_limiter_check(l, k.data(), k.size(), amount(in), &d, &err);
        break;
      case 1: {
        call = "check_at";
        const int64_t cost = amount(in);
        const int64_t now = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(1, 1LL << 52) : amount(in);
        status = polylimit_limiter_check_at(l, k.data(), k.size(), cost, now, &d, &err);
        break;
      }
      case 2:
        call = "peek";
        status = polylimit_limiter_peek(l, k.data(), k.size(), &d, &err);
        break;
      case 3:
        call = "refund";
        status = polylimit_limiter_refund(l, k.data(), k.size(), amount(in), &d, &err);
        break;
      case 4:
        call = "check_at_most";
        status = polylimit_limiter_check_at_most(l, k.data(), k.size(), amount(in), &d, &err);
        break;
      case 5: {
        call = "check_limit";
        const int64_t cost = amount(in), limit = amount(in);
        const int64_t window = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(1, 5000) : amount(in);
        status = polylimit_limiter_check_limit(l, k.data(), k.size(), cost, limit, window, &d, &err);
        break;
      }
      case 6:  // timeout 0: one try, never sleeps
        call = "acquire";
        status = polylimit_limiter_acquire(l, k.data(), k.size(), amount(in), 0, &d, &err);
        break;
      case 7:
        status = polylimit_limiter_reset(l, k.data(), k.size(), &err);
        check_status(status, err, "reset");
        return;
    }
    decided(status, err, d, l, call);
  }

  void check_many() {
    polylimit_limiter* l = pick();
    if (!l) return;
    const size_t n = in.ConsumeIntegralInRange<size_t>(0, 16);
    std::vector<std::string> keys(n);
    std::vector<const void*> ptrs(n);
    std::vector<size_t> lens(n);
    for (size_t i = 0; i < n; ++i) {
      keys[i] = key(in);
      ptrs[i] = keys[i].data();
      lens[i] = keys[i].size();
    }
    std::vector<polylimit_decision> out(n + 1);
    std::vector<int> statuses(n + 1, 12345);
    std::vector<polylimit_error> key_errors(n + 1);
    const bool with_key_errors = in.ConsumeBool();
    polylimit_error err;
    const int status =
        polylimit_limiter_check_many(l, ptrs.data(), lens.data(), n, amount(in), out.data(), statuses.data(),
                                     with_key_errors ? key_errors.data() : nullptr, &err);
    check_status(status, err, "check_many");
    bool any_failed = false;
    for (size_t i = 0; i < n; ++i) {
      FUZZ_CHECK(statuses[i] <= 0, "check_many: statuses[%zu] = %d", i, statuses[i]);
      if (with_key_errors) check_status(statuses[i], key_errors[i], "check_many key");
      if (statuses[i] == POLYLIMIT_OK)
        check_decision(out[i], "check_many");
      else
        any_failed = true;
    }
    FUZZ_CHECK(any_failed == (status != POLYLIMIT_OK), "check_many: status %d but a key %s", status,
               any_failed ? "failed" : "did not fail");
    FUZZ_CHECK(statuses[n] == 12345, "check_many wrote past n");
  }

  void headers() {
    if (!last_limiter) return;
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    polylimit_decision d = last;
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {  // a decision the limiter never made
      d.limit = amount(in);
      d.remaining = amount(in);
      d.retry_after_ms = amount(in);
      d.reset_after_ms = amount(in);
      d.allowed = in.ConsumeIntegral<uint8_t>();
    }
    const int status = polylimit_limiter_headers(last_limiter, &d, &text, in.ConsumeBool() ? &len : nullptr, &err);
    check_status(status, err, "headers");
    if (status == POLYLIMIT_OK) {
      FUZZ_CHECK(text != nullptr, "headers: OK without text");
      if (len) FUZZ_CHECK(std::strlen(text) == len, "headers: len %zu, strlen %zu", len, std::strlen(text));
    }
    polylimit_free(text);
  }

  void stats() {
    polylimit_error err;
    if (in.ConsumeBool()) {
      polylimit_stats s = POLYLIMIT_STATS_INIT;
      check_status(polylimit_client_stats(client, &s, &err), err, "client_stats");
      return;
    }
    char* text = nullptr;
    size_t len = 0;
    const int status = in.ConsumeBool() ? polylimit_client_stats_prometheus(client, &text, &len, &err)
                                        : polylimit_clients_stats_prometheus(&client, 1, &text, &len, &err);
    check_status(status, err, "stats_prometheus");
    if (status == POLYLIMIT_OK) {
      FUZZ_CHECK(text != nullptr && std::strlen(text) == len, "stats_prometheus: bad text or length");
      FUZZ_CHECK(std::strstr(text, "polylimit_") != nullptr, "stats_prometheus: no polylimit_ metric");
    }
    polylimit_free(text);
  }

  // A URL opened and closed again: it may name a real server, so nothing runs on it.
  void open_url() {
    const std::string url = in.ConsumeRandomLengthString(96);
    polylimit_client* other = nullptr;
    polylimit_error err;
    const int status = polylimit_client_open(url.c_str(), nullptr, &other, &err);
    check_status(status, err, "client_open");
    FUZZ_CHECK((status == POLYLIMIT_OK) == (other != nullptr), "client_open: status %d, client %p", status,
               static_cast<void*>(other));
    polylimit_client_close(other);
  }

  void free_limiter() {
    if (limiters.empty()) return;
    const size_t i = in.ConsumeIntegralInRange<size_t>(0, limiters.size() - 1);
    if (limiters[i] == last_limiter) last_limiter = nullptr;
    polylimit_limiter_free(limiters[i]);
    limiters.erase(limiters.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void run() {
    polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
    std::string name;
    if (in.ConsumeBool()) {
      name = in.ConsumeRandomLengthString(140);
      co.name = name.c_str();
    }
    if (in.ConsumeIntegralInRange<int>(0, 7) == 0) co.pool_size = in.ConsumeIntegralInRange<int>(-1, 4);
    polylimit_error err;
    int status = polylimit_client_open("memory://", in.ConsumeBool() ? &co : nullptr, &client, &err);
    check_status(status, err, "client_open memory://");
    if (status != POLYLIMIT_OK) return;
    for (int calls = 0; calls < kMaxCalls && in.remaining_bytes() > 0; ++calls) {
      const int op = in.ConsumeIntegralInRange<int>(0, 17);
      if (op <= 1) {
        new_limiter(op == 1);
      } else if (op <= 9) {
        one_key_call(op - 2);
      } else if (op <= 11) {
        check_many();
      } else if (op == 12) {
        headers();
      } else if (op == 13) {
        stats();
      } else if (op == 14) {
        open_url();
      } else if (op == 15) {
        free_limiter();
      } else if (op == 16 && !client_closed && in.ConsumeIntegralInRange<int>(0, 3) == 0) {
        // Closing the client closes its limiters: their calls now fail with
        // POLYLIMIT_ECLOSED (and a message). The handle is freed at the end.
        polylimit_client_close(client);
        client = nullptr;
        client_closed = true;
        break;
      } else {
        new_limiter(in.ConsumeBool());
      }
    }
    if (client_closed) {  // every limiter call after close: ECLOSED with a message
      for (polylimit_limiter* l : limiters) {
        polylimit_decision d{};
        status = polylimit_limiter_check(l, "k", 1, 1, &d, &err);
        check_status(status, err, "check after close");
        FUZZ_CHECK(status == POLYLIMIT_ECLOSED, "check after close: %s", polylimit_status_name(status));
      }
    }
    for (polylimit_limiter* l : limiters) polylimit_limiter_free(l);
    polylimit_client_close(client);
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  unsetenv("POLYLIMIT_URL");  // "" must stay an error, never a URL from the environment
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  FuzzedDataProvider in(data, size);
  Session s(in);
  s.run();
  return 0;
}
