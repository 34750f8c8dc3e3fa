// deny_cache.h - remembers, per caller key, that Redis denied it until a
// time, so a flood of checks for a denied key costs no round trips.
//
// It only ever denies, and only what Redis would deny too: an entry holds the
// smallest cost Redis denied and a deadline no later than Redis's own (the
// call's start plus retry_after rounded down), and retry_after never shrinks
// for a larger cost or an earlier time. Bounded: least recently used entries
// are dropped first. It holds no clock: callers pass the client's
// MonotonicClock time (clock.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "polylimit/decision.h"
#include "util/clock.h"

namespace polylimit {

class DenyCache {
 public:
  using TimePoint = MonotonicClock::time_point;
  explicit DenyCache(size_t capacity) : capacity_(capacity) {}

  // A cached denial for `cost` at `now`, or nothing (ask Redis).
  std::optional<Decision> lookup(std::string_view key, int64_t cost, TimePoint now);
  // Records what Redis answered for a call that started at `started`, when
  // no erase() happened since `epoch` (a reset racing with the call must win).
  void record(std::string_view key, int64_t cost, const Decision& d, TimePoint started, uint64_t epoch);
  void erase(std::string_view key);
  uint64_t epoch();
  size_t size();

 private:
  struct Entry {
    std::string key;
    TimePoint until;
    int64_t cost;  // Redis denied this cost; larger costs are denied too
    Decision decision;
    TimePoint decided;  // when `decision` was current
  };
  std::mutex mu_;
  size_t capacity_;
  uint64_t epoch_ = 0;    // erase() count
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;
};

}  // namespace polylimit
