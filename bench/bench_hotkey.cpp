// bench_hotkey - one hot key against distinct keys, coalescing off and on,
// against a redis-server it starts. A program that prints, not a test.
//
//   bench_hotkey [runs] [seconds per cell] [algorithm] [threads]
//
// With `threads`, only the one-process cells of that many threads run (to
// profile one shape).
// Every cell: threads check as fast as they can for the cell's time; admit
// cells use a limit nothing reaches, deny cells a key already at its limit.
// Cells run interleaved (run 1 of every cell, then run 2, ...) so that the
// machine's noise falls on all alike; each cell prints the median of its
// runs and their spread (min-max). Besides checks/s: EVALSHA calls per check
// and Redis time per check, from the server's own counters (INFO
// commandstats usec of evalsha, and INFO cpu, which adds the network I/O)
// read before and after the cell. "4 proc" cells fork four processes of 16
// threads, each with its own client, on the same key. "lease" cells add
// leases (LimiterOptions::lease_units 1000, lease_ms 100; docs/limiter.md,
// "Leases") to coalescing; they run at most 0.15 s, since at millions of
// checks a second a longer cell would spend its admit key's limit. Every
// cell and run has keys of its own, so no admit cell runs into the limit.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "polylimit/limiter.h"
#include "redis_server.h"

using namespace polylimit;
using Clock = std::chrono::steady_clock;

namespace {

struct Cell {
  int procs;
  int threads;  // per process
  bool hot;     // one key; else one key per thread
  bool coalesce;
  bool deny;
  bool lease = false;
};

struct Sample {
  double checks_per_s = 0;
  double calls_per_check = 0;
  double script_us_per_check = 0;
  double cpu_us_per_check = 0;
};

struct ServerCounters {
  long long calls = 0;
  long long usec = 0;
  double cpu_s = 0;
};

ServerCounters read_counters(const pltest::RedisServer& server) {
  ServerCounters c;
  const std::string info = server.command({"INFO", "commandstats"});
  const auto at = info.find("cmdstat_evalsha:");
  if (at != std::string::npos)
    std::sscanf(info.c_str() + at, "cmdstat_evalsha:calls=%lld,usec=%lld", &c.calls, &c.usec);
  c.cpu_s = server.cpu_seconds();
  return c;
}

LimiterOptions options(Algorithm alg, const Cell& c) {
  LimiterOptions o;
  o.limit.algorithm = alg;
  o.limit.limit = c.deny ? 1 : 1000000;  // admit: the most a limit can be; not reached in a cell
  o.limit.window_ms = 3600 * 1000;
  o.prefix = c.deny ? "hot-deny" : "hot-admit";
  if (c.lease) {
    o.lease_units = c.deny ? 1 : 1000;  // at most the limit
    o.lease_ms = 100;
  }
  return o;
}

// Deny cells share the keys filled before the runs; admit cells get fresh
// ones per cell and run (`tag`).
std::string key_of(const Cell& c, int proc, int thread, const std::string& tag) {
  const std::string base = c.hot ? "hot" : "k" + std::to_string(proc) + "-" + std::to_string(thread);
  return c.deny ? base : base + "-" + tag;
}

// Runs the cell's threads in this process; returns checks done and seconds.
std::pair<long long, double> run_threads(const std::string& url, const Cell& c, Algorithm alg, int proc,
                                         Clock::time_point start, double seconds, const std::string& tag) {
  ClientOptions co;
  co.coalesce = c.coalesce;
  co.pool.size = 2;
  auto client = Client::open(url, co);
  auto limiter = std::make_shared<Limiter>(client, options(alg, c));
  std::atomic<bool> stop{false};
  std::atomic<long long> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < c.threads; ++t)
    threads.emplace_back([&, t] {
      const std::string key = key_of(c, proc, t, tag);
      long long n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        limiter->check(key);
        ++n;
      }
      total.fetch_add(n);
    });
  std::this_thread::sleep_until(start);
  const Clock::time_point begin = Clock::now();
  std::this_thread::sleep_until(begin + std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  return {total.load(), std::chrono::duration<double>(Clock::now() - begin).count()};
}

