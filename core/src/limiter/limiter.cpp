// limiter.cpp - validation and storage keys, and the non-blocking calls
// (check_async and the others); the algorithms live in backends.
#include "polylimit/limiter.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "backend/memory_backend.h"
#include "limiter/breaker.h"
#include "limiter/deny_cache.h"
#include "limiter/lease.h"
#include "polylimit/errors.h"
#include "polylimit/metrics.h"
#include "util/clock.h"
#include "util/sha256.h"

namespace polylimit {
namespace {

// Errors that mean "the server did not answer", as opposed to "it answered no".
bool is_outage(const Error& e) { return is_outage(e.code()); }

uint64_t us_since(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count());
}

// Runs one check and records it in the client's metrics.
template <typename F>
Decision measured(Metrics& m, F&& body) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Decision d = body();
    m.decision(d, us_since(t0));
    return d;
  } catch (...) {
    m.error(us_since(t0));
    throw;
  }
}

// FNV-1a, 64 bit: spreads caller keys over Cluster slots; collisions only
// share a slot, never a limit (the full key follows the tag).
uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

const char* storage_segment(Algorithm algorithm) noexcept {
  // The sliding log's layout changed from a ZSET to a ring (a STRING): a new
  // segment, so the two layouts never meet in one key.
  return algorithm == Algorithm::kSlidingLog ? "sliding_log.ring" : algorithm_name(algorithm);
}

void check_batch_size(size_t n) {
  const Bound& b = bounds::kBatch;
  if (n > static_cast<size_t>(b.max))  // the message of check_bound, for an unsigned n
    throw_invalid(std::string(b.name) + " = " + std::to_string(n) + " is out of range " + std::to_string(b.min) + ".." +
                  std::to_string(b.max));
}

void validate(const LimitParams& p) {
  switch (p.algorithm) {
    case Algorithm::kSlidingLog:
    case Algorithm::kSlidingCounter:
    case Algorithm::kFixedWindow:
    case Algorithm::kGcra: break;
    default: throw_invalid("algorithm: unknown value");
  }
  check_bound(bounds::kLimit, p.limit);
  check_bound(bounds::kWindowMs, p.window_ms);
  if (p.algorithm != Algorithm::kGcra) {
    if (p.burst != 0)
      throw_invalid("burst = " + std::to_string(p.burst) + " is only for the gcra algorithm (use 0 for " +
                    algorithm_name(p.algorithm) + ")");
    return;
  }
  check_bound(bounds::kBurst, p.burst);
  // interval * burst bounds every TAT offset: at most 2^50 us (35 years), so
  // now + 2 * tau stays below 2^53 for any now up to kMaxTimestampUs.
  if (p.interval_us() > (kMaxTimestampUs / 4) / p.capacity())
    throw_invalid("burst = " + std::to_string(p.capacity()) + " times the emission interval (" +
                  std::to_string(p.interval_us()) + " us) is too long");
}

