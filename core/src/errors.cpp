// errors.cpp - names of error codes and algorithms.
#include "polylimit/backend.h"
#include "polylimit/errors.h"

namespace polylimit {

const char* error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kAuth: return "authentication failed";
    case ErrorCode::kPermission: return "permission denied";
    case ErrorCode::kScript: return "script error";
    case ErrorCode::kPoolExhausted: return "pool exhausted";
    case ErrorCode::kNoMemory: return "out of memory";
    case ErrorCode::kServer: return "server error";
    case ErrorCode::kClosed: return "closed";
  }
  return "unknown";
}

const char* algorithm_name(Algorithm algorithm) noexcept {
  switch (algorithm) {
    case Algorithm::kSlidingLog: return "sliding_log";
    case Algorithm::kSlidingCounter: return "sliding_counter";
    case Algorithm::kFixedWindow: return "fixed_window";
    case Algorithm::kGcra: return "gcra";
  }
  return "unknown";
}

}  // namespace polylimit
