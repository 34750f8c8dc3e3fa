// backend.h - where the algorithms run: Redis (Lua scripts) or this process.
#pragma once

#include <cstdint>
#include <string>

#include "redlimit/decision.h"

namespace redlimit {

enum class Algorithm {
  kSlidingLog,  // exact sliding-window log: one entry per admitted unit
};

const char* algorithm_name(Algorithm algorithm) noexcept;

// One limit: `limit` units per `window_ms`.
struct LimitParams {
  Algorithm algorithm = Algorithm::kSlidingLog;
  int64_t limit = 0;
  int64_t window_ms = 0;
};

enum class Op {
  kCheck,  // admit `cost` units, all or nothing
  kPeek,   // report what a check of `cost` would answer; consume nothing
};

// Time passed to a backend: microseconds since the epoch, or kServerTime to
// let the backend read its own clock (Redis TIME, or the memory clock).
constexpr int64_t kServerTime = -1;

class Backend {
 public:
  virtual ~Backend() = default;
  // `key` is the full storage key (prefix and hash tag applied by Limiter).
  virtual Decision evaluate(Op op, const LimitParams& params, const std::string& key,
                            int64_t cost, int64_t now_us) = 0;
  virtual void reset(const std::string& key) = 0;
};

}  // namespace redlimit