Limiter::Limiter(std::shared_ptr<Client> client, LimiterOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  if (!client_) throw_invalid("client is null");
  client_->ensure_open();
  limits_ = options_.limits.empty() ? std::vector<LimitParams>{options_.limit} : options_.limits;
  check_bound(bounds::kLimits, static_cast<long long>(limits_.size()));
  for (size_t i = 0; i < limits_.size(); ++i) {
    try {
      validate(limits_[i]);
    } catch (const Error& e) {
      if (limits_.size() == 1) throw;
      throw_invalid("limits[" + std::to_string(i) + "]: " + e.what());
    }
    if (limits_[i].algorithm != limits_[0].algorithm)
      throw_invalid("limits[" + std::to_string(i) + "]: algorithm " + algorithm_name(limits_[i].algorithm) +
                    " differs from " + algorithm_name(limits_[0].algorithm) + " (one algorithm per limiter)");
  }
  check_bound(bounds::kDenyCacheSize, static_cast<long long>(options_.deny_cache_size));
  if (options_.deny_cache_size > 0) deny_cache_ = std::make_unique<DenyCache>(options_.deny_cache_size);
  switch (options_.failure_policy) {
    case FailurePolicy::kError:
    case FailurePolicy::kOpen:
    case FailurePolicy::kClosed: break;
    case FailurePolicy::kLocal: fallback_ = std::make_unique<MemoryBackend>(); break;
    default: throw_invalid("failure_policy: unknown value");
  }
  check_bound(bounds::kBreakerFailures, options_.breaker_failures);
  check_bound(bounds::kBreakerCooldownMs, options_.breaker_cooldown_ms);
  if (options_.breaker_failures > 0)
    breaker_ = std::make_unique<Breaker>(options_.breaker_failures,
                                         std::chrono::milliseconds(options_.breaker_cooldown_ms), client_->clock());
  check_bound(bounds::kBlockMs, options_.block_ms);
  check_bound(bounds::kDurableReplicas, options_.durable_replicas);
  check_bound(bounds::kDurableTimeoutMs, options_.durable_timeout_ms);
  durable_.replicas = options_.durable_replicas;
  durable_.aof = options_.durable_aof;
  durable_.timeout_ms = options_.durable_timeout_ms;
  client_->backend().check_durability(durable_);
  check_bound(bounds::kLeaseUnits, options_.lease_units);
  if (options_.lease_units > 0) {
    check_bound(bounds::kLeaseMs, options_.lease_ms);
    for (const LimitParams& p : limits_) {
      if (options_.lease_units > p.capacity())
        throw_invalid("lease_units = " + std::to_string(options_.lease_units) + " exceeds " +
                      (p.algorithm == Algorithm::kGcra ? "burst" : "limit") + " = " + std::to_string(p.capacity()));
      if (options_.lease_ms > p.window_ms)
        throw_invalid("lease_ms = " + std::to_string(options_.lease_ms) + " exceeds the window (" +
                      std::to_string(p.window_ms) + " ms)");
    }
    // A denied lease take is not a denial any caller sees: it must not block the key.
    if (options_.block_ms > 0) throw_invalid("block_ms cannot be combined with lease_units (use one or the other)");
    leases_ = std::make_shared<LeaseTable>(client_, limits_, options_.clock);
    close_hook_ = std::make_shared<std::function<void()>>([t = leases_] { t->close_all(); });
    client_->on_close(close_hook_);
  }
  if (options_.prefix.empty()) throw_invalid("prefix is empty");
  if (options_.prefix.size() > kMaxPrefixLength)
    throw_invalid("prefix is longer than " + std::to_string(kMaxPrefixLength) + " bytes");
  if (options_.prefix.find_first_of("{}") != std::string::npos)
    throw_invalid("prefix must not contain '{' or '}' (the library places the hash tag)");
}

Limiter::~Limiter() {
  // Gives the leases' unused units back while the client can still do it
  // (after close(), the close hook has done it).
  if (leases_ && client_ && !client_->closed()) leases_->close_all();
}
Limiter::Limiter(Limiter&&) noexcept = default;

std::string Limiter::storage_key(std::string_view key) const {
  // The hash tag: 16 lowercase hex digits (not snprintf: a thousand
  // instructions a check).
  char tag[17];
  uint64_t h = fnv1a64(key);
  for (int i = 15; i >= 0; --i, h >>= 4) tag[i] = "0123456789abcdef"[h & 0xf];
  tag[16] = '\0';
  std::string out;
  out.reserve(options_.prefix.size() + std::min(key.size(), kMaxVerbatimKeyLength) + 48);
  out.append(options_.prefix).append(":").append(storage_segment(limits_[0].algorithm));
  out.append(":{").append(tag).append("}");
  // Long identifiers are stored under their SHA-256, so a Redis key name is
  // bounded whatever the caller passes. ':' and '#' after the tag keep the two
  // forms apart: no verbatim key can name a digest's state.
  if (key.size() <= kMaxVerbatimKeyLength)
    out.append(":").append(key.data(), key.size());
  else
    out.append("#").append(sha256_hex(key));
  return out;
}

std::vector<std::string> Limiter::storage_keys(std::string_view key) const {
  std::vector<std::string> keys;
  keys.reserve(limits_.size());
  keys.push_back(storage_key(key));
  for (size_t i = 1; i < limits_.size(); ++i) keys.push_back(keys[0] + ":" + std::to_string(i));
  return keys;
}

