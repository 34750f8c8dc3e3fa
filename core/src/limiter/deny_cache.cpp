// deny_cache.cpp - LRU of recent denials.
#include "limiter/deny_cache.h"

#include <algorithm>

namespace polylimit {
namespace {

int64_t ceil_ms(MonotonicClock::duration d) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return us <= 0 ? 0 : (us + 999) / 1000;
}

}  // namespace

std::optional<Decision> DenyCache::lookup(std::string_view key, int64_t cost, TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  Entry& e = *it->second;
  if (now >= e.until) {
    auto pos = it->second;
    index_.erase(it);
    lru_.erase(pos);
    return std::nullopt;
  }
  if (cost < e.cost) return std::nullopt;  // a smaller cost may fit: ask Redis
  lru_.splice(lru_.begin(), lru_, it->second);
  Decision d = e.decision;
  d.cached = true;
  const auto elapsed = now - e.decided;
  d.retry_after_ms = std::max<int64_t>(1, ceil_ms(e.until - now));
  d.reset_after_ms = std::max<int64_t>(d.retry_after_ms, d.reset_after_ms - ceil_ms(elapsed) + 1);
  return d;
}

uint64_t DenyCache::epoch() {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

void DenyCache::record(std::string_view key, int64_t cost, const Decision& d, TimePoint started, uint64_t epoch) {
  if (d.allowed) return;  // an admission says nothing about later denials
  // Redis computed retry_after at a moment after `started` and rounded it up
  // to a millisecond: one millisecond less from `started` is never too late.
  if (d.retry_after_ms <= 1) return;
  const TimePoint until = started + std::chrono::milliseconds(d.retry_after_ms - 1);
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch != epoch_) return;
  auto it = index_.find(key);
  if (it != index_.end()) {
    Entry& e = *it->second;
    e.until = until;
    e.cost = cost;
    e.decision = d;
    e.decided = started;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  if (capacity_ == 0) return;
  while (lru_.size() >= capacity_) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front(Entry{std::string(key), until, cost, d, started});
  index_.emplace(lru_.front().key, lru_.begin());
}

void DenyCache::erase(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  ++epoch_;
  auto it = index_.find(key);
  if (it == index_.end()) return;
  auto pos = it->second;
  index_.erase(it);
  lru_.erase(pos);
}

size_t DenyCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace polylimit
