// memory_backend.h - the same algorithms in this process (memory://).
//
// Same Decision semantics as the Lua scripts, with an injectable clock, for
// tests, single-process use and (later) as a failure fallback. Thread-safe:
// keys are spread over shards, each with its own lock.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "redlimit/backend.h"

namespace redlimit {

class MemoryBackend : public Backend {
 public:
  using Clock = std::function<int64_t()>;  // microseconds since the epoch
  explicit MemoryBackend(Clock clock = {});

  Decision evaluate(Op op, const LimitParams& params, const std::string& key, int64_t cost,
                    int64_t now_us) override;
  void reset(const std::string& key) override;

  // Keys held now (expired ones linger until the next sweep of their shard).
  size_t size();

 private:
  // The log of one key: (time, units admitted at that time), oldest first.
  struct Log {
    std::deque<std::pair<int64_t, int64_t>> entries;
    int64_t total = 0;
    int64_t expires_at = 0;  // like the Redis key's PEXPIRE
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, Log> logs;
    size_t ops_since_sweep = 0;
  };

  Shard& shard_for(const std::string& key);
  static void sweep(Shard& shard, int64_t now);

  Clock clock_;
  std::array<Shard, 16> shards_;
};

// Microseconds since the epoch from the system realtime clock.
int64_t realtime_us();

}  // namespace redlimit