void Limiter::validate_key(std::string_view key) const {
  if (key.empty()) throw_invalid("key is empty");
  if (key.size() > kMaxKeyLength)
    throw_invalid("key is " + std::to_string(key.size()) + " bytes; at most " + std::to_string(kMaxKeyLength));
}

void Limiter::validate_cost(int64_t cost) const { validate_cost(cost, limits_); }

void Limiter::validate_cost(int64_t cost, const std::vector<LimitParams>& limits) const {
  if (cost < 1) throw_invalid("cost = " + std::to_string(cost) + " must be at least 1");
  for (const LimitParams& p : limits) {
    if (cost > p.capacity())
      throw_invalid("cost = " + std::to_string(cost) + " exceeds " +
                    (p.algorithm == Algorithm::kGcra ? "burst" : "limit") + " = " + std::to_string(p.capacity()) +
                    " and could never be admitted");
  }
}

int64_t Limiter::now() const { return options_.clock == ClockSource::kClient ? realtime_us() : kServerTime; }

Request Limiter::request(Op op, std::string_view key, int64_t cost, int64_t now_us,
                         const std::vector<LimitParams>* limits) const {
  Request r;
  r.op = op;
  r.limits = limits ? limits : &limits_;
  r.keys = storage_keys(key);
  r.keys.resize(std::min(r.keys.size(), r.limits->size()));
  for (size_t i = r.keys.size(); i < r.limits->size(); ++i) r.keys.push_back(r.keys[0] + ":" + std::to_string(i));
  r.cost = cost;
  r.now_us = now_us;
  if (options_.block_ms > 0) {
    r.block_us = options_.block_ms * 1000;
    r.block_key = r.keys[0] + ":block";
  }
  if (op == Op::kCheck) r.durable = durable_;
  return r;
}

Decision Limiter::check(std::string_view key, int64_t cost) {
  client_->ensure_open();
  validate_key(key);
  validate_cost(cost);
  if (leases_) return leased_check(key, cost);
  return check_unleased(key, cost);
}

Decision Limiter::check_unleased(std::string_view key, int64_t cost) {
  return finish(measured(client_->metrics(), [&] {
    const auto started = deny_cache_ ? client_->clock()->now() : DenyCache::TimePoint{};
    uint64_t epoch = 0;
    if (deny_cache_) {
      if (auto d = deny_cache_->lookup(key, cost, started)) return *d;
      epoch = deny_cache_->epoch();
    }
    Decision d = decide(request(Op::kCheck, key, cost, now()));
    if (deny_cache_ && !d.degraded) deny_cache_->record(key, cost, d, started, epoch);
    return d;
  }));
}

Decision Limiter::check_at(std::string_view key, int64_t cost, int64_t now_us) {
  client_->ensure_open();
  validate_key(key);
  validate_cost(cost);
  check_bound(bounds::kNowUs, now_us);
  return finish(measured(client_->metrics(), [&] { return decide(request(Op::kCheck, key, cost, now_us)); }));
}

Decision Limiter::peek(std::string_view key) {
  client_->ensure_open();
  validate_key(key);
  return decide(request(Op::kPeek, key, 1, now()));
}

void Limiter::reset(std::string_view key) {
  client_->ensure_open();
  validate_key(key);
  std::vector<std::string> keys = storage_keys(key);
  if (options_.block_ms > 0) keys.push_back(keys[0] + ":block");
  if (fallback_) fallback_->reset(keys);
  if (leases_) leases_->drop(key);  // its units are gone with the key: nothing to give back
  client_->backend().reset(keys);
  // After the reset; erase() also stops checks already in flight from caching
  // a denial that the reset made stale.
  if (deny_cache_) deny_cache_->erase(key);
}

std::vector<Outcome> Limiter::check_many(const std::vector<std::string_view>& keys, int64_t cost) {
  Batch batch = plan_many(keys, cost);
  std::vector<Outcome> decided = decide_many(batch.requests);
  return finish_many(batch, std::move(decided));
}

