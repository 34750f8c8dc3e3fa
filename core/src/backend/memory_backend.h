// memory_backend.h - the same algorithms in this process (memory://).
//
// Same Decision semantics as the Lua scripts, with an injectable clock, for
// tests, single-process use and as a failure fallback. Thread-safe: keys are
// spread over shards, each with its own lock; all keys of one caller key
// (one hash tag) live in one shard, so a multi-limit decision is atomic.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "polylimit/backend.h"

namespace polylimit {

class MemoryBackend : public Backend {
 public:
  using Clock = std::function<int64_t()>;  // microseconds since the epoch
  explicit MemoryBackend(Clock clock = {});

  using Backend::evaluate;
  using Backend::reset;
  Decision evaluate(const Request& request) override;
  void reset(const std::vector<std::string>& keys) override;

  // Keys held now (expired ones linger until the next sweep of their shard).
  size_t size();

  // The state of one key; which fields are used depends on the algorithm.
  struct State {
    std::deque<std::pair<int64_t, int64_t>> entries;  // sliding log: (time, units), oldest first
    int64_t total = 0;                                // sliding log: units in `entries`
    int64_t w = 0;                                    // window start (fixed window, sliding counter)
    int64_t n = 0;                                    // units in window w
    int64_t p = 0;                                    // sliding counter: units of the window before w
    int64_t tat = 0;                                  // GCRA: theoretical arrival time
    int64_t expires_at = 0;                           // like the Redis key's PEXPIRE
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, State> states;
    size_t ops_since_sweep = 0;
  };

 private:
  Shard& shard_for(const std::string& key);
  static void sweep(Shard& shard, int64_t now);

  Clock clock_;
  std::array<Shard, 16> shards_;
};

// Microseconds since the epoch from the system realtime clock.
int64_t realtime_us();

}  // namespace polylimit
