// breaker.h - a circuit breaker: after `failures` consecutive outages, calls
// fail fast for `cooldown` instead of each waiting for a timeout; then one
// probe goes through (half-open): success closes it, failure re-opens it.
// Time is the client's clock (clock.h): open at now < opened + cooldown,
// half-open from opened + cooldown on.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include "util/clock.h"

namespace polylimit {

class Breaker {
 public:
  Breaker(int failures, std::chrono::milliseconds cooldown,
          std::shared_ptr<const MonotonicClock> clock = MonotonicClock::real())
      : clock_(std::move(clock)), threshold_(failures), cooldown_(cooldown) {}

  // May this call go to the server? False while open (and, half-open, while
  // the probe is out).
  bool allow() {
    std::lock_guard<std::mutex> lock(mu_);
    switch (state_) {
      case State::kClosed: return true;
      case State::kOpen:
        if (clock_->now() < open_until_) return false;
        state_ = State::kHalfOpen;  // this caller is the probe
        return true;
      case State::kHalfOpen: return false;
    }
    return true;
  }
  // The server answered (even with an error reply): it is up.
  void success() {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = State::kClosed;
    failures_ = 0;
  }
  // An outage (timeout, refused, broken connection).
  void failure() {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kHalfOpen || ++failures_ >= threshold_) {
      state_ = State::kOpen;
      open_until_ = clock_->now() + cooldown_;
      failures_ = 0;
    }
  }
  bool open() {
    std::lock_guard<std::mutex> lock(mu_);
    return state_ != State::kClosed;
  }
  std::chrono::milliseconds cooldown() const { return cooldown_; }

 private:
  enum class State { kClosed, kOpen, kHalfOpen };
  std::mutex mu_;
  const std::shared_ptr<const MonotonicClock> clock_;
  const int threshold_;
  const std::chrono::milliseconds cooldown_;
  State state_ = State::kClosed;
  int failures_ = 0;
  MonotonicClock::time_point open_until_;
};

}  // namespace polylimit
