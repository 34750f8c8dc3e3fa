// bench_algorithms - prints two tables against a redis-server it starts:
//  (a) Redis memory per key (MEMORY USAGE) for each algorithm, key filled to
//      the limit, at limits 10, 100 and 1000;
//  (b) round trips and admissions under a flood of one hot key, with and
//      without the local deny cache.
// A program that prints, not a test: no timed assertions.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "polylimit/limiter.h"
#include "redis_server.h"

using namespace polylimit;

namespace {

const Algorithm kAlgorithms[] = {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow,
                                 Algorithm::kGcra};

void memory_table(pltest::RedisServer& server) {
  std::printf("(a) Redis memory per key (MEMORY USAGE, bytes), key filled to the limit, window 1 h\n\n");
  std::printf("| algorithm       | limit 10 | limit 100 | limit 1000 |\n");
  std::printf("|-----------------|---------:|----------:|-----------:|\n");
  for (Algorithm alg : kAlgorithms) {
    std::printf("| %-15s |", algorithm_name(alg));
    for (int64_t limit : {10, 100, 1000}) {
      LimiterOptions o;
      o.limit = {alg, limit, 3600 * 1000};
      o.prefix = "mem";
      Limiter l(Client::open(server.url()), o);
      std::string key = "user-" + std::to_string(limit);
      for (int64_t i = 0; i < limit; ++i) l.check(key);  // one unit per call, as traffic arrives
      long long bytes = server.integer({"MEMORY", "USAGE", l.storage_key(key), "SAMPLES", "0"});
      std::printf(limit == 10 ? " %8lld |" : limit == 100 ? " %9lld |" : " %10lld |", bytes);
    }
    std::printf("\n");
  }
  std::printf("\n");
}

void flood_table(pltest::RedisServer& server) {
  const int kThreads = 4;
  const auto kDuration = std::chrono::seconds(2);
  std::printf("(b) flood: %d threads hammer one key for %lld s, limit 20 per 500 ms\n\n", kThreads,
              static_cast<long long>(kDuration.count()));
  std::printf("| algorithm       | deny cache | checks  | admitted | Redis round trips | cache hits |\n");
  std::printf("|-----------------|------------|--------:|---------:|------------------:|-----------:|\n");
  for (Algorithm alg : kAlgorithms) {
    for (size_t cache : {size_t{0}, size_t{1000}}) {
      ClientOptions co;
      co.pool.size = kThreads;
      auto client = Client::open(server.url(), co);
      LimiterOptions o;
      o.limit = {alg, 20, 500};
      o.prefix = std::string("flood-") + algorithm_name(alg) + (cache ? "-cached" : "-plain");
      o.deny_cache_size = cache;
      Limiter l(client, o);
      std::atomic<bool> stop{false};
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
          while (!stop.load(std::memory_order_relaxed)) {
            l.check("hot");
            // A flood, not a spin: ~100x the limit even with the cache on.
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          }
        });
      std::this_thread::sleep_for(kDuration);
      stop = true;
      for (auto& t : threads) t.join();
      Stats s = client->stats();
      std::printf("| %-15s | %-10s | %7llu | %8llu | %17llu | %10llu |\n", algorithm_name(alg), cache ? "on" : "off",
                  static_cast<unsigned long long>(s.checks), static_cast<unsigned long long>(s.admitted),
                  static_cast<unsigned long long>(s.round_trips), static_cast<unsigned long long>(s.cache_hits));
    }
  }
  std::printf("\n");
}

}  // namespace

int main() {
  pltest::RedisServer server;
  memory_table(server);
  flood_table(server);
  return 0;
}
