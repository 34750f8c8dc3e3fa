// headers.cpp - Decision -> HTTP rate-limit headers (see headers.h).
#include "polylimit/headers.h"

#include <algorithm>

namespace polylimit {
namespace {

// Milliseconds to whole seconds, rounded up: a client that waits this long
// is never early. No overflow near INT64_MAX (a caller may pass any decision).
int64_t ceil_seconds(int64_t ms) { return ms <= 0 ? 0 : ms / 1000 + (ms % 1000 != 0); }

// A policy's name: "default" for a single limit, else "<limit>-per-<window>",
// e.g. "100-per-60s" or "10-per-500ms", unique within one limiter's spec.
std::string policy_name(const LimitParams& p, size_t count, std::string_view base) {
  if (count == 1) return std::string(base);
  std::string window =
      p.window_ms % 1000 == 0 ? std::to_string(p.window_ms / 1000) + "s" : std::to_string(p.window_ms) + "ms";
  std::string name = std::to_string(p.limit) + "-per-" + window;
  return base == "default" ? name : std::string(base) + "-" + name;
}

}  // namespace

std::vector<Header> rate_limit_headers(const Decision& d, const std::vector<LimitParams>& limits) {
  return rate_limit_headers(d, limits, "default");
}

std::vector<Header> rate_limit_headers(const Decision& d, const std::vector<LimitParams>& limits,
                                       std::string_view base) {
  // The deciding limit: the first whose capacity (GCRA: the burst) or count
  // is the decision's limit.
  const LimitParams* decider = nullptr;
  for (const auto& p : limits)
    if (p.capacity() == d.limit) {
      decider = &p;
      break;
    }
  if (decider == nullptr)
    for (const auto& p : limits)
      if (p.limit == d.limit) {
        decider = &p;
        break;
      }

  // The decision's reset is for the whole key (every limit full again); the
  // headers speak of the deciding limit, which is full again at most one of
  // its own periods later (GCRA: its burst's worth of intervals).
  int64_t reset_ms = d.reset_after_ms;
  if (decider != nullptr && decider->limit > 0) {
    const int64_t own = decider->window_ms / decider->limit * decider->capacity() +
                        decider->window_ms % decider->limit * decider->capacity() / decider->limit;
    reset_ms = std::min(reset_ms, std::max<int64_t>(own, decider->window_ms));
  }
  const int64_t remaining = std::max<int64_t>(0, d.remaining);
  const int64_t reset = ceil_seconds(reset_ms);
  std::vector<Header> out;
  if (!d.allowed) out.push_back({"Retry-After", std::to_string(std::max<int64_t>(1, ceil_seconds(d.retry_after_ms)))});
  out.push_back({"RateLimit-Limit", std::to_string(d.limit)});
  out.push_back({"RateLimit-Remaining", std::to_string(remaining)});
  out.push_back({"RateLimit-Reset", std::to_string(reset)});

  std::string name(base);
  if (decider != nullptr) {
    name = policy_name(*decider, limits.size(), base);
    std::string policy;
    for (const auto& p : limits) {
      if (!policy.empty()) policy += ", ";
      policy += "\"" + policy_name(p, limits.size(), base) + "\";q=" + std::to_string(p.capacity()) +
                ";w=" + std::to_string(std::max<int64_t>(1, ceil_seconds(p.window_ms)));
    }
    out.push_back({"RateLimit-Policy", policy});
  }
  out.push_back({"RateLimit", "\"" + name + "\";r=" + std::to_string(remaining) + ";t=" + std::to_string(reset)});
  return out;
}

std::string format_headers(const std::vector<Header>& headers) {
  std::string out;
  for (const auto& h : headers) out += h.name + ": " + h.value + "\n";
  return out;
}

}  // namespace polylimit
