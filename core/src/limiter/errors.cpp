// errors.cpp - what the generated status table says about each error code.
#include "polylimit/errors.h"

#include "polylimit/backend.h"

namespace polylimit {

const StatusInfo& status_info(ErrorCode code) noexcept {
  for (const StatusInfo& info : kStatuses)
    if (info.status == static_cast<int>(code)) return info;
  return kStatuses[1];  // POLYLIMIT_ERROR: every ErrorCode is in the table
}

const char* error_code_name(ErrorCode code) noexcept { return status_info(code).text; }
bool retryable(ErrorCode code) noexcept { return status_info(code).retryable; }
bool is_outage(ErrorCode code) noexcept { return status_info(code).outage; }

void check_bound(const Bound& bound, long long value) {
  if (value < bound.min || value > bound.max)
    throw_invalid(std::string(bound.name) + " = " + std::to_string(value) + " is out of range " +
                  std::to_string(bound.min) + ".." + std::to_string(bound.max));
}

const char* algorithm_name(Algorithm algorithm) noexcept {
  const auto i = static_cast<size_t>(algorithm);
  return i < std::size(kAlgorithmNames) ? kAlgorithmNames[i] : "unknown";
}

}  // namespace polylimit