Limiter::Batch Limiter::plan_many(const std::vector<std::string_view>& keys, int64_t cost) {
  client_->ensure_open();
  validate_cost(cost);
  check_batch_size(keys.size());
  Batch b;
  b.cost = cost;
  b.t0 = std::chrono::steady_clock::now();
  b.out.resize(keys.size());
  const int64_t t = now();
  b.started = deny_cache_ ? client_->clock()->now() : DenyCache::TimePoint{};
  b.epoch = deny_cache_ ? deny_cache_->epoch() : 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    try {
      validate_key(keys[i]);
      if (deny_cache_) {
        if (auto d = deny_cache_->lookup(keys[i], cost, b.started)) {
          b.out[i].decision = *d;
          continue;
        }
      }
      b.requests.push_back(request(Op::kCheck, keys[i], cost, t));
      b.index.push_back(i);
      if (deny_cache_) b.cached.emplace_back(keys[i]);
    } catch (...) {
      b.out[i].error = std::current_exception();
    }
  }
  return b;
}

std::vector<Outcome> Limiter::finish_many(Batch& b, std::vector<Outcome> decided) {
  for (size_t j = 0; j < b.index.size(); ++j) {
    if (deny_cache_ && !decided[j].error && !decided[j].decision.degraded)
      deny_cache_->record(b.cached[j], b.cost, decided[j].decision, b.started, b.epoch);
    b.out[b.index[j]] = std::move(decided[j]);
  }
  const uint64_t latency = us_since(b.t0);
  for (Outcome& o : b.out) {
    if (o.error) {
      client_->metrics().error(latency);
      continue;
    }
    client_->metrics().decision(o.decision, latency);
    o.decision = finish(o.decision);
  }
  return std::move(b.out);
}

Decision Limiter::finish(Decision d) const {
  if (options_.shadow && !d.allowed) {
    d.allowed = true;
    d.shadowed = true;
  }
  return d;
}

Decision Limiter::refund(std::string_view key, int64_t units) {
  client_->ensure_open();
  validate_key(key);
  check_bound(bounds::kUnits, units);
  Decision d = decide(request(Op::kRefund, key, units, now()));
  if (deny_cache_) deny_cache_->erase(key);  // the key may fit again
  if (leases_) leases_->forget_denial(key);
  return d;
}

Decision Limiter::check_with(std::string_view key, int64_t cost, const std::vector<LimitParams>& limits) {
  client_->ensure_open();
  validate_key(key);
  check_bound(bounds::kLimits, static_cast<long long>(limits.size()));
  for (size_t i = 0; i < limits.size(); ++i) {
    validate(limits[i]);
    if (limits[i].algorithm != limits_[0].algorithm)
      throw_invalid("limits[" + std::to_string(i) + "]: algorithm " + algorithm_name(limits[i].algorithm) +
                    " is not the limiter's " + algorithm_name(limits_[0].algorithm));
  }
  validate_cost(cost, limits);
  return finish(measured(client_->metrics(), [&] { return decide(request(Op::kCheck, key, cost, now(), &limits)); }));
}

Decision Limiter::check_at_most(std::string_view key, int64_t max_cost) {
  client_->ensure_open();
  validate_key(key);
  if (max_cost < 1) throw_invalid("max_cost = " + std::to_string(max_cost) + " must be at least 1");
  int64_t cap = limits_[0].capacity();
  for (const LimitParams& p : limits_) cap = std::min(cap, p.capacity());
  const int64_t want = std::min(max_cost, cap);
  Decision d;
  for (int attempt = 0; attempt < 4; ++attempt) {
    Decision p = decide(request(Op::kPeek, key, 1, now()));
    if (p.degraded) return finish(p);
    int64_t free_units = p.allowed ? std::min(want, p.remaining) : 0;
    if (free_units < 1) {
      // Nothing fits: report what a check of one unit answers (and count it).
      return check(key, 1);
    }
    d = check(key, free_units);
    if (d.allowed || d.shadowed) return d;  // granted == free_units
  }
  return d;  // lost every race: denied
}

Decision Limiter::acquire(std::string_view key, int64_t cost, std::chrono::milliseconds timeout) {
  client_->ensure_open();
  check_bound(bounds::kTimeoutMs, timeout.count());
  const MonotonicClock& clock = *client_->clock();
  const auto deadline = clock.now() + timeout;
  while (true) {
    Decision d = check(key, cost);
    if (d.allowed) return d;
    const auto wake = clock.now() + std::chrono::milliseconds(std::max<int64_t>(1, d.retry_after_ms));
    if (wake > deadline) return d;
    clock.sleep_until(wake);
  }
}

