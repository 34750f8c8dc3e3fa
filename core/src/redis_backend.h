// redis_backend.h - runs the algorithms as Lua scripts on one Redis server.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "pool.h"
#include "redlimit/backend.h"
#include "script_cache.h"

namespace redlimit {

class RedisBackend : public Backend {
 public:
  RedisBackend(Endpoint endpoint, PoolOptions options);

  Decision evaluate(Op op, const LimitParams& params, const std::string& key, int64_t cost,
                    int64_t now_us) override;
  void reset(const std::string& key) override;

  ConnectionPool& pool() { return pool_; }
  ScriptCache& scripts() { return scripts_; }

 private:
  // A token unique to this call across processes: a random per-backend id and
  // a counter. Script members are built from it.
  std::string next_token();

  ConnectionPool pool_;
  ScriptCache scripts_;
  std::string instance_id_;
  std::atomic<uint64_t> counter_{0};
};

}  // namespace redlimit
