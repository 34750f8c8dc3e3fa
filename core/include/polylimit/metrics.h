// metrics.h - per-client counters and a latency histogram, lock-free.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "polylimit/decision.h"
#include "polylimit/vocabulary.h"

namespace polylimit {

// Upper bounds (microseconds) of the latency buckets; the last bucket is +Inf.
constexpr size_t kLatencyBuckets = kLatencyBucketCount;  // from the vocabulary
constexpr std::array<uint64_t, kLatencyBuckets - 1> kLatencyBoundsUs = {
    50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000};

struct Stats {
  uint64_t checks = 0;  // check / check_at / each key of check_many that reached a decision or error
  uint64_t admitted = 0;
  uint64_t denied = 0;
  uint64_t errors = 0;            // checks that ended in an error (after argument validation)
  uint64_t round_trips = 0;       // to Redis (a pipelined batch is one)
  uint64_t noscript_reloads = 0;  // SCRIPT LOADs after NOSCRIPT
  uint64_t evicting_nodes = 0;    // nodes whose maxmemory policy can evict limiter keys (a gauge)
  uint64_t connect_attempts = 0;  // connects tried to data nodes (made or failed)
  uint64_t cache_hits = 0;        // answered by the local deny cache
  uint64_t degraded = 0;          // answered by the failure policy
  uint64_t near_limit = 0;        // admitted with remaining below 10% of the limit
  uint64_t latency_count = 0;
  uint64_t latency_sum_us = 0;
  uint64_t script_calls = 0;  // script calls sent to Redis; a coalesced call counts once
  uint64_t coalesced = 0;     // checks decided in a coalesced call (with others of their key)
  // Leases (LimiterOptions::lease_units; docs/limiter.md, "Leases").
  uint64_t leased_units = 0;    // units taken from Redis by leases
  uint64_t refunded_units = 0;  // unused leased units given back
  uint64_t stranded_units = 0;  // unused leased units not given back (a failed refund, or the
                                // window had already moved); Redis frees them with the window
  std::array<uint64_t, kLatencyBuckets> latency_buckets{};  // per bucket, not cumulative
};

class Metrics {
 public:
  void decision(const Decision& d, uint64_t latency_us);
  void error(uint64_t latency_us);
  void leased(uint64_t units) { leased_units_.fetch_add(units, std::memory_order_relaxed); }
  void refunded(uint64_t units) { refunded_units_.fetch_add(units, std::memory_order_relaxed); }
  void stranded(uint64_t units) { stranded_units_.fetch_add(units, std::memory_order_relaxed); }
  // Counters of this object; round trips and reloads come from the backend.
  Stats snapshot() const;

 private:
  void latency(uint64_t us);
  using Counter = std::atomic<uint64_t>;
  Counter checks_{0}, admitted_{0}, denied_{0}, errors_{0}, cache_hits_{0}, degraded_{0}, near_limit_{0};
  Counter latency_count_{0}, latency_sum_us_{0};
  Counter leased_units_{0}, refunded_units_{0}, stranded_units_{0};
  std::array<Counter, kLatencyBuckets> buckets_{};
};

// Prometheus text exposition format, metric names prefixed "polylimit_";
// a non-empty name labels every sample client="name".
std::string to_prometheus(const Stats& stats, const std::string& name = {});
// Several clients on one page: each metric's HELP and TYPE once, a sample
// per client. With more than one client each needs a distinct, non-empty
// name (else Error kInvalidArgument).
std::string to_prometheus(const std::vector<std::pair<std::string, Stats>>& clients);

// Throws Error(kInvalidArgument) unless name (a client's metrics label) is at
// most 128 bytes of letters, digits and _ - . : /
void validate_client_name(const std::string& name);

}  // namespace polylimit
