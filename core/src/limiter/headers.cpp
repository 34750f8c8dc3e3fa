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
  std::vector<Header> out;
  append_rate_limit_headers(d, limits, header_template(limits, base), out);
  return out;
}

HeaderTemplate header_template(const std::vector<LimitParams>& limits, std::string_view base) {
  HeaderTemplate t;
  t.base = std::string(base);
  for (const auto& p : limits) {
    t.names.push_back(policy_name(p, limits.size(), base));
    if (!t.policy.empty()) t.policy += ", ";
    t.policy += "\"" + t.names.back() + "\";q=" + std::to_string(p.capacity()) +
                ";w=" + std::to_string(std::max<int64_t>(1, ceil_seconds(p.window_ms)));
  }
  return t;
}

void append_rate_limit_headers(const Decision& d, const std::vector<LimitParams>& limits, const HeaderTemplate& t,
                               std::vector<Header>& out) {
  // The deciding limit: the first whose capacity (GCRA: the burst) or count
  // is the decision's limit.
  size_t decider = limits.size();
  for (size_t i = 0; i < limits.size() && decider == limits.size(); ++i)
    if (limits[i].capacity() == d.limit) decider = i;
  for (size_t i = 0; i < limits.size() && decider == limits.size(); ++i)
    if (limits[i].limit == d.limit) decider = i;

  // The decision's reset is for the whole key (every limit full again); the
  // headers speak of the deciding limit, which is full again at most one of
  // its own periods later (GCRA: its burst's worth of intervals).
  int64_t reset_ms = d.reset_after_ms;
  if (decider < limits.size() && limits[decider].limit > 0) {
    const LimitParams& p = limits[decider];
    const int64_t own = p.window_ms / p.limit * p.capacity() + p.window_ms % p.limit * p.capacity() / p.limit;
    reset_ms = std::min(reset_ms, std::max<int64_t>(own, p.window_ms));
  }
  const int64_t remaining = std::max<int64_t>(0, d.remaining);
  const int64_t reset = ceil_seconds(reset_ms);
  out.reserve(out.size() + 7);
  if (!d.allowed) out.push_back({"Retry-After", std::to_string(std::max<int64_t>(1, ceil_seconds(d.retry_after_ms)))});
  out.push_back({"RateLimit-Limit", std::to_string(d.limit)});
  out.push_back({"RateLimit-Remaining", std::to_string(remaining)});
  out.push_back({"RateLimit-Reset", std::to_string(reset)});
  const std::string& name = decider < limits.size() ? t.names[decider] : t.base;
  if (decider < limits.size()) out.push_back({"RateLimit-Policy", t.policy});
  std::string live;
  live.reserve(name.size() + 32);
  live += '"';
  live += name;
  live += "\";r=";
  live += std::to_string(remaining);
  live += ";t=";
  live += std::to_string(reset);
  out.push_back({"RateLimit", std::move(live)});
}

std::string format_headers(const std::vector<Header>& headers) {
  std::string out;
  for (const auto& h : headers) out += h.name + ": " + h.value + "\n";
  return out;
}

}  // namespace polylimit
