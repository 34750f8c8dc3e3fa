// client.cpp - Client::open picks the backend for a URL.
#include "polylimit/client.h"

#include "cluster_transport.h"
#include "memory_backend.h"
#include "redis_backend.h"
#include "sentinel_transport.h"
#include "transport.h"
#include "polylimit/errors.h"

namespace polylimit {
namespace {

void check_range(const char* name, long long value, long long lo, long long hi) {
  if (value < lo || value > hi)
    throw_invalid(std::string(name) + " = " + std::to_string(value) + " is out of range " + std::to_string(lo) +
                  ".." + std::to_string(hi));
}

std::unique_ptr<Transport> make_transport(const Endpoint& ep, const PoolOptions& pool) {
  if (ep.kind == Endpoint::Kind::kCluster) return std::make_unique<ClusterTransport>(ep, pool);
  if (ep.kind == Endpoint::Kind::kSentinel) return std::make_unique<SentinelTransport>(ep, pool);
  return std::make_unique<StandaloneTransport>(ep, pool);
}

}  // namespace

void validate(const PoolOptions& o) {
  check_range("pool_size", o.size, 1, 4096);
  check_range("connect_timeout_ms", o.connect_timeout_ms, 1, 3600000);
  check_range("command_timeout_ms", o.command_timeout_ms, 1, 3600000);
  check_range("acquire_timeout_ms", o.acquire_timeout_ms, 0, 3600000);
  check_range("keepalive_s", o.keepalive_s, 0, 86400);
  check_range("idle_check_ms", o.idle_check_ms, 0, 86400000);
}

std::shared_ptr<Client> Client::open(const std::string& url, const ClientOptions& options) {
  Endpoint ep = parse_url(url);
  validate(options.pool);
  std::unique_ptr<Backend> backend;
  if (ep.kind == Endpoint::Kind::kMemory)
    backend = std::make_unique<MemoryBackend>(options.memory_clock);
  else
    backend = std::make_unique<RedisBackend>(make_transport(ep, options.pool));
  return std::shared_ptr<Client>(new Client(std::move(ep), std::move(backend)));
}

Stats Client::stats() const {
  Stats s = metrics_->snapshot();
  s.round_trips = static_cast<uint64_t>(backend_->round_trips());
  s.noscript_reloads = static_cast<uint64_t>(backend_->noscript_reloads());
  return s;
}

}  // namespace polylimit
