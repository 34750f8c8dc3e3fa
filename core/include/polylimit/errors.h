// errors.h - the polylimit::Error hierarchy.
//
// The core reports every failure by throwing polylimit::Error with a code. The
// C ABI turns the code into an POLYLIMIT_E* status; bindings map it to their own
// idiom. Each code says whether a retry can help.
#pragma once

#include <stdexcept>
#include <string>

#include "polylimit/vocabulary.h"

namespace polylimit {

// ErrorCode (each value is the C ABI's status), the status table and the
// option bounds are generated from capi/vocabulary/vocabulary.json.
const StatusInfo& status_info(ErrorCode code) noexcept;
// The code's short text, e.g. "timed out".
const char* error_code_name(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, int sys_errno = 0)
      : std::runtime_error(std::string()), message_(message), code_(code), sys_errno_(sys_errno) {}
  const char* what() const noexcept override { return message_.c_str(); }
  ErrorCode code() const noexcept { return code_; }
  int sys_errno() const noexcept { return sys_errno_; }
  // True when the call failed after its command (or pipeline) had started to
  // go out: the server may have run it, so it may have consumed units (a
  // timeout waiting for the reply, a connection lost after the send, a reply
  // that could not be read). False for failures before the send and for
  // error replies, which say the script did not run (docs/error-model.md).
  bool outcome_unknown() const noexcept { return outcome_unknown_; }
  void set_outcome_unknown(bool unknown) noexcept { outcome_unknown_ = unknown; }

 private:
  // The message is the Error's own, copied with it: std::runtime_error's
  // copies share one reference-counted string, so an Error copied to
  // another thread (a coalesced call's failure, delivered to each waiter)
  // would free and read one buffer from two threads, through a count that
  // ThreadSanitizer cannot see.
  std::string message_;
  ErrorCode code_;
  int sys_errno_;
  bool outcome_unknown_ = false;
};

[[noreturn]] inline void throw_invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// Throws kInvalidArgument "<name> = <value> is out of range <min>..<max>"
// unless bound.min <= value <= bound.max: the one message for every bound, in
// every language.
void check_bound(const Bound& bound, long long value);

// A retry later may succeed (timeouts, refused or broken connections).
bool retryable(ErrorCode code) noexcept;
// The server did not answer (as opposed to answering no): the failure policy
// and the circuit breaker apply.
bool is_outage(ErrorCode code) noexcept;

}  // namespace polylimit
