// cluster_bench - decisions per second through a Redis Cluster, per master,
// next to one standalone server under the same load. A program that prints a
// table (no assertions); run it by hand:
//   build/tests/cluster_bench [threads=8] [seconds=3]
// Everything (servers and client threads) shares this machine's cores, so the
// numbers are a floor for a real deployment, where each master has its own.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "polylimit/client.h"
#include "polylimit/limiter.h"
#include "redis_cluster.h"

namespace {

// Checks random keys from `threads` threads for `seconds`; returns checks/s.
double run(const std::string& url, int threads, int seconds) {
  polylimit::ClientOptions co;
  co.pool.size = threads;
  auto client = polylimit::Client::open(url, co);
  polylimit::LimiterOptions lo;
  lo.limit.limit = 100;
  lo.limit.window_ms = 60000;
  lo.prefix = "bench";
  polylimit::Limiter l(client, lo);
  std::atomic<bool> stop{false};
  std::atomic<long> done{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      unsigned seed = static_cast<unsigned>(t) * 7919u + 1;
      long n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        seed = seed * 1103515245u + 12345u;
        l.check("user-" + std::to_string(seed % 100000));
        ++n;
      }
      done += n;
    });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : pool) t.join();
  return static_cast<double>(done.load()) / seconds;
}

long long evalsha_calls(pltest::RedisServer& s) {
  std::string stats = s.command({"INFO", "commandstats"});
  std::string calls = pltest::info_field(stats, "cmdstat_evalsha");
  return calls.empty() ? 0 : std::atoll(calls.c_str() + calls.find('=') + 1);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  int seconds = argc > 2 ? std::atoi(argv[2]) : 3;
  std::printf("%d client threads, %d s per run, sliding log, 100 000 keys\n\n", threads, seconds);
  std::printf("%-34s %12s\n", "deployment", "checks/s");
  {
    pltest::RedisServer one;
    std::printf("%-34s %12.0f\n", "standalone (1 server)", run(one.url(), threads, seconds));
    pltest::RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(one.port())});
    std::printf("%-34s %12.0f\n", "standalone + 1 replica", run(one.url(), threads, seconds));
  }
  {
    pltest::RedisCluster bare(3, 0);
    std::printf("%-34s %12.0f\n", "cluster (3 masters, no replicas)", run(bare.url(), threads, seconds));
  }
  pltest::RedisCluster cluster(3, 1);
  std::vector<long long> before;
  std::vector<size_t> masters = cluster.masters();
  for (size_t m : masters) before.push_back(evalsha_calls(cluster.node(m)));
  double total = run(cluster.url(), threads, seconds);
  std::printf("%-34s %12.0f\n", "cluster (3 masters + 3 replicas)", total);
  for (size_t i = 0; i < masters.size(); ++i) {
    long long n = evalsha_calls(cluster.node(masters[i])) - before[i];
    std::printf("  master :%-24d %12.0f\n", cluster.node(masters[i]).port(), static_cast<double>(n) / seconds);
  }
  return 0;
}
