// errors.h - the polylimit::Error hierarchy.
//
// The core reports every failure by throwing polylimit::Error with a code. The
// C ABI turns the code into an POLYLIMIT_E* status; bindings map it to their own
// idiom. Each code says whether a retry can help.
#pragma once

#include <stdexcept>
#include <string>

namespace polylimit {

enum class ErrorCode {
  kInternal,        // a bug or an impossible state; do not retry
  kInvalidArgument, // the call is wrong; do not retry
  kUnavailable,     // no connection could be made or it broke; retry later
  kTimeout,         // the server did not answer in time; retry later
  kAuth,            // AUTH failed; fix the credentials
  kPermission,      // ACL NOPERM; fix the ACL
  kScript,          // the Lua script failed inside Redis; a bug or a bad key type
  kPoolExhausted,   // every pooled connection stayed busy; retry later
  kNoMemory,        // OOM here or in Redis
  kServer,          // an unexpected error reply from the server
  kClosed,          // the handle was closed
};

const char* error_code_name(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, int sys_errno = 0)
      : std::runtime_error(message), code_(code), sys_errno_(sys_errno) {}
  ErrorCode code() const noexcept { return code_; }
  int sys_errno() const noexcept { return sys_errno_; }

 private:
  ErrorCode code_;
  int sys_errno_;
};

[[noreturn]] inline void throw_invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

}  // namespace polylimit
