// client.h - polylimit::Client: one deployment (URL), its pool and script cache.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "polylimit/backend.h"
#include "polylimit/metrics.h"
#include "polylimit/url.h"

namespace polylimit {

// Pool and transport knobs. Every field has a usable default.
struct PoolOptions {
  int size = 8;                   // most connections open at once (>= 1)
  int connect_timeout_ms = 1000;  // TCP / unix connect (>= 1)
  int command_timeout_ms = 1000;  // send and reply of one command (>= 1)
  int acquire_timeout_ms = 1000;  // wait for a free connection when all are busy (>= 0)
  int keepalive_s = 15;           // TCP keepalive interval; 0: keepalive off
  int idle_check_ms = 30000;      // PING a connection idle longer than this before reuse
};

struct ClientOptions {
  PoolOptions pool;
  // memory:// only: the backend's clock in microseconds since the epoch.
  // Empty: the system realtime clock. Tests inject a fake clock here.
  std::function<int64_t()> memory_clock;
};

// Throws Error(kInvalidArgument) naming the bad field.
void validate(const PoolOptions& options);

class Client {
 public:
  // Parses the URL and makes the backend; connections are made lazily.
  static std::shared_ptr<Client> open(const std::string& url, const ClientOptions& options = {});

  Backend& backend() const { return *backend_; }
  Metrics& metrics() const { return *metrics_; }
  // Counters of every limiter on this client, with the backend's round trips.
  Stats stats() const;
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Client(Endpoint endpoint, std::unique_ptr<Backend> backend)
      : endpoint_(std::move(endpoint)), backend_(std::move(backend)), metrics_(std::make_unique<Metrics>()) {}
  Endpoint endpoint_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Metrics> metrics_;
};

}  // namespace polylimit
