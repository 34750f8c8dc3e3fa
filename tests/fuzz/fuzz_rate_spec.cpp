// fuzz_rate_spec.cpp - polylimit::parse_rate_spec.
//
// The first byte picks the algorithm, the rest is the spec. The parser either
// returns 1..16 limits that each pass validate(), or throws
// Error(kInvalidArgument) with a message that starts with "rate spec".
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "polylimit/rate_spec.h"

using polylimit::Algorithm;
using polylimit::Error;
using polylimit::ErrorCode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 4096) return 0;
  static const Algorithm kAlgorithms[] = {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow,
                                          Algorithm::kGcra};
  const Algorithm algorithm = kAlgorithms[data[0] % 4];
  const std::string spec(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const auto limits = polylimit::parse_rate_spec(std::string_view(spec), algorithm);
    FUZZ_CHECK(!limits.empty() && limits.size() <= polylimit::kMaxLimitsPerLimiter, "spec '%s': %zu limits",
               spec.c_str(), limits.size());
    for (const auto& lp : limits) {
      FUZZ_CHECK(lp.algorithm == algorithm, "spec '%s': algorithm changed", spec.c_str());
      FUZZ_CHECK(lp.limit >= 1 && lp.limit <= polylimit::kMaxLimit, "spec '%s': limit %lld", spec.c_str(),
                 static_cast<long long>(lp.limit));
      FUZZ_CHECK(lp.window_ms >= 1 && lp.window_ms <= polylimit::kMaxWindowMs, "spec '%s': window %lld ms",
                 spec.c_str(), static_cast<long long>(lp.window_ms));
      FUZZ_CHECK(lp.burst == 0 || algorithm == Algorithm::kGcra, "spec '%s': burst on a non-GCRA limit", spec.c_str());
      FUZZ_CHECK(lp.capacity() >= 1 && lp.interval_us() >= 1, "spec '%s': capacity or interval < 1", spec.c_str());
      try {
        polylimit::validate(lp);
      } catch (const Error& e) {
        FUZZ_CHECK(false, "spec '%s' parsed into a limit that validate() refuses: %s", spec.c_str(), e.what());
      }
    }
  } catch (const Error& e) {
    const std::string message = e.what();
    FUZZ_CHECK(e.code() == ErrorCode::kInvalidArgument, "spec '%s': code %d: %s", spec.c_str(),
               static_cast<int>(e.code()), message.c_str());
    FUZZ_CHECK(message.rfind("rate spec", 0) == 0, "spec '%s': message '%s'", spec.c_str(), message.c_str());
  }
  return 0;
}
