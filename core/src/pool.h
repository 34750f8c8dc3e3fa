// pool.h - a bounded, thread-safe, fork-aware pool of Connections.
//
// A connection is leased to one thread at a time (PooledConnection is the RAII
// lease) and comes back on destruction; a broken one is dropped and a new one
// is made on demand. After fork() the child never uses the parent's
// connections: the pool notices the pid change and starts afresh.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "connection.h"
#include "per_process.h"
#include "polylimit/client.h"
#include "polylimit/url.h"

namespace polylimit {

class ConnectionPool;

class PooledConnection {
 public:
  PooledConnection(PooledConnection&& other) noexcept = default;
  PooledConnection& operator=(PooledConnection&&) = delete;
  ~PooledConnection();
  Connection& operator*() const { return *conn_; }
  Connection* operator->() const { return conn_.get(); }

 private:
  friend class ConnectionPool;
  PooledConnection(ConnectionPool* pool, void* state, std::unique_ptr<Connection> conn)
      : pool_(pool), state_(state), conn_(std::move(conn)) {}
  ConnectionPool* pool_;
  void* state_;  // the pool generation it came from
  std::unique_ptr<Connection> conn_;
};

class ConnectionPool {
 public:
  // `tls`: the client's TLS context, required when endpoint.tls (shared by
  // every connection of the pool, and of the client's other pools).
  ConnectionPool(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls = nullptr);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Throws kPoolExhausted after acquire_timeout_ms, or the connect error.
  PooledConnection acquire();

  const Endpoint& endpoint() const { return endpoint_; }
  const PoolOptions& options() const { return options_; }

  // Closes the idle connections now and leased ones when they come back;
  // acquire() then throws kClosed.
  void close();

  // Connections open now (idle plus leased), for tests and stats.
  int open_connections();
  // Connections made since the pool started (this process only).
  long connections_made() const { return made_.load(); }
  // Connects tried (made or failed), this process only.
  long connect_attempts() const { return attempts_.load(std::memory_order_relaxed); }

  // What the node said of eviction when the last connection was made: 1 when
  // maxmemory is set and maxmemory-policy can evict our keys (every policy
  // but noeviction: ours all carry a TTL, so volatile-* evict them too), 0
  // when not, -1 when it could not be read (CONFIG and INFO both denied).
  int evicting() const { return evicting_.load(std::memory_order_relaxed); }

 private:
  friend class PooledConnection;
  struct State {  // one per process (see PerProcess)
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::unique_ptr<Connection>> idle;
    int open = 0;
    // Reconnect backoff: after `failures` consecutive failed connects, no new
    // connect is tried before `retry_at` (10 ms doubling to 1 s, jittered).
    int failures = 0;
    std::chrono::steady_clock::time_point retry_at{};
    std::string last_error;  // of the last failed connect, for the fail-fast message
    int last_errno = 0;
  };
  State* current();
  void release(State* state, std::unique_ptr<Connection> conn);
  bool usable(Connection& conn);
  static std::chrono::microseconds backoff(int failures);
  void probe_eviction(Connection& conn);

  Endpoint endpoint_;
  PoolOptions options_;
  std::shared_ptr<const TlsContext> tls_;
  PerProcess<State> states_;
  std::atomic<long> made_{0};
  std::atomic<long> attempts_{0};
  std::atomic<bool> closed_{false};
  std::atomic<int> evicting_{-1};
};

}  // namespace polylimit