Decision Limiter::degrade(const Request& rq, const Error& error) {
  Decision d;
  switch (options_.failure_policy) {
    case FailurePolicy::kError: throw error;
    case FailurePolicy::kOpen:
    case FailurePolicy::kClosed: {
      int64_t cap = limits_[0].capacity();
      for (const LimitParams& p : limits_) cap = std::min(cap, p.capacity());
      d.limit = cap;
      if (options_.failure_policy == FailurePolicy::kOpen) {
        d.allowed = true;
        d.granted = rq.op == Op::kCheck ? rq.cost : 0;
        d.remaining = rq.op == Op::kCheck ? cap - rq.cost : cap;
      } else {
        d.retry_after_ms = breaker_ ? breaker_->cooldown().count() : 1000;
      }
      break;
    }
    case FailurePolicy::kLocal:
      d = fallback_->evaluate(rq);
      if (rq.op == Op::kCheck && d.allowed) d.granted = rq.cost;
      break;
  }
  d.degraded = true;
  return d;
}

Error Limiter::breaker_open() const {
  return Error(ErrorCode::kUnavailable, "circuit breaker open: " + std::to_string(options_.breaker_failures) +
                                            " consecutive failures; failing fast");
}

Decision Limiter::decide(const Request& rq) {
  if (breaker_ && !breaker_->allow()) return degrade(rq, breaker_open());
  Outcome o;
  try {
    o.decision = client_->backend().evaluate(rq);
  } catch (...) {
    o.error = std::current_exception();
  }
  o = settle(rq, std::move(o));
  if (o.error) std::rethrow_exception(o.error);
  return o.decision;
}

Outcome Limiter::settle(const Request& rq, Outcome o) {
  if (!o.error) {
    if (breaker_) breaker_->success();
    if (rq.op == Op::kCheck && o.decision.allowed) o.decision.granted = rq.cost;
    return o;
  }
  try {
    std::rethrow_exception(o.error);
  } catch (const Error& e) {
    if (!is_outage(e.code())) {
      if (breaker_) breaker_->success();  // the server answered
      return o;
    }
    if (breaker_) breaker_->failure();
    try {
      o.decision = degrade(rq, e);
      o.error = nullptr;
    } catch (...) {
      o.error = std::current_exception();
    }
  } catch (...) {
  }
  return o;
}

std::vector<Outcome> Limiter::decide_many(const std::vector<Request>& requests) {
  if (requests.empty()) return {};
  if (breaker_ && !breaker_->allow()) {
    std::vector<Outcome> out(requests.size());
    for (auto& o : out) o.error = std::make_exception_ptr(breaker_open());
    return settle_many(requests, std::move(out), false);
  }
  return settle_many(requests, client_->backend().evaluate_many(requests), true);
}

std::vector<Outcome> Limiter::settle_many(const std::vector<Request>& requests, std::vector<Outcome> out,
                                          bool evaluated) {
  if (evaluated) {
    for (size_t i = 0; i < out.size(); ++i)
      if (!out[i].error && out[i].decision.allowed) out[i].decision.granted = requests[i].cost;
    bool outage = false;
    for (auto& o : out) {
      if (!o.error) continue;
      try {
        std::rethrow_exception(o.error);
      } catch (const Error& e) {
        outage = outage || is_outage(e);
      } catch (...) {
      }
    }
    if (breaker_) outage ? breaker_->failure() : breaker_->success();
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].error) continue;
    try {
      std::rethrow_exception(out[i].error);
    } catch (const Error& e) {
      if (!is_outage(e) || options_.failure_policy == FailurePolicy::kError) continue;
      try {
        out[i].decision = degrade(requests[i], e);
        out[i].error = nullptr;
      } catch (...) {
        out[i].error = std::current_exception();
      }
    } catch (...) {
    }
  }
  return out;
}

// ------------------------------------------------------------ non-blocking calls

namespace {

// Records a decision in the client's metrics as measured() does for check():
// latency on the real clock, before shadow mode turns a denial into an
// admission.
struct Report {
  Metrics* metrics;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  void operator()(const Decision& d, const std::exception_ptr& error) const {
    const auto us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
    if (error)
      metrics->error(us);
    else
      metrics->decision(d, us);
  }
};

}  // namespace

