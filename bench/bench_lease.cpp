// bench_lease - checks/s of one hot key from 8 threads of one process, with
// leases (LimiterOptions::lease_units) and without, allow and deny paths,
// every algorithm, against a redis-server it starts. Interleaved
// repetitions; median (min..max). A program that prints, not a test.
//   bench_lease [repetitions=5] [seconds per measurement=0.15] [lease_units=1000]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "polylimit/limiter.h"
#include "redis_server.h"

using namespace polylimit;

namespace {

constexpr int kThreads = 8;

struct Row {
  Algorithm alg;
  bool deny;
  bool lease;
  std::vector<double> rates;     // checks/s, one per repetition
  std::vector<double> trips;     // Redis round trips per 1000 checks
  std::vector<double> admitted;  // share of checks admitted, %
};

// One measurement: kThreads threads check "hot" for `seconds`.
void measure(pltest::RedisServer& server, Row& row, double seconds, int64_t lease_units, int rep) {
  ClientOptions co;
  co.pool.size = 2;
  auto client = Client::open(server.url(), co);
  LimiterOptions o;
  // Allow: a limit no run can reach. Deny: a spent key.
  o.limit = row.deny ? LimitParams{row.alg, 1, 3600 * 1000, 0} : LimitParams{row.alg, bounds::kLimit.max, 1000, 0};
  o.prefix = "bl" + std::to_string(rep);
  o.lease_units = row.lease && !row.deny ? lease_units : row.lease ? 1 : 0;
  o.lease_ms = 100;
  Limiter l(client, o);
  l.reset("hot");
  if (row.deny) l.check("hot");
  const Stats before = client->stats();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> total{0}, allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      uint64_t n = 0, a = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        a += l.check("hot").allowed ? 1 : 0;
        ++n;
      }
      total += n;
      allowed += a;
    });
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Stats after = client->stats();
  row.rates.push_back(total.load() / elapsed);
  row.admitted.push_back(100.0 * static_cast<double>(allowed.load()) / total.load());
  row.trips.push_back(1000.0 * static_cast<double>(after.round_trips - before.round_trips) / total.load());
}

std::string summary(std::vector<double> v, const char* fmt) {
  std::sort(v.begin(), v.end());
  char buf[96];
  std::snprintf(buf, sizeof buf, fmt, v[v.size() / 2], v.front(), v.back());
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.15;
  const int64_t lease_units = argc > 3 ? std::atoll(argv[3]) : 1000;
  pltest::RedisServer server;
  std::vector<Row> rows;
  for (Algorithm alg : {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow, Algorithm::kGcra})
    for (bool deny : {false, true})
      for (bool lease : {false, true}) rows.push_back({alg, deny, lease, {}, {}, {}});
  for (int rep = 0; rep < reps; ++rep)
    for (Row& row : rows) measure(server, row, seconds, lease_units, rep);

  std::printf("bench_lease: %d threads, one key, one client (pool 2), %d repetitions of %.2f s, interleaved\n",
              kThreads, reps, seconds);
  std::printf("allow: limit %lld per 1 s, lease_units %lld, lease_ms 100; deny: a spent key (limit 1 per hour)\n\n",
              static_cast<long long>(bounds::kLimit.max), static_cast<long long>(lease_units));
  std::printf(
      "| algorithm       | path  | leases | checks/s median (min..max)       | admitted %% | round trips / 1000 checks |\n");
  std::printf(
      "|-----------------|-------|--------|----------------------------------|-----------:|--------------------------:|\n");
  for (const Row& r : rows)
    std::printf("| %-15s | %-5s | %-6s | %-32s | %10s | %25s |\n", algorithm_name(r.alg), r.deny ? "deny" : "allow",
                r.lease ? "on" : "off", summary(r.rates, "%.0f (%.0f..%.0f)").c_str(),
                summary(r.admitted, "%.1f").c_str(), summary(r.trips, "%.2f").c_str());
  std::printf("\nratio leases on / off (medians):\n");
  for (size_t i = 0; i + 1 < rows.size(); i += 2) {
    std::vector<double> a = rows[i + 1].rates, b = rows[i].rates;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::printf("  %-15s %-5s %.1fx\n", algorithm_name(rows[i].alg), rows[i].deny ? "deny" : "allow",
                a[a.size() / 2] / b[b.size() / 2]);
  }
  return 0;
}
