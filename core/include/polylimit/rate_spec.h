// rate_spec.h - limits written as text: "100/minute", "10/s", "5 per 2 seconds",
// several joined with ';' ("10/s; 1000/hour"), GCRA bursts as "10/s burst 20".
#pragma once

#include <string_view>
#include <vector>

#include "polylimit/backend.h"

namespace polylimit {

// Parses a rate spec into limits of `algorithm`, each validated.
// Grammar (case-insensitive, spaces allowed around every token):
//   spec  := limit (';' limit)*
//   limit := COUNT ('/' | 'per') [N] UNIT ['burst' COUNT]
//   UNIT  := ms | millisecond(s) | s | sec | second(s) | m | min | minute(s)
//          | h | hr | hour(s) | d | day(s)
// Throws Error(kInvalidArgument) quoting the bad part and saying what is wrong.
std::vector<LimitParams> parse_rate_spec(std::string_view spec, Algorithm algorithm = Algorithm::kSlidingLog);

}  // namespace polylimit