template <typename State>
void Limiter::decide_in(const std::shared_ptr<State>& st) {
  Limiter& self = *st->self;
  if (self.breaker_ && !self.breaker_->allow()) {  // as decide(): the failure policy, no round trip
    Outcome o;
    try {
      o.decision = self.degrade(st->request(), self.breaker_open());
    } catch (...) {
      o.error = std::current_exception();
    }
    return st->done(std::move(o));
  }
  try {
    // The completion holds the state: nothing of it is copied on the way.
    self.client_->backend().evaluate_async(
        st->request(), [st](Outcome o) { st->done(st->self->settle(st->request(), std::move(o))); });
  } catch (const Error& e) {
    // Refused before anything was queued (a failed connect, reconnect
    // backoff, a full queue, a refused AUTH or TLS handshake): the call's
    // completion says so, after the failure policy for an outage, as
    // decide() would answer. Only a bad argument and a closed client are the
    // submitter's error (the C ABI's contract).
    if (e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kClosed) throw;
    st->done(self.settle(st->request(), Outcome{Decision{}, std::current_exception()}));
  }
}

void Limiter::decide_async(const std::shared_ptr<Limiter>& self, std::shared_ptr<const Request> rq,
                           std::function<void(Outcome)> done) {
  struct State {
    std::shared_ptr<Limiter> self;
    std::shared_ptr<const Request> rq;
    std::function<void(Outcome)> fn;
    const Request& request() const { return *rq; }
    void done(Outcome o) const { fn(std::move(o)); }
  };
  decide_in(std::make_shared<State>(State{self, std::move(rq), std::move(done)}));
}

void Limiter::check_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost, CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  self->validate_cost(cost);
  Report report{&self->client_->metrics()};
  if (self->leases_) {
    // A live lease answers at once.
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t now_ns = self->leases_->now_ns();
    if (auto d = self->leases_->with(key, [&](Lease& l) { return l.try_take(cost, now_ns); })) {
      self->client_->metrics().decision(
          *d,
          static_cast<uint64_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count()));
      return done(*d, nullptr);
    }
    if (cost <= self->options_.lease_units) {
      // None: the blocking leased check renews it, on a library thread, so
      // that renewals stay one at a time per key with the blocking callers'
      // (lease.cpp). One hop per renewal (every lease_units units), not per
      // check; checks that miss meanwhile queue on the lease's lock and are
      // then answered from the new lease.
      self->client_->backend().run_blocking([self, key_copy = std::string(key), cost, done] {
        Decision d;
        std::exception_ptr error;
        try {
          d = self->leased_check(key_copy, cost);
        } catch (...) {
          error = std::current_exception();
        }
        done(d, error);
      });
      return;
    }
  }
  // The deny cache on the client's clock (clock.h).
  const auto started = self->deny_cache_ ? self->client_->clock()->now() : DenyCache::TimePoint{};
  uint64_t epoch = 0;
  if (self->deny_cache_) {
    if (auto d = self->deny_cache_->lookup(key, cost, started)) {
      report(*d, nullptr);
      return done(self->finish(*d), nullptr);
    }
    epoch = self->deny_cache_->epoch();
  }
  // The request and what its completion needs, in one allocation.
  struct State {
    std::shared_ptr<Limiter> self;
    Request rq;
    std::string cache_key;  // the caller's key, kept only for the deny cache (a copy allocates)
    uint64_t epoch;
    DenyCache::TimePoint started;
    Report report;
    CheckDone fn;
    const Request& request() const { return rq; }
    void done(Outcome o) const {
      if (!o.error && self->deny_cache_ && !o.decision.degraded)
        self->deny_cache_->record(cache_key, rq.cost, o.decision, started, epoch);
      report(o.decision, o.error);
      if (!o.error) o.decision = self->finish(o.decision);
      fn(o.decision, o.error);
    }
  };
  decide_in(std::make_shared<State>(State{self, self->request(Op::kCheck, key, cost, self->now()),
                                          self->deny_cache_ ? std::string(key) : std::string(), epoch, started, report,
                                          std::move(done)}));
}