// The threads start before `start` and count from their first check: the
// few checks before it are part of the count and of the time alike.
Sample run_cell(const pltest::RedisServer& server, const Cell& c, Algorithm alg, double seconds,
                const std::string& tag) {
  if (c.lease) seconds = std::min(seconds, 0.15);
  const ServerCounters before = read_counters(server);
  double rate = 0;
  long long checks = 0;
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(200);
  if (c.procs == 1) {
    auto r = run_threads(server.url(), c, alg, 0, start, seconds, tag);
    checks = r.first;
    rate = r.first / r.second;
  } else {
    std::vector<std::pair<pid_t, int>> children;
    for (int p = 0; p < c.procs; ++p) {
      int fds[2];
      if (pipe(fds) != 0) std::abort();
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        auto r = run_threads(server.url(), c, alg, p, start, seconds, tag);
        double out[2] = {static_cast<double>(r.first), r.second};
        if (write(fds[1], out, sizeof out) != sizeof out) _exit(1);
        _exit(0);
      }
      close(fds[1]);
      children.emplace_back(pid, fds[0]);
    }
    for (auto& ch : children) {
      double in[2] = {0, 1};
      if (read(ch.second, in, sizeof in) != sizeof in) std::fprintf(stderr, "a child failed\n");
      close(ch.second);
      waitpid(ch.first, nullptr, 0);
      checks += static_cast<long long>(in[0]);
      rate += in[0] / in[1];
    }
  }
  const ServerCounters after = read_counters(server);
  Sample s;
  s.checks_per_s = rate;
  const double n = std::max(1LL, checks);
  s.calls_per_check = (after.calls - before.calls) / n;
  s.script_us_per_check = (after.usec - before.usec) / n;
  s.cpu_us_per_check = (after.cpu_s - before.cpu_s) * 1e6 / n;
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string spread(std::vector<double> v, const char* fmt) {
  std::sort(v.begin(), v.end());
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v.front(), v.back());
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 3;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  const std::string alg_name = argc > 3 ? argv[3] : "sliding_log";
  const int only_threads = argc > 4 ? std::atoi(argv[4]) : 0;
  Algorithm alg = Algorithm::kSlidingLog;
  for (Algorithm a : {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow, Algorithm::kGcra})
    if (alg_name == algorithm_name(a)) alg = a;
  if (runs < 1 || seconds <= 0 || alg_name != algorithm_name(alg)) {
    std::fprintf(stderr,
                 "usage: bench_hotkey [runs >= 1] [seconds > 0] [sliding_log|sliding_counter|fixed_window|gcra] "
                 "[threads]\n");
    return 2;
  }
  pltest::RedisServer server;
  {
    // The deny keys: at their limit before any cell runs.
    auto client = Client::open(server.url());
    const Cell deny{1, 1, false, false, true};
    Limiter l(client, options(alg, deny));
    l.check("hot");
    for (int p = 0; p < 4; ++p)
      for (int t = 0; t < 64; ++t) l.check(key_of(deny, p, t, ""));
  }

  std::vector<Cell> cells;
  for (bool deny : {false, true})
    for (int threads : {1, 16, 64})
      for (bool hot : {true, false})
        for (bool coalesce : {false, true}) {
          if (only_threads != 0 && only_threads != threads) continue;
          cells.push_back({1, threads, hot, coalesce, deny});
          if (hot && coalesce) cells.push_back({1, threads, hot, coalesce, deny, true});
        }
  for (bool deny : {false, true})
    for (bool coalesce : {false, true})
      if (only_threads == 0) cells.push_back({4, 16, true, coalesce, deny});

  std::vector<std::vector<Sample>> samples(cells.size());
  for (int r = 0; r < runs; ++r)
    for (size_t i = 0; i < cells.size(); ++i)
      samples[i].push_back(run_cell(server, cells[i], alg, seconds, std::to_string(i) + "-" + std::to_string(r)));

  std::printf("bench_hotkey: %s, %d runs of %.1f s per cell, interleaved; medians (spread min-max)\n\n",
              alg_name.c_str(), runs, seconds);
  std::printf(
      "| path  | procs x threads | keys     | coalescing | checks/s (spread)          | on/off | EVALSHA per check | "
      "script us per check | Redis CPU us per check |\n");
  std::printf(
      "|-------|-----------------|----------|------------|----------------------------|-------:|------------------:|"
      "--------------------:|-----------------------:|\n");
  std::map<std::string, double> off_rate;
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    std::vector<double> rate, calls, script, cpu;
    for (const Sample& s : samples[i]) {
      rate.push_back(s.checks_per_s);
      calls.push_back(s.calls_per_check);
      script.push_back(s.script_us_per_check);
      cpu.push_back(s.cpu_us_per_check);
    }
    char shape[32];
    std::snprintf(shape, sizeof shape, "%d x %d", c.procs, c.threads);
    const std::string keys = c.hot                      ? "one"
                             : c.procs * c.threads == 1 ? "own"
                                                        : std::to_string(c.procs * c.threads) + " keys";
    const std::string id = std::string(c.deny ? "d" : "a") + shape + keys;
    std::string ratio = "";
    if (!c.coalesce) {
      off_rate[id] = median(rate);
    } else {
      char b[16];
      std::snprintf(b, sizeof b, "%.2fx", median(rate) / off_rate[id]);
      ratio = b;
    }
    std::printf("| %-5s | %-15s | %-8s | %-10s | %9.0f (%-14s) | %6s | %17.3f | %19.2f | %22.2f |\n",
                c.deny ? "deny" : "admit", shape, keys.c_str(),
                c.lease      ? "on + lease"
                : c.coalesce ? "on"
                             : "off",
                median(rate), spread(rate, "%.0f-%.0f").c_str(), ratio.c_str(), median(calls), median(script),
                median(cpu));
  }
  return 0;
}
