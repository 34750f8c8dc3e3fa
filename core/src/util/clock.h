// clock.h - the one monotonic clock of a client's time-based decisions.
//
// The circuit breaker (open until, half-open), the deny cache (expiry), the
// pool's reconnect backoff (next connect allowed at) and Limiter::acquire
// (its deadline and its waits between tries) read time only from the
// client's MonotonicClock (ClientOptions::clock), so a test steps a
// ManualClock instead of sleeping. Socket deadlines (connection.cpp, mux.cpp)
// and latency metrics stay on std::chrono::steady_clock: they bound and
// measure real system calls. A client without a clock gets the real one
// (MonotonicClock::real()); there is no process-wide mutable clock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace polylimit {

class MonotonicClock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  virtual ~MonotonicClock() = default;
  // Never goes backwards.
  virtual time_point now() const = 0;
  // Blocks the calling thread until now() >= t (returns at once when it is).
  virtual void sleep_until(time_point t) const = 0;

  // The real clock (steady_clock); stateless, shared by every client.
  static const std::shared_ptr<const MonotonicClock>& real();
};

namespace detail {

class RealClock final : public MonotonicClock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  void sleep_until(time_point t) const override { std::this_thread::sleep_until(t); }
};

}  // namespace detail

inline const std::shared_ptr<const MonotonicClock>& MonotonicClock::real() {
  static const std::shared_ptr<const MonotonicClock> clock = std::make_shared<detail::RealClock>();
  return clock;
}

// For tests: time moves only when advance() is called. sleep_until() blocks
// until another thread has advanced the clock far enough. It starts at an
// arbitrary fixed point, unrelated to steady_clock::now().
class ManualClock final : public MonotonicClock {
 public:
  explicit ManualClock(time_point start = time_point(std::chrono::hours(1))) : now_(start) {}

  time_point now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void sleep_until(time_point t) const override {
    std::unique_lock<std::mutex> lock(mu_);
    if (now_ >= t) return;
    ++sleepers_;
    ++sleeps_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return now_ >= t; });
    --sleepers_;
    changed_.notify_all();
  }

  // Moves the clock forward by d (>= 0) and wakes the sleepers it passes.
  void advance(duration d) {
    if (d < duration::zero()) throw std::invalid_argument("ManualClock::advance: negative step");
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
    changed_.notify_all();
  }
  // Threads blocked in sleep_until() now.
  size_t sleepers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sleepers_;
  }
  // Calls of sleep_until() that blocked, since the clock was made.
  size_t sleeps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_;
  }
  // Waits (in real time, at most `timeout`) until sleeps() >= n: a test's
  // way to know that the code under test is now waiting on this clock.
  bool await_sleeps(size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return sleeps_ >= n; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  mutable size_t sleepers_ = 0;
  mutable size_t sleeps_ = 0;
  time_point now_;
};

}  // namespace polylimit
