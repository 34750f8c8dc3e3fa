// client.h - polylimit::Client: one deployment (URL), its pool and script cache.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "polylimit/backend.h"
#include "polylimit/connection_options.h"
#include "polylimit/metrics.h"
#include "polylimit/url.h"

namespace polylimit {

class MonotonicClock;  // core/src/util/clock.h
class Timer;           // core/src/limiter/client.cpp

struct ClientOptions {
  PoolOptions pool;
  // Labels this client's metrics (client="name"); empty: no label.
  std::string name;
  TlsOptions tls;
  // Checks of one key that arrive while a call of that key is in flight go
  // out together as one script call, decided one after another exactly as
  // separate calls would be (docs/limiter.md, "Hot keys"); checks of one
  // limit on different keys go together as keys calls (check_many, and
  // non-blocking checks past 4 calls of the limit in flight: "Many keys of
  // one limit"). Off: one call per check, as in 1.0.
  bool coalesce = true;
  // memory:// only: the backend's clock in microseconds since the epoch.
  // Empty: the system realtime clock. Tests inject a fake clock here.
  std::function<int64_t()> memory_clock;
  // Internal, for the core's tests (no binding or C ABI sets it): the
  // monotonic clock of this client's time-based decisions (circuit breaker,
  // deny cache, reconnect backoff, Limiter::acquire waits), e.g. a
  // ManualClock (core/src/util/clock.h). Null: the real steady clock. Socket
  // deadlines always use the real clock.
  std::shared_ptr<const MonotonicClock> clock;
};

// Throws Error(kInvalidArgument) naming the bad field.
void validate(const PoolOptions& options);

class Client {
 public:
  // Parses the URL and makes the backend; connections are made lazily. An
  // empty url means the POLYLIMIT_URL environment variable; when that is
  // unset too, Error kInvalidArgument: there is no silent local default
  // (memory:// must be asked for).
  static std::shared_ptr<Client> open(const std::string& url, const ClientOptions& options = {});

  // The URL open() uses for `url`: url itself, or POLYLIMIT_URL when url is
  // empty. Throws Error(kInvalidArgument) when both are empty.
  static std::string resolve_url(const std::string& url);

  Backend& backend() const { return *backend_; }
  Metrics& metrics() const { return *metrics_; }
  // Counters of every limiter on this client, with the backend's round trips.
  Stats stats() const;
  const Endpoint& endpoint() const { return endpoint_; }
  const std::string& name() const { return name_; }
  // The clock of the client's time-based decisions (ClientOptions::clock).
  const std::shared_ptr<const MonotonicClock>& clock() const { return clock_; }

  // Closes the client for every limiter made from it: connections are
  // released and later calls throw kClosed. Idempotent; calls in flight
  // finish on the connections they hold.
  void close();
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Throws kClosed when the client is closed.
  void ensure_open() const;

  // Runs `job` once `when` has come on this client's clock(), on one library
  // thread of this client, started on first use (it waits on the real clock:
  // a ManualClock must be advanced before the wait ends). Jobs still pending
  // when the client closes run then, on the thread that calls close(); after
  // close(), `job` runs on the calling thread. A job never outlives the
  // client's open life by more than that: it meets the closed client.
  void run_at(std::chrono::steady_clock::time_point when, std::function<void()> job);

  // close() runs `hook` first, while the connections still work (a limiter
  // gives back the units its leases hold). Held weakly: a hook whose owner
  // has gone is skipped.
  void on_close(std::weak_ptr<std::function<void()>> hook);

 private:
  Client(Endpoint endpoint, std::unique_ptr<Backend> backend, std::string name,
         std::shared_ptr<const MonotonicClock> clock)
      : endpoint_(std::move(endpoint)),
        backend_(std::move(backend)),
        metrics_(std::make_unique<Metrics>()),
        name_(std::move(name)),
        clock_(std::move(clock)) {}
  Endpoint endpoint_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Metrics> metrics_;
  std::string name_;
  std::shared_ptr<const MonotonicClock> clock_;
  std::atomic<bool> closed_{false};
  void fire_timer();  // close(): runs the pending jobs
  std::mutex timer_mu_;
  std::shared_ptr<Timer> timer_;  // run_at's thread, made on first use
  std::mutex hooks_mu_;
  std::vector<std::weak_ptr<std::function<void()>>> close_hooks_;
};

}  // namespace polylimit
