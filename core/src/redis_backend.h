// redis_backend.h - runs the algorithms as Lua scripts on one Redis server.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <memory>

#include "redlimit/backend.h"
#include "transport.h"

namespace redlimit {

class RedisBackend : public Backend {
 public:
  explicit RedisBackend(std::unique_ptr<Transport> transport);

  Decision evaluate(Op op, const LimitParams& params, const std::string& key, int64_t cost,
                    int64_t now_us) override;
  void reset(const std::string& key) override;

  Transport& transport() { return *transport_; }

 private:
  // A token unique to this call across processes: a random per-backend id and
  // a counter. Script members are built from it.
  std::string next_token();

  std::unique_ptr<Transport> transport_;
  std::string instance_id_;
  std::atomic<uint64_t> counter_{0};
};

}  // namespace redlimit