void Limiter::peek_async(const std::shared_ptr<Limiter>& self, std::string_view key, CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  auto rq = std::make_shared<const Request>(self->request(Op::kPeek, key, 1, self->now()));
  decide_async(self, rq, [done](Outcome o) { done(o.decision, o.error); });
}

void Limiter::refund_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t units, CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  check_bound(bounds::kUnits, units);
  auto rq = std::make_shared<const Request>(self->request(Op::kRefund, key, units, self->now()));
  decide_async(self, rq, [self, key_copy = std::string(key), done](Outcome o) {
    if (!o.error && self->deny_cache_) self->deny_cache_->erase(key_copy);  // the key may fit again
    if (!o.error && self->leases_) self->leases_->forget_denial(key_copy);
    done(o.decision, o.error);
  });
}

void Limiter::check_with_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost,
                               std::vector<LimitParams> limits, CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  check_bound(bounds::kLimits, static_cast<long long>(limits.size()));
  for (size_t i = 0; i < limits.size(); ++i) {
    validate(limits[i]);
    if (limits[i].algorithm != self->limits_[0].algorithm)
      throw_invalid("limits[" + std::to_string(i) + "]: algorithm " + algorithm_name(limits[i].algorithm) +
                    " is not the limiter's " + algorithm_name(self->limits_[0].algorithm));
  }
  self->validate_cost(cost, limits);
  // The request points at the limits: they travel with it.
  auto owned = std::make_shared<const std::vector<LimitParams>>(std::move(limits));
  auto rq = std::make_shared<const Request>(self->request(Op::kCheck, key, cost, self->now(), owned.get()));
  Report report{&self->client_->metrics()};
  decide_async(self, rq, [self, owned, report, done](Outcome o) {
    report(o.decision, o.error);
    if (!o.error) o.decision = self->finish(o.decision);
    done(o.decision, o.error);
  });
}

// The steps of the calls that take more than one round trip. Each step after
// the first runs in the completion of the one before, on a library thread:
// whatever it throws goes to `done`, which thus runs exactly once.
struct AsyncSteps {
  struct AtMost {
    std::shared_ptr<Limiter> self;
    std::string key;
    int64_t want = 1;
    int attempt = 0;
    Limiter::CheckDone done;
  };

  struct Acquire {
    std::shared_ptr<Limiter> self;
    std::string key;
    int64_t cost = 1;
    MonotonicClock::time_point deadline;
    Limiter::CheckDone done;
  };

  struct Many {
    std::shared_ptr<Limiter> self;
    Limiter::Batch batch;
    std::vector<Outcome> decided;
    std::atomic<size_t> pending{0};
    Limiter::ManyDone done;
  };

  // Runs `step`; if it throws, `done` gets the error.
  template <typename F>
  static void guarded(const Limiter::CheckDone& done, F&& step) {
    try {
      step();
    } catch (...) {
      done(Decision{}, std::current_exception());
    }
  }

  static void at_most(const std::shared_ptr<AtMost>& s) {
    Limiter& l = *s->self;
    auto rq = std::make_shared<const Request>(l.request(Op::kPeek, s->key, 1, l.now()));
    Limiter::decide_async(s->self, rq, [s](Outcome p) {
      if (p.error) return s->done(Decision{}, p.error);
      if (p.decision.degraded) return s->done(s->self->finish(p.decision), nullptr);
      const int64_t free_units = p.decision.allowed ? std::min(s->want, p.decision.remaining) : 0;
      // Nothing fits: report what a check of one unit answers (and count it).
      if (free_units < 1) return guarded(s->done, [&] { Limiter::check_async(s->self, s->key, 1, s->done); });
      guarded(s->done, [&] {
        Limiter::check_async(s->self, s->key, free_units, [s](const Decision& d, std::exception_ptr error) {
          if (error || d.allowed || d.shadowed || ++s->attempt >= 4) return s->done(d, error);
          guarded(s->done, [&] { at_most(s); });  // lost a race: peek again
        });
      });
    });
  }

