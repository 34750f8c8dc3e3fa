// faults_common.h - small helpers shared by the fault matrix and the soak:
// timed calls that record the status they ended in, explicit waits, and the
// process's own resources (fds, threads, RSS) read from /proc/self.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "polylimit/decision.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"

namespace faults {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
inline double ms_since(Clock::time_point t) { return ms_between(t, Clock::now()); }

// Polls `done` every `poll` until it holds (true) or `timeout` passed (false).
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll = std::chrono::milliseconds(10));

// "EUNAVAILABLE" for ErrorCode::kUnavailable ("OK" for 0).
std::string code_name(polylimit::ErrorCode code);

// One call of a limiter: the decision, or the status and message it failed
// with, and how long it took.
struct Call {
  bool ok = false;
  polylimit::Decision decision;
  polylimit::ErrorCode code = polylimit::ErrorCode::kInternal;
  std::string message;
  double ms = 0;
  // "OK admitted", "OK denied", "OK admitted (degraded)", or the status name.
  std::string outcome() const;
};

Call timed(const std::function<polylimit::Decision()>& f);
inline Call check(polylimit::Limiter& l, const std::string& key, int64_t cost = 1) {
  return timed([&] { return l.check(key, cost); });
}

// /proc/self: open descriptors, threads (tasks), resident set size in KiB.
int open_fds();
int thread_count();
long rss_kib();

}  // namespace faults
