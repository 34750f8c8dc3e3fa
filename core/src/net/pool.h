// pool.h - the connections of one Redis node, shared by every caller.
//
// A node gets at most `size` connections (PoolOptions::size); each is a Mux
// that many concurrent callers share by pipelining their commands (mux.h). A
// call goes to the connection with the fewest calls waiting; another
// connection is made only when every open one is busy and the bound allows.
// A connection that fails is dropped (its calls fail) and a new one is made
// on demand, after a backoff while the node keeps refusing. After fork() the
// child never uses the parent's connections: it starts afresh.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/connection.h"
#include "net/mux.h"
#include "polylimit/connection_options.h"
#include "polylimit/url.h"
#include "util/clock.h"
#include "util/per_process.h"

namespace polylimit {

class ConnectionPool;

// What a transport holds for one call or batch: a Link onto a shared
// connection of the pool. A command() or pipeline() that fails before any
// byte of it was written (the connection had just been closed) is retried
// once on another connection.
class PooledConnection final : public Link {
 public:
  PooledConnection(PooledConnection&&) noexcept = default;
  PooledConnection& operator=(PooledConnection&&) = delete;
  Link& operator*() { return *this; }
  Link* operator->() { return this; }

  ReplyPtr command(const Argv& argv) override;
  std::vector<ReplyPtr> pipeline(const std::vector<Argv>& commands) override;
  bool sent() const override { return sent_; }
  bool broken() const override { return mux_ == nullptr || mux_->broken(); }

  // The non-blocking form of pipeline(): `done` runs once with the replies
  // or the error (Mux::Call::on_done says on which thread). Throws when the
  // call cannot be queued (then `done` never runs).
  // `deadline`: the call's (a retry keeps the first attempt's); default:
  // the command timeout from now.
  void submit(const std::vector<Argv>& commands, std::function<void(Mux::Call&)> done,
              Mux::Clock::time_point deadline = {});
  // One command (no vector of them to build).
  void submit(const Argv& command, std::function<void(Mux::Call&)> done, Mux::Clock::time_point deadline = {});

 private:
  friend class ConnectionPool;
  PooledConnection(ConnectionPool* pool, std::shared_ptr<Mux> mux) : pool_(pool), mux_(std::move(mux)) {}
  Mux::CallPtr prepare(const Argv* const* commands, size_t count, Mux::Clock::time_point deadline);
  void submit(const Argv* const* commands, size_t count, std::function<void(Mux::Call&)> done,
              Mux::Clock::time_point deadline);
  // The call, done: its replies are the caller's to take (the call is the
  // thread's reused one, so taking one reply keeps the vector's room).
  Mux::CallPtr run(const Argv* const* commands, size_t count);
  ConnectionPool* pool_;
  std::shared_ptr<Mux> mux_;
  bool sent_ = false;
};

class ConnectionPool {
 public:
  // `tls`: the client's TLS context, required when endpoint.tls (shared by
  // every connection of the pool, and of the client's other pools).
  // `clock`: the client's, of the reconnect backoff (null: the real clock);
  // connect and command deadlines are always on the real clock.
  ConnectionPool(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls = nullptr,
                 std::shared_ptr<const MonotonicClock> clock = nullptr);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // A link onto the first connection with fewer than kFill calls waiting,
  // else the least busy one; a connection with a WAIT in flight counts as
  // full. Made now when none is open, or when every open one has kFill
  // waiting and fewer than `size` are open. Throws the connect error, or
  // kUnavailable at once while reconnects back off.
  // `grow` false: never connect while a connection is open, however busy
  // (the non-blocking path must not wait on a connect).
  PooledConnection acquire(bool grow = true);
  // Calls waiting on a connection before the next one is used (measured in
  // bench/README.md, "Filling the first connection").
  static constexpr size_t kFill = 16;

  const Endpoint& endpoint() const { return endpoint_; }
  const PoolOptions& options() const { return options_; }

  // Fails every queued and in-flight call with kClosed and closes the
  // connections; acquire() then throws kClosed.
  void close();
  ~ConnectionPool();

  // Connections open now, for tests and stats.
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

  // The wait after `failures` (>= 1) consecutive failed connects: 10 ms
  // doubling to 1 s, jittered down to at most half (per thread, seeded from
  // the pid) so that processes do not reconnect in step.
  static std::chrono::microseconds backoff(int failures);

 private:
  friend class PooledConnection;
  struct State {  // one per process (see PerProcess)
    std::mutex mu;
    std::vector<std::shared_ptr<Mux>> muxes;
    int connecting = 0;  // connects under way (outside the lock)
    // Reconnect backoff: after `failures` consecutive failed connects, no new
    // connect is tried before `retry_at` (10 ms doubling to 1 s, jittered),
    // on the pool's clock.
    int failures = 0;
    MonotonicClock::time_point retry_at{};
    std::string last_error;  // of the last failed connect, for the fail-fast message
    int last_errno = 0;
    ErrorCode last_code = ErrorCode::kUnavailable;  // kAuth stays kAuth while backing off
  };
  State* current();
  std::shared_ptr<Mux> connect(State* s, std::unique_lock<std::mutex>& lock);
  bool usable(Mux& mux);
  void probe_eviction(Connection& conn);

  Endpoint endpoint_;
  PoolOptions options_;
  std::shared_ptr<const TlsContext> tls_;
  std::shared_ptr<const MonotonicClock> clock_;
  PerProcess<State> states_;
  std::atomic<long> made_{0};
  std::atomic<long> attempts_{0};
  std::atomic<bool> closed_{false};
  std::atomic<int> evicting_{-1};
};

}  // namespace polylimit
