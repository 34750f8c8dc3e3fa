// limiter.cpp - validation and storage keys; the algorithms live in backends.
#include "redlimit/limiter.h"

#include <cstdio>

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

Limiter::Limiter(std::shared_ptr<Client> client, LimiterOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  if (!client_) throw_invalid("client is null");
  const LimitParams& p = options_.limit;
  if (p.algorithm != Algorithm::kSlidingLog) throw_invalid("algorithm: unknown value");
  if (p.limit < 1 || p.limit > kMaxLimit)
    throw_invalid("limit = " + std::to_string(p.limit) + " is out of range 1.." + std::to_string(kMaxLimit));
  if (p.window_ms < 1 || p.window_ms > kMaxWindowMs)
    throw_invalid("window_ms = " + std::to_string(p.window_ms) + " is out of range 1.." +
                  std::to_string(kMaxWindowMs));
  if (options_.prefix.empty()) throw_invalid("prefix is empty");
  if (options_.prefix.size() > kMaxPrefixLength)
    throw_invalid("prefix is longer than " + std::to_string(kMaxPrefixLength) + " bytes");
  if (options_.prefix.find_first_of("{}") != std::string::npos)
    throw_invalid("prefix must not contain '{' or '}' (the library places the hash tag)");
}

std::string Limiter::storage_key(std::string_view key) const {
  char tag[17];
  std::snprintf(tag, sizeof tag, "%016llx", static_cast<unsigned long long>(fnv1a64(key)));
  std::string out;
  out.reserve(options_.prefix.size() + key.size() + 40);
  out.append(options_.prefix).append(":").append(algorithm_name(options_.limit.algorithm));
  out.append(":{").append(tag).append("}:").append(key.data(), key.size());
  return out;
}

void Limiter::validate_key(std::string_view key) const {
  if (key.empty()) throw_invalid("key is empty");
  if (key.size() > kMaxKeyLength)
    throw_invalid("key is " + std::to_string(key.size()) + " bytes; at most " + std::to_string(kMaxKeyLength));
}

void Limiter::validate_cost(int64_t cost) const {
  if (cost < 1) throw_invalid("cost = " + std::to_string(cost) + " must be at least 1");
  if (cost > options_.limit.limit)
    throw_invalid("cost = " + std::to_string(cost) + " exceeds limit = " + std::to_string(options_.limit.limit) +
                  " and could never be admitted");
}

int64_t Limiter::now() const { return options_.clock == ClockSource::kClient ? realtime_us() : kServerTime; }

Decision Limiter::check(std::string_view key, int64_t cost) {
  validate_key(key);
  validate_cost(cost);
  return client_->backend().evaluate(Op::kCheck, options_.limit, storage_key(key), cost, now());
}

Decision Limiter::check_at(std::string_view key, int64_t cost, int64_t now_us) {
  validate_key(key);
  validate_cost(cost);
  if (now_us < 1 || now_us > kMaxTimestampUs)
    throw_invalid("now_us = " + std::to_string(now_us) + " is out of range 1.." + std::to_string(kMaxTimestampUs));
  return client_->backend().evaluate(Op::kCheck, options_.limit, storage_key(key), cost, now_us);
}

Decision Limiter::peek(std::string_view key) {
  validate_key(key);
  return client_->backend().evaluate(Op::kPeek, options_.limit, storage_key(key), 1, now());
}

void Limiter::reset(std::string_view key) {
  validate_key(key);
  client_->backend().reset(storage_key(key));
}

}  // namespace redlimit
