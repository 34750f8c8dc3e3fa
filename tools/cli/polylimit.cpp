// polylimit - command-line front end over the C ABI: check, peek and reset a
// key, print client metrics, and benchmark a deployment.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "polylimit.h"

namespace {

const char* kUsage = R"(usage: polylimit [options] <command> [arguments]

Commands:
  check KEY      admit --cost units for KEY under --spec (consumes them).
                 Exit status: 0 admitted, 1 denied, 2 error.
  peek KEY       what a check of one unit would answer now; consumes nothing.
                 Exit status as for check.
  reset KEY      clear KEY's state: it is back to full capacity.
  stats [KEY..]  peek each KEY, then print this process's client metrics
                 (checks, round trips, latency histogram) in Prometheus format.
  bench          run --threads threads checking random keys (of --keys) for
                 --seconds seconds; print checks/s and latency percentiles.

Options:
  --url URL           redis://[user:pass@]host:port[/db], unix:///path.sock or
                      memory:// (default redis://127.0.0.1:6379)
  --spec SPEC         rate spec, e.g. "100/minute" or "10/s; 1000/hour"
                      (default "10/s"; bench default "1000000/s")
  --algorithm NAME    sliding_log (default), sliding_counter, fixed_window, gcra
  --prefix P          Redis key prefix (default "pl")
  --cost N            units per check (default 1)
  --threads N         bench: threads (default 4)
  --seconds S         bench: duration in seconds (default 5)
  --keys N            bench: distinct keys (default 1000)
  --deny-cache N      local deny cache of N keys (default off)
  --timeout-ms MS     command timeout (default 1000)
  -h, --help          this text
)";

struct Args {
  std::string url = "redis://127.0.0.1:6379";
  std::string spec;
  std::string algorithm = "sliding_log";
  std::string prefix = "pl";
  long long cost = 1;
  int threads = 4;
  double seconds = 5;
  int keys = 1000;
  int deny_cache = 0;
  int timeout_ms = 1000;
  std::string command;
  std::vector<std::string> rest;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "polylimit: %s\n(run 'polylimit --help' for usage)\n", msg.c_str());
  std::exit(2);
}

long long number(const std::string& flag, const char* v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi)
    usage_error(flag + " '" + v + "' is not a number in " + std::to_string(lo) + ".." + std::to_string(hi));
  return n;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error(s + " needs a value");
      return argv[++i];
    };
    if (s == "-h" || s == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (s == "--url") {
      a.url = value();
    } else if (s == "--spec") {
      a.spec = value();
    } else if (s == "--algorithm") {
      a.algorithm = value();
    } else if (s == "--prefix") {
      a.prefix = value();
    } else if (s == "--cost") {
      a.cost = number(s, value(), 1, 1000000);
    } else if (s == "--threads") {
      a.threads = static_cast<int>(number(s, value(), 1, 1024));
    } else if (s == "--seconds") {
      a.seconds = static_cast<double>(number(s, value(), 1, 86400));
    } else if (s == "--keys") {
      a.keys = static_cast<int>(number(s, value(), 1, 100000000));
    } else if (s == "--deny-cache") {
      a.deny_cache = static_cast<int>(number(s, value(), 0, 10000000));
    } else if (s == "--timeout-ms") {
      a.timeout_ms = static_cast<int>(number(s, value(), 1, 3600000));
    } else if (!s.empty() && s[0] == '-') {
      usage_error("unknown option " + s);
    } else if (a.command.empty()) {
      a.command = s;
    } else {
      a.rest.push_back(s);
    }
  }
  if (a.command.empty()) usage_error("no command given");
  return a;
}

int algorithm_of(const std::string& name) {
  if (name == "sliding_log") return POLYLIMIT_ALG_SLIDING_LOG;
  if (name == "sliding_counter") return POLYLIMIT_ALG_SLIDING_COUNTER;
  if (name == "fixed_window") return POLYLIMIT_ALG_FIXED_WINDOW;
  if (name == "gcra") return POLYLIMIT_ALG_GCRA;
  usage_error("unknown --algorithm '" + name + "'");
}

[[noreturn]] void die(const char* what, const polylimit_error& err) {
  std::fprintf(stderr, "polylimit: %s: %s (%s)\n", what, err.message, polylimit_status_name(err.code));
  std::exit(2);
}

void print(const std::string& key, const polylimit_decision& d) {
  std::printf("key=%s allowed=%d limit=%lld remaining=%lld retry_after_ms=%lld reset_after_ms=%lld%s%s\n",
              key.c_str(), d.allowed, static_cast<long long>(d.limit), static_cast<long long>(d.remaining),
              static_cast<long long>(d.retry_after_ms), static_cast<long long>(d.reset_after_ms),
              d.cached ? " cached" : "", d.degraded ? " degraded" : "");
}

