// metrics.cpp - relaxed atomics: counters need no ordering between them.
#include "polylimit/metrics.h"

#include <algorithm>
#include <cstdio>

namespace polylimit {
namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}

void Metrics::latency(uint64_t us) {
  size_t i = std::lower_bound(kLatencyBoundsUs.begin(), kLatencyBoundsUs.end(), us) - kLatencyBoundsUs.begin();
  buckets_[i].fetch_add(1, kRelaxed);
  latency_count_.fetch_add(1, kRelaxed);
  latency_sum_us_.fetch_add(us, kRelaxed);
}

void Metrics::decision(const Decision& d, uint64_t latency_us) {
  checks_.fetch_add(1, kRelaxed);
  (d.allowed ? admitted_ : denied_).fetch_add(1, kRelaxed);
  if (d.cached) cache_hits_.fetch_add(1, kRelaxed);
  if (d.degraded) degraded_.fetch_add(1, kRelaxed);
  if (d.allowed && d.remaining * 10 < d.limit) near_limit_.fetch_add(1, kRelaxed);
  latency(latency_us);
}

void Metrics::error(uint64_t latency_us) {
  checks_.fetch_add(1, kRelaxed);
  errors_.fetch_add(1, kRelaxed);
  latency(latency_us);
}

Stats Metrics::snapshot() const {
  Stats s;
  s.checks = checks_.load(kRelaxed);
  s.admitted = admitted_.load(kRelaxed);
  s.denied = denied_.load(kRelaxed);
  s.errors = errors_.load(kRelaxed);
  s.cache_hits = cache_hits_.load(kRelaxed);
  s.degraded = degraded_.load(kRelaxed);
  s.near_limit = near_limit_.load(kRelaxed);
  s.latency_count = latency_count_.load(kRelaxed);
  s.latency_sum_us = latency_sum_us_.load(kRelaxed);
  for (size_t i = 0; i < kLatencyBuckets; ++i) s.latency_buckets[i] = buckets_[i].load(kRelaxed);
  return s;
}

std::string to_prometheus(const Stats& s) {
  std::string out;
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP polylimit_") + name + " " + help + "\n# TYPE polylimit_" + name + " counter\npolylimit_" +
           name + " " + std::to_string(v) + "\n";
  };
  counter("checks_total", "Checks decided or failed.", s.checks);
  counter("admitted_total", "Checks admitted.", s.admitted);
  counter("denied_total", "Checks denied.", s.denied);
  counter("errors_total", "Checks that returned an error.", s.errors);
  counter("round_trips_total", "Round trips to Redis.", s.round_trips);
  counter("noscript_reloads_total", "Script reloads after NOSCRIPT.", s.noscript_reloads);
  counter("cache_hits_total", "Checks answered by the local deny cache.", s.cache_hits);
  counter("degraded_total", "Checks answered by the failure policy.", s.degraded);
  counter("near_limit_total", "Admitted checks with less than 10% of the limit remaining.", s.near_limit);
  counter("connect_attempts_total", "Connects tried to Redis data nodes (made or failed); bounded by the reconnect backoff.",
          s.connect_attempts);
  out += "# HELP polylimit_evicting_nodes Redis nodes whose maxmemory policy can evict limiter keys (over-admission risk).\n"
         "# TYPE polylimit_evicting_nodes gauge\npolylimit_evicting_nodes " + std::to_string(s.evicting_nodes) + "\n";
  out += "# HELP polylimit_check_latency_seconds Latency of a check.\n# TYPE polylimit_check_latency_seconds histogram\n";
  uint64_t cumulative = 0;
  char buf[64];
  for (size_t i = 0; i < kLatencyBuckets; ++i) {
    cumulative += s.latency_buckets[i];
    if (i + 1 < kLatencyBuckets)
      std::snprintf(buf, sizeof buf, "%g", static_cast<double>(kLatencyBoundsUs[i]) / 1e6);
    else
      std::snprintf(buf, sizeof buf, "+Inf");
    out += std::string("polylimit_check_latency_seconds_bucket{le=\"") + buf + "\"} " + std::to_string(cumulative) + "\n";
  }
  std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(s.latency_sum_us) / 1e6);
  out += std::string("polylimit_check_latency_seconds_sum ") + buf + "\n";
  out += "polylimit_check_latency_seconds_count " + std::to_string(s.latency_count) + "\n";
  return out;
}

}  // namespace polylimit
