// metrics.cpp - relaxed atomics: counters need no ordering between them.
#include "polylimit/metrics.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "polylimit/errors.h"

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
  s.leased_units = leased_units_.load(kRelaxed);
  s.refunded_units = refunded_units_.load(kRelaxed);
  s.stranded_units = stranded_units_.load(kRelaxed);
  return s;
}

namespace {

// One metric family: HELP and TYPE once, then a sample per client.
struct Family {
  const char* name;
  const char* type;
  const char* help;
  uint64_t Stats::*field;
};

const Family kFamilies[] = {
    {"checks_total", "counter", "Checks decided or failed.", &Stats::checks},
    {"admitted_total", "counter", "Checks admitted.", &Stats::admitted},
    {"denied_total", "counter", "Checks denied.", &Stats::denied},
    {"errors_total", "counter", "Checks that returned an error.", &Stats::errors},
    {"round_trips_total", "counter", "Round trips to Redis.", &Stats::round_trips},
    {"noscript_reloads_total", "counter", "Script reloads after NOSCRIPT.", &Stats::noscript_reloads},
    {"script_calls_total", "counter", "Script calls sent to Redis (a coalesced call counts once).",
     &Stats::script_calls},
    {"coalesced_total", "counter", "Checks decided in one script call with other checks of their key.",
     &Stats::coalesced},
    {"cache_hits_total", "counter", "Checks answered by the local deny cache.", &Stats::cache_hits},
    {"degraded_total", "counter", "Checks answered by the failure policy.", &Stats::degraded},
    {"near_limit_total", "counter", "Admitted checks with less than 10% of the limit remaining.", &Stats::near_limit},
    {"connect_attempts_total", "counter",
     "Connects tried to Redis data nodes (made or failed); bounded by the reconnect backoff.",
     &Stats::connect_attempts},
    {"leased_units_total", "counter", "Units taken from Redis by leases.", &Stats::leased_units},
    {"refunded_units_total", "counter", "Unused leased units given back to Redis.", &Stats::refunded_units},
    {"stranded_units_total", "counter",
     "Unused leased units not given back (a failed refund, or freed by Redis with the window).",
     &Stats::stranded_units},
    {"evicting_nodes", "gauge", "Redis nodes whose maxmemory policy can evict limiter keys (over-admission risk).",
     &Stats::evicting_nodes},
};

// `{client="name"` (the caller closes it or adds more labels), or "" for an
// unnamed client. Names are validated (validate_client_name): no escaping.
std::string open_labels(const std::string& name) { return name.empty() ? "" : "{client=\"" + name + "\""; }

std::string labels(const std::string& name) { return name.empty() ? "" : open_labels(name) + "}"; }

}  // namespace

void validate_client_name(const std::string& name) {
  if (name.size() > 128) throw_invalid("name is " + std::to_string(name.size()) + " bytes long; at most 128");
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':' || c == '/';
    if (!ok)
      throw_invalid("name '" + name + "': only letters, digits and _ - . : / may appear (it becomes a metrics label)");
  }
}

std::string to_prometheus(const Stats& stats, const std::string& name) {
  return to_prometheus(std::vector<std::pair<std::string, Stats>>{{name, stats}});
}

std::string to_prometheus(const std::vector<std::pair<std::string, Stats>>& clients) {
  if (clients.size() > 1) {
    for (size_t i = 0; i < clients.size(); ++i) {
      if (clients[i].first.empty())
        throw_invalid("clients[" + std::to_string(i) + "] has no name; several clients on one page need a name each");
      for (size_t j = 0; j < i; ++j)
        if (clients[j].first == clients[i].first)
          throw_invalid("clients[" + std::to_string(i) + "] and clients[" + std::to_string(j) + "] are both named '" +
                        clients[i].first + "'");
    }
  }
  std::string out;
  for (const Family& f : kFamilies) {
    out +=
        std::string("# HELP polylimit_") + f.name + " " + f.help + "\n# TYPE polylimit_" + f.name + " " + f.type + "\n";
    for (const auto& [name, s] : clients)
      out += std::string("polylimit_") + f.name + labels(name) + " " + std::to_string(s.*f.field) + "\n";
  }
  out +=
      "# HELP polylimit_check_latency_seconds Latency of a check.\n# TYPE polylimit_check_latency_seconds histogram\n";
  char buf[64];
  for (const auto& [name, s] : clients) {
    const std::string open = name.empty() ? "{" : open_labels(name) + ",";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kLatencyBuckets; ++i) {
      cumulative += s.latency_buckets[i];
      if (i + 1 < kLatencyBuckets)
        std::snprintf(buf, sizeof buf, "%g", static_cast<double>(kLatencyBoundsUs[i]) / 1e6);
      else
        std::snprintf(buf, sizeof buf, "+Inf");
      out +=
          "polylimit_check_latency_seconds_bucket" + open + "le=\"" + buf + "\"} " + std::to_string(cumulative) + "\n";
    }
    std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(s.latency_sum_us) / 1e6);
    out += "polylimit_check_latency_seconds_sum" + labels(name) + " " + buf + "\n";
    out += "polylimit_check_latency_seconds_count" + labels(name) + " " + std::to_string(s.latency_count) + "\n";
  }
  return out;
}

}  // namespace polylimit
