// limiter.h - redlimit::Limiter: a limit applied to caller keys.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "redlimit/backend.h"
#include "redlimit/client.h"
#include "redlimit/decision.h"

namespace redlimit {

// Bounds that keep every number exact in C++ and in Lua (doubles, < 2^53).
constexpr int64_t kMaxLimit = 1000000;             // units per window (sliding log)
constexpr int64_t kMaxWindowMs = 31622400000;      // 366 days
constexpr int64_t kMaxTimestampUs = int64_t{1} << 52;  // ~year 2112
constexpr size_t kMaxPrefixLength = 256;
constexpr size_t kMaxKeyLength = 64 * 1024 * 1024;  // bytes; Redis allows 512 MiB

enum class ClockSource {
  kServer,  // Redis TIME inside the script (the memory backend's clock for memory://)
  kClient,  // this process's realtime clock
};

struct LimiterOptions {
  LimitParams limit;
  std::string prefix = "rl";
  ClockSource clock = ClockSource::kServer;
};

class Limiter {
 public:
  // Validates the options; throws Error(kInvalidArgument) naming the field.
  Limiter(std::shared_ptr<Client> client, LimiterOptions options);

  Decision check(std::string_view key, int64_t cost = 1);
  // As check, at an explicit time (microseconds since the epoch).
  Decision check_at(std::string_view key, int64_t cost, int64_t now_us);
  Decision peek(std::string_view key);
  void reset(std::string_view key);

  // The storage key for a caller key: prefix, algorithm, a hash tag derived
  // from the key (so a caller's braces cannot pick the Cluster slot), the key.
  std::string storage_key(std::string_view key) const;

  const LimiterOptions& options() const { return options_; }

 private:
  int64_t now() const;
  void validate_key(std::string_view key) const;
  void validate_cost(int64_t cost) const;

  std::shared_ptr<Client> client_;
  LimiterOptions options_;
};

}  // namespace redlimit
