// short_timeouts.h - clients and limiters for the fault tests (transport,
// outcome): one connection and 200 ms timeouts unless asked otherwise, so a
// fault shows within a fraction of a second.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "polylimit/client.h"
#include "polylimit/limiter.h"

namespace pltest {

constexpr int kTimeoutMs = 200;

inline std::shared_ptr<polylimit::Client> client_for(const std::string& url, int pool_size = 1,
                                                     int timeout_ms = kTimeoutMs) {
  polylimit::ClientOptions co;
  co.pool.size = pool_size;
  co.pool.command_timeout_ms = timeout_ms;
  co.pool.connect_timeout_ms = timeout_ms;
  return polylimit::Client::open(url, co);
}

inline polylimit::Limiter limiter(std::shared_ptr<polylimit::Client> c, const std::string& prefix, int64_t limit = 10) {
  polylimit::LimiterOptions o;
  o.prefix = prefix;
  o.limit = {polylimit::Algorithm::kSlidingLog, limit, 600000};
  return polylimit::Limiter(std::move(c), o);
}

}  // namespace pltest
