// client.h - polylimit::Client: one deployment (URL), its pool and script cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "polylimit/backend.h"
#include "polylimit/metrics.h"
#include "polylimit/url.h"

namespace polylimit {

// Pool and transport knobs; defaults and bounds come from the vocabulary.
struct PoolOptions {
  int size = bounds::kPoolSize.def;                              // most connections open at once
  int connect_timeout_ms = bounds::kConnectTimeoutMs.def;        // TCP / unix connect
  int command_timeout_ms = bounds::kCommandTimeoutMs.def;        // send and reply of one command
  int acquire_timeout_ms = bounds::kAcquireTimeoutMs.def;        // wait for a free connection when all are busy
  int keepalive_s = bounds::kKeepaliveS.def;                     // TCP keepalive interval; 0: keepalive off
  int idle_check_ms = bounds::kIdleCheckMs.def;                  // PING a connection idle longer than this before reuse
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

  // Closes the client for every limiter made from it: connections are
  // released and later calls throw kClosed. Idempotent; calls in flight
  // finish on the connections they hold.
  void close();
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Throws kClosed when the client is closed.
  void ensure_open() const;

 private:
  Client(Endpoint endpoint, std::unique_ptr<Backend> backend)
      : endpoint_(std::move(endpoint)), backend_(std::move(backend)), metrics_(std::make_unique<Metrics>()) {}
  Endpoint endpoint_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Metrics> metrics_;
  std::atomic<bool> closed_{false};
};

}  // namespace polylimit
