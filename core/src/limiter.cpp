// limiter.cpp - validation and storage keys; the algorithms live in backends.
#include "redlimit/limiter.h"

#include <algorithm>
#include <cstdio>

#include "deny_cache.h"
#include "memory_backend.h"
#include "redlimit/errors.h"

namespace redlimit {
namespace {

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

void validate(const LimitParams& p) {
  switch (p.algorithm) {
    case Algorithm::kSlidingLog:
    case Algorithm::kSlidingCounter:
    case Algorithm::kFixedWindow:
    case Algorithm::kGcra: break;
    default: throw_invalid("algorithm: unknown value");
  }
  if (p.limit < 1 || p.limit > kMaxLimit)
    throw_invalid("limit = " + std::to_string(p.limit) + " is out of range 1.." + std::to_string(kMaxLimit));
  if (p.window_ms < 1 || p.window_ms > kMaxWindowMs)
    throw_invalid("window_ms = " + std::to_string(p.window_ms) + " is out of range 1.." +
                  std::to_string(kMaxWindowMs));
  if (p.algorithm != Algorithm::kGcra) {
    if (p.burst != 0)
      throw_invalid("burst = " + std::to_string(p.burst) + " is only for the gcra algorithm (use 0 for " +
                    algorithm_name(p.algorithm) + ")");
    return;
  }
  if (p.burst < 0 || p.burst > kMaxLimit)
    throw_invalid("burst = " + std::to_string(p.burst) + " is out of range 0.." + std::to_string(kMaxLimit) +
                  " (0: the limit)");
  // interval * burst bounds every TAT offset; keep sums below 2^53.
  if (p.interval_us() > kMaxTimestampUs / p.capacity())
    throw_invalid("burst = " + std::to_string(p.capacity()) + " times the emission interval (" +
                  std::to_string(p.interval_us()) + " us) is too long");
}

Limiter::Limiter(std::shared_ptr<Client> client, LimiterOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  if (!client_) throw_invalid("client is null");
  limits_ = options_.limits.empty() ? std::vector<LimitParams>{options_.limit} : options_.limits;
  if (limits_.size() > kMaxLimitsPerLimiter)
    throw_invalid("limits: " + std::to_string(limits_.size()) + " given; at most " +
                  std::to_string(kMaxLimitsPerLimiter));
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
  if (options_.deny_cache_size > 10000000)
    throw_invalid("deny_cache_size = " + std::to_string(options_.deny_cache_size) + " is larger than 10000000");
  if (options_.deny_cache_size > 0) deny_cache_ = std::make_unique<DenyCache>(options_.deny_cache_size);
  if (options_.prefix.empty()) throw_invalid("prefix is empty");
  if (options_.prefix.size() > kMaxPrefixLength)
    throw_invalid("prefix is longer than " + std::to_string(kMaxPrefixLength) + " bytes");
  if (options_.prefix.find_first_of("{}") != std::string::npos)
    throw_invalid("prefix must not contain '{' or '}' (the library places the hash tag)");
}

Limiter::~Limiter() = default;
Limiter::Limiter(Limiter&&) noexcept = default;

std::string Limiter::storage_key(std::string_view key) const {
  char tag[17];
  std::snprintf(tag, sizeof tag, "%016llx", static_cast<unsigned long long>(fnv1a64(key)));
  std::string out;
  out.reserve(options_.prefix.size() + key.size() + 40);
  out.append(options_.prefix).append(":").append(algorithm_name(limits_[0].algorithm));
  out.append(":{").append(tag).append("}:").append(key.data(), key.size());
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

void Limiter::validate_cost(int64_t cost) const {
  if (cost < 1) throw_invalid("cost = " + std::to_string(cost) + " must be at least 1");
  for (const LimitParams& p : limits_) {
    if (cost > p.capacity())
      throw_invalid("cost = " + std::to_string(cost) + " exceeds " +
                    (p.algorithm == Algorithm::kGcra ? "burst" : "limit") + " = " + std::to_string(p.capacity()) +
                    " and could never be admitted");
  }
}

int64_t Limiter::now() const { return options_.clock == ClockSource::kClient ? realtime_us() : kServerTime; }

Request Limiter::request(Op op, std::string_view key, int64_t cost, int64_t now_us) const {
  Request r;
  r.op = op;
  r.limits = &limits_;
  r.keys = storage_keys(key);
  r.cost = cost;
  r.now_us = now_us;
  return r;
}

Decision Limiter::check(std::string_view key, int64_t cost) {
  validate_key(key);
  validate_cost(cost);
  const auto started = DenyCache::Clock::now();
  uint64_t epoch = 0;
  if (deny_cache_) {
    if (auto d = deny_cache_->lookup(key, cost, started)) return *d;
    epoch = deny_cache_->epoch();
  }
  Decision d = client_->backend().evaluate(request(Op::kCheck, key, cost, now()));
  if (deny_cache_) deny_cache_->record(key, cost, d, started, epoch);
  return d;
}

Decision Limiter::check_at(std::string_view key, int64_t cost, int64_t now_us) {
  validate_key(key);
  validate_cost(cost);
  if (now_us < 1 || now_us > kMaxTimestampUs)
    throw_invalid("now_us = " + std::to_string(now_us) + " is out of range 1.." + std::to_string(kMaxTimestampUs));
  return client_->backend().evaluate(request(Op::kCheck, key, cost, now_us));
}

Decision Limiter::peek(std::string_view key) {
  validate_key(key);
  return client_->backend().evaluate(request(Op::kPeek, key, 1, now()));
}

void Limiter::reset(std::string_view key) {
  validate_key(key);
  client_->backend().reset(storage_keys(key));
  // After the reset; erase() also stops checks already in flight from caching
  // a denial that the reset made stale.
  if (deny_cache_) deny_cache_->erase(key);
}

std::vector<Outcome> Limiter::check_many(const std::vector<std::string_view>& keys, int64_t cost) {
  validate_cost(cost);
  if (keys.size() > kMaxBatch)
    throw_invalid("keys: " + std::to_string(keys.size()) + " given; at most " + std::to_string(kMaxBatch));
  std::vector<Outcome> out(keys.size());
  std::vector<Request> requests;
  std::vector<size_t> index;
  const int64_t t = now();
  const auto started = DenyCache::Clock::now();
  const uint64_t epoch = deny_cache_ ? deny_cache_->epoch() : 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    try {
      validate_key(keys[i]);
      if (deny_cache_) {
        if (auto d = deny_cache_->lookup(keys[i], cost, started)) {
          out[i].decision = *d;
          continue;
        }
      }
      requests.push_back(request(Op::kCheck, keys[i], cost, t));
      index.push_back(i);
    } catch (...) {
      out[i].error = std::current_exception();
    }
  }
  std::vector<Outcome> decided = client_->backend().evaluate_many(requests);
  for (size_t j = 0; j < index.size(); ++j) {
    if (deny_cache_ && !decided[j].error) deny_cache_->record(keys[index[j]], cost, decided[j].decision, started, epoch);
    out[index[j]] = std::move(decided[j]);
  }
  return out;
}

}  // namespace redlimit