int bench(const Args& a, polylimit_limiter* l, polylimit_client* client) {
  std::atomic<bool> stop{false};
  std::vector<std::vector<uint32_t>> latencies(a.threads);  // microseconds
  std::vector<long long> admitted(a.threads), errors(a.threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < a.threads; ++t)
    threads.emplace_back([&, t] {
      uint64_t x = 0x9E3779B97F4A7C15ull * (t + 1);
      polylimit_decision d;
      while (!stop.load(std::memory_order_relaxed)) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::string key = "bench:" + std::to_string(x % static_cast<uint64_t>(a.keys));
        auto t0 = std::chrono::steady_clock::now();
        int rc = polylimit_limiter_check(l, key.data(), key.size(), a.cost, &d, nullptr);
        auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
        latencies[t].push_back(static_cast<uint32_t>(std::min<long long>(us.count(), UINT32_MAX)));
        if (rc != POLYLIMIT_OK)
          ++errors[t];
        else if (d.allowed)
          ++admitted[t];
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds));
  stop = true;
  for (auto& th : threads) th.join();
  std::vector<uint32_t> all;
  long long ok = 0, err = 0;
  for (int t = 0; t < a.threads; ++t) {
    all.insert(all.end(), latencies[t].begin(), latencies[t].end());
    ok += admitted[t];
    err += errors[t];
  }
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    if (all.empty()) return 0u;
    return all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  polylimit_stats s = POLYLIMIT_STATS_INIT;
  polylimit_client_stats(client, &s, nullptr);
  std::printf("url=%s spec=\"%s\" algorithm=%s threads=%d keys=%d seconds=%.0f\n", a.url.c_str(), a.spec.c_str(),
              a.algorithm.c_str(), a.threads, a.keys, a.seconds);
  std::printf("checks      %zu (%.0f checks/s)\n", all.size(), all.size() / a.seconds);
  std::printf("admitted    %lld   errors %lld   round trips %llu\n", ok, err,
              static_cast<unsigned long long>(s.round_trips));
  std::printf("latency us  p50 %u  p90 %u  p99 %u  p99.9 %u  max %u\n", pct(0.50), pct(0.90), pct(0.99), pct(0.999),
              all.empty() ? 0u : all.back());
  return err ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  const bool is_bench = a.command == "bench";
  if (a.spec.empty()) a.spec = is_bench ? "1000000/s" : "10/s";
  if (a.command != "check" && a.command != "peek" && a.command != "reset" && a.command != "stats" && !is_bench)
    usage_error("unknown command '" + a.command + "'");
  if ((a.command == "check" || a.command == "peek" || a.command == "reset") && a.rest.size() != 1)
    usage_error(a.command + " takes exactly one KEY");
  if (is_bench && !a.rest.empty()) usage_error("bench takes no arguments");

  polylimit_error err;
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  co.command_timeout_ms = a.timeout_ms;
  if (is_bench) co.pool_size = std::max(8, a.threads);
  polylimit_client* client = nullptr;
  if (polylimit_client_open(a.url.c_str(), &co, &client, &err) != POLYLIMIT_OK) die("--url", err);
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.algorithm = algorithm_of(a.algorithm);
  lo.prefix = a.prefix.c_str();
  lo.deny_cache_size = a.deny_cache;
  polylimit_limiter* l = nullptr;
  if (polylimit_limiter_new_spec(client, a.spec.c_str(), &lo, &l, &err) != POLYLIMIT_OK) die("--spec", err);

  int status = 0;
  polylimit_decision d;
  if (a.command == "check" || a.command == "peek") {
    const std::string& key = a.rest[0];
    int rc = a.command == "check" ? polylimit_limiter_check(l, key.data(), key.size(), a.cost, &d, &err)
                                  : polylimit_limiter_peek(l, key.data(), key.size(), &d, &err);
    if (rc != POLYLIMIT_OK) die(a.command.c_str(), err);
    print(key, d);
    status = d.allowed ? 0 : 1;
  } else if (a.command == "reset") {
    if (polylimit_limiter_reset(l, a.rest[0].data(), a.rest[0].size(), &err) != POLYLIMIT_OK) die("reset", err);
    std::printf("key=%s reset\n", a.rest[0].c_str());
  } else if (a.command == "stats") {
    for (const std::string& key : a.rest) {
      if (polylimit_limiter_peek(l, key.data(), key.size(), &d, &err) != POLYLIMIT_OK) die("peek", err);
      print(key, d);
    }
    char* text = nullptr;
    size_t len = 0;
    if (polylimit_client_stats_prometheus(client, &text, &len, &err) != POLYLIMIT_OK) die("stats", err);
    std::fwrite(text, 1, len, stdout);
    polylimit_free(text);
  } else {
    status = bench(a, l, client);
  }
  polylimit_limiter_free(l);
  polylimit_client_close(client);
  return status;
}