  static void acquire(const std::shared_ptr<Acquire>& s) {
    Limiter::check_async(s->self, s->key, s->cost, [s](const Decision& d, std::exception_ptr error) {
      if (error || d.allowed) return s->done(d, error);
      Client& client = *s->self->client_;
      const auto wake = client.clock()->now() + std::chrono::milliseconds(std::max<int64_t>(1, d.retry_after_ms));
      if (wake > s->deadline) return s->done(d, nullptr);
      guarded(s->done, [&] { client.run_at(wake, [s] { guarded(s->done, [&] { acquire(s); }); }); });
    });
  }

  // One key of a batch answered: the last one finishes the batch.
  static void many_arrived(const std::shared_ptr<Many>& s) {
    if (s->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::vector<Outcome> out;
    try {
      Limiter& l = *s->self;
      out = l.finish_many(s->batch, l.settle_many(s->batch.requests, std::move(s->decided), true));
    } catch (...) {  // out of memory: every key gets the error
      out.assign(s->batch.out.size(), Outcome{Decision{}, std::current_exception()});
    }
    s->done(std::move(out));
  }
};

void Limiter::check_at_most_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t max_cost,
                                  CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  if (max_cost < 1) throw_invalid("max_cost = " + std::to_string(max_cost) + " must be at least 1");
  int64_t cap = self->limits_[0].capacity();
  for (const LimitParams& p : self->limits_) cap = std::min(cap, p.capacity());
  auto s = std::make_shared<AsyncSteps::AtMost>();
  s->self = self;
  s->key.assign(key.data(), key.size());
  s->want = std::min(max_cost, cap);
  s->done = std::move(done);
  AsyncSteps::at_most(s);
}

void Limiter::acquire_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost,
                            std::chrono::milliseconds timeout, CheckDone done) {
  self->client_->ensure_open();
  check_bound(bounds::kTimeoutMs, timeout.count());
  self->validate_key(key);
  self->validate_cost(cost);
  auto s = std::make_shared<AsyncSteps::Acquire>();
  s->self = self;
  s->key.assign(key.data(), key.size());
  s->cost = cost;
  s->deadline = self->client_->clock()->now() + timeout;
  s->done = std::move(done);
  AsyncSteps::acquire(s);
}

void Limiter::reset_async(const std::shared_ptr<Limiter>& self, std::string_view key, ResetDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  std::vector<std::string> keys = self->storage_keys(key);
  if (self->options_.block_ms > 0) keys.push_back(keys[0] + ":block");
  if (self->fallback_) self->fallback_->reset(keys);
  auto after = [self, key_copy = std::string(key), done](std::exception_ptr error) {
    // After the reset, as reset() does.
    if (!error && self->deny_cache_) self->deny_cache_->erase(key_copy);
    done(error);
  };
  try {
    self->client_->backend().reset_async(keys, after);
  } catch (...) {  // nothing was queued (a failed connect, a full queue): the completion says so
    after(std::current_exception());
  }
}

void Limiter::check_many_async(const std::shared_ptr<Limiter>& self, const std::vector<std::string_view>& keys,
                               int64_t cost, ManyDone done) {
  auto s = std::make_shared<AsyncSteps::Many>();
  s->self = self;
  s->batch = self->plan_many(keys, cost);
  s->done = std::move(done);
  const size_t n = s->batch.requests.size();
  s->decided.resize(n);
  if (n > 0 && self->breaker_ && !self->breaker_->allow()) {  // as decide_many()
    for (auto& o : s->decided) o.error = std::make_exception_ptr(self->breaker_open());
    std::vector<Outcome> settled = self->settle_many(s->batch.requests, std::move(s->decided), false);
    return s->done(self->finish_many(s->batch, std::move(settled)));
  }
  // One more than the keys, released after the loop: no completion that
  // arrives while later keys are still being submitted can finish the batch.
  s->pending.store(n + 1, std::memory_order_relaxed);
  for (size_t j = 0; j < n; ++j) {
    try {
      self->client_->backend().evaluate_async(s->batch.requests[j], [s, j](Outcome o) {
        s->decided[j] = std::move(o);
        AsyncSteps::many_arrived(s);
      });
    } catch (...) {  // this key was not queued; the failure policy sees it with the others
      s->decided[j] = Outcome{Decision{}, std::current_exception()};
      AsyncSteps::many_arrived(s);
    }
  }
  AsyncSteps::many_arrived(s);
}

}  // namespace polylimit
