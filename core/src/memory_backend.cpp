// memory_backend.cpp - sliding-window log in process, mirroring sliding_log.lua.
#include "memory_backend.h"

#include <algorithm>
#include <chrono>

#include "redlimit/errors.h"

namespace redlimit {

int64_t realtime_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

namespace {

int64_t us_to_ms(int64_t us) { return us <= 0 ? 0 : (us + 999) / 1000; }

}  // namespace

MemoryBackend::MemoryBackend(Clock clock) : clock_(clock ? std::move(clock) : Clock(realtime_us)) {}

MemoryBackend::Shard& MemoryBackend::shard_for(const std::string& key) {
  return shards_[std::hash<std::string>{}(key) % shards_.size()];
}

void MemoryBackend::sweep(Shard& shard, int64_t now) {
  for (auto it = shard.logs.begin(); it != shard.logs.end();) {
    if (it->second.expires_at <= now)
      it = shard.logs.erase(it);
    else
      ++it;
  }
  shard.ops_since_sweep = 0;
}

Decision MemoryBackend::evaluate(Op op, const LimitParams& p, const std::string& key, int64_t cost, int64_t now_us) {
  if (p.algorithm != Algorithm::kSlidingLog) throw Error(ErrorCode::kInvalidArgument, "unknown algorithm");
  // Expiry follows the backend's own clock, as PEXPIRE follows the server's,
  // even when the caller supplies the time of the decision.
  const int64_t server_now = clock_();
  const int64_t now = now_us == kServerTime ? server_now : now_us;
  const int64_t window = p.window_ms * 1000;
  const int64_t edge = now - window;  // entries at or before the edge have left

  Shard& shard = shard_for(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  // Amortised O(1): a sweep costs O(keys) and runs once per that many ops.
  if (++shard.ops_since_sweep >= std::max<size_t>(1024, shard.logs.size())) sweep(shard, server_now);

  auto it = shard.logs.find(key);
  Log empty;
  Log& log = it != shard.logs.end() ? it->second : empty;
  if (log.expires_at <= server_now && !log.entries.empty()) {
    log.entries.clear();  // the Redis key would have expired
    log.total = 0;
  }

  // Units in the window. A check drops the old entries (ZREMRANGEBYSCORE); a
  // peek only counts (ZCOUNT).
  int64_t count = 0;
  if (op == Op::kCheck) {
    while (!log.entries.empty() && log.entries.front().first <= edge) {
      log.total -= log.entries.front().second;
      log.entries.pop_front();
    }
    count = log.total;
  } else {
    for (const auto& e : log.entries)
      if (e.first > edge) count += e.second;
  }

  Decision d;
  d.limit = p.limit;
  int64_t retry_us = 0;
  if (op == Op::kCheck && count + cost <= p.limit) {
    Log& stored = it != shard.logs.end() ? it->second : shard.logs[key];
    // Keep the log sorted by time even if a client clock steps back.
    auto pos = std::upper_bound(stored.entries.begin(), stored.entries.end(), now,
                                [](int64_t t, const std::pair<int64_t, int64_t>& e) { return t < e.first; });
    if (pos != stored.entries.begin() && std::prev(pos)->first == now)
      std::prev(pos)->second += cost;
    else
      stored.entries.insert(pos, {now, cost});
    stored.total += cost;
    stored.expires_at = server_now + us_to_ms(window) * 1000;
    count += cost;
    d.allowed = true;
    d.reset_after_ms = us_to_ms(stored.entries.back().first + window - now);
  } else {
    d.allowed = op == Op::kPeek && count + cost <= p.limit;
    int64_t need = count + cost - p.limit;  // units that must leave the window first
    if (need > 0) {
      for (const auto& e : log.entries) {
        if (e.first <= edge) continue;
        need -= e.second;
        if (need <= 0) {
          retry_us = e.first + window - now;
          break;
        }
      }
    }
    if (count > 0) d.reset_after_ms = us_to_ms(log.entries.back().first + window - now);
  }
  d.retry_after_ms = us_to_ms(retry_us);
  d.remaining = std::max<int64_t>(0, p.limit - count);
  return d;
}

void MemoryBackend::reset(const std::string& key) {
  Shard& shard = shard_for(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  shard.logs.erase(key);
}

size_t MemoryBackend::size() {
  size_t n = 0;
  for (auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    n += s.logs.size();
  }
  return n;
}

}  // namespace redlimit
