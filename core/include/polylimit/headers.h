// headers.h - the HTTP rate-limit response headers for a decision, computed
// once here so that every language's middleware sends identical headers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "polylimit/backend.h"
#include "polylimit/decision.h"

namespace polylimit {

struct Header {
  std::string name;
  std::string value;
};

// The headers for decision `d` of a limiter whose limits are `limits`:
//   Retry-After          whole seconds, rounded up (at least 1); on a denial only
//   RateLimit-Limit      the limit that decided
//   RateLimit-Remaining  units left (never negative)
//   RateLimit-Reset      whole seconds until the deciding limit is full again
//                        (the key's reset, capped at that limit's own period:
//                        with several limits the key's reset is the longest's)
//   RateLimit-Policy     every limit as `"name";q=<limit>;w=<window seconds>`
//   RateLimit            the deciding limit as `"name";r=<remaining>;t=<reset>`
// The last two are the IETF httpapi draft's structured fields; the first
// four are what most clients read today. A decision whose limit is none of
// `limits` (check_limit) gets no RateLimit-Policy and the name "default".
std::vector<Header> rate_limit_headers(const Decision& d, const std::vector<LimitParams>& limits);
// As above, with the policy named `name` (an HTTP policy's rule) instead of
// "default": with several limits each is "<name>-<limit>-per-<window>".
std::vector<Header> rate_limit_headers(const Decision& d, const std::vector<LimitParams>& limits,
                                       std::string_view name);

// The parts of the headers that depend only on the limits and the name:
// each limit's policy name and the RateLimit-Policy value. A caller that
// answers many decisions of the same limits (the HTTP policy's rules) makes
// them once.
struct HeaderTemplate {
  std::vector<std::string> names;  // per limit
  std::string policy;              // RateLimit-Policy; empty with no limits
  std::string base;                // the name of a decision no limit matches
};
HeaderTemplate header_template(const std::vector<LimitParams>& limits, std::string_view name);
// rate_limit_headers(d, limits, name), appended to `out`, from the template
// that header_template(limits, name) made.
void append_rate_limit_headers(const Decision& d, const std::vector<LimitParams>& limits, const HeaderTemplate& t,
                               std::vector<Header>& out);

// "Name: value\n" per header, in the order above.
std::string format_headers(const std::vector<Header>& headers);

}  // namespace polylimit
