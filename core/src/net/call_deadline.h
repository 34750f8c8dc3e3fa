// call_deadline.h - the deadline a call brings to the blocking path.
//
// Every call has one deadline, set when it starts. A non-blocking call that
// a redirection (Cluster MOVED/ASK/TRYAGAIN) or a READONLY replica hands to
// the blocking path on a library thread keeps it: the thread runs the call
// under an InheritedDeadline, and every deadline the blocking path computes
// (the redirection loop's, each command's) is capped by it. Scoped to that
// thread and that call; a thread outside any scope is not affected.
#pragma once

#include <algorithm>
#include <chrono>

namespace polylimit {

class InheritedDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit InheritedDeadline(Clock::time_point deadline) : previous_(current()) { current() = deadline; }
  ~InheritedDeadline() { current() = previous_; }
  InheritedDeadline(const InheritedDeadline&) = delete;
  InheritedDeadline& operator=(const InheritedDeadline&) = delete;

  // `computed`, or the inherited deadline when that comes first.
  static Clock::time_point cap(Clock::time_point computed) {
    const Clock::time_point inherited = current();
    return inherited == Clock::time_point{} ? computed : std::min(computed, inherited);
  }

 private:
  static Clock::time_point& current() {
    static thread_local Clock::time_point deadline{};  // zero: none
    return deadline;
  }
  Clock::time_point previous_;
};

}  // namespace polylimit
