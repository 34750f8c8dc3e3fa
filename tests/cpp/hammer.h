// hammer.h - threads that check one key until told to stop, counting what
// they were told and when errors happened (for recovery times).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "polylimit/errors.h"
#include "polylimit/limiter.h"

namespace pltest {

inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Limiter::check_async, waited for. The completion hands over plain fields
// and the error is made again on this thread: the library's exception object
// is released on its own thread, through a reference count ThreadSanitizer
// cannot see (libstdc++ is not instrumented).
inline polylimit::Decision check_async_and_wait(const std::shared_ptr<polylimit::Limiter>& limiter,
                                                const std::string& key) {
  struct Result {
    polylimit::Decision decision;
    bool failed = false;
    polylimit::ErrorCode code = polylimit::ErrorCode::kInternal;
    std::string message;
    bool unknown = false;
  };
  std::promise<Result> p;
  polylimit::Limiter::check_async(limiter, key, 1, [&p](const polylimit::Decision& d, std::exception_ptr e) {
    Result r;
    r.decision = d;
    if (e) {
      r.failed = true;
      try {
        std::rethrow_exception(e);
      } catch (const polylimit::Error& error) {
        r.code = error.code();
        r.message = error.what();
        r.unknown = error.outcome_unknown();
      } catch (const std::exception& other) {
        r.message = other.what();
      }
    }
    p.set_value(std::move(r));
  });
  Result r = p.get_future().get();
  if (!r.failed) return r.decision;
  polylimit::Error error(r.code, r.message);
  error.set_outcome_unknown(r.unknown);
  throw error;
}

class Hammer {
 public:
  // `pause` between two checks of one thread keeps the rate low enough that
  // the limit is reached only after the event under test.
  Hammer(polylimit::Limiter& limiter, std::string key, int threads, std::chrono::microseconds pause)
      : limiter_(limiter), key_(std::move(key)) {
    start(threads, pause);
  }
  // Through the non-blocking path (Limiter::check_async), each thread
  // waiting for its own call's completion.
  Hammer(std::shared_ptr<polylimit::Limiter> limiter, std::string key, int threads, std::chrono::microseconds pause)
      : limiter_(*limiter), async_(std::move(limiter)), key_(std::move(key)) {
    start(threads, pause);
  }
  ~Hammer() { stop(); }
  // The pause from each thread's next check on (a thread asleep finishes its
  // current pause first).
  void set_pause(std::chrono::microseconds pause) { pause_us_.store(pause.count()); }
  void stop() {
    stop_.store(true);
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  // Polls `pred` every 5 ms; false after `timeout`.
  static bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  std::string first_error_text() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error;
  }

  std::atomic<long> admitted{0}, denied{0}, errors{0}, attempts{0};
  std::atomic<int64_t> last_error_ns{0}, last_success_ns{0};
  // Errors with an unknown outcome (they may have consumed a unit) from
  // unknown_since_ns on.
  std::atomic<int64_t> unknown_since_ns{INT64_MAX};
  std::atomic<long> unknown_late{0};
  int64_t first_error_ns = 0;

 private:
  polylimit::Decision check() { return async_ ? check_async_and_wait(async_, key_) : limiter_.check(key_); }

  void start(int threads, std::chrono::microseconds pause) {
    pause_us_.store(pause.count());
    for (int t = 0; t < threads; ++t)
      threads_.emplace_back([this] {
        while (!stop_.load()) {
          try {
            polylimit::Decision d = check();
            (d.allowed ? admitted : denied).fetch_add(1);
            last_success_ns.store(steady_ns());
          } catch (const polylimit::Error& e) {
            errors.fetch_add(1);
            int64_t now = steady_ns();
            if (e.outcome_unknown() && now >= unknown_since_ns.load()) unknown_late.fetch_add(1);
            last_error_ns.store(now);
            std::lock_guard<std::mutex> lock(mu_);
            if (first_error.empty()) {
              first_error = std::string(polylimit::error_code_name(e.code())) + ": " + e.what();
              first_error_ns = now;
            }
          }
          attempts.fetch_add(1);
          const int64_t pause_us = pause_us_.load();
          if (pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
        }
      });
  }

  polylimit::Limiter& limiter_;
  std::shared_ptr<polylimit::Limiter> async_;
  std::string key_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> pause_us_{0};
  std::mutex mu_;
  std::string first_error;
  std::vector<std::thread> threads_;
};

}  // namespace pltest
