// soak.cpp - a bounded soak: worker threads check through one client (a
// limiter per algorithm, single checks and batches) while a driver keeps
// injecting faults into the server: kill -9 and restart, SCRIPT FLUSH,
// CLIENT KILL, SIGSTOP/SIGCONT; a second client on a small Sentinel
// deployment goes through repeated SENTINEL FAILOVERs. Then a quiet phase.
//
// Asserts, after a settle: open descriptors, threads and RSS are back within a
// small bound of their values before the faults; the client still works; the
// client's counters (polylimit_client_stats) match what the workers saw:
// errors > 0 while faults happened, 0 errors in the quiet phase, and every
// check and error counted once.
//
// Environment: POLYLIMIT_SOAK_SECONDS (total, default 120), POLYLIMIT_SOAK_THREADS
// (default 4), POLYLIMIT_SOAK_SENTINEL (1 default: with the Sentinel part; 0: without).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "faults_common.h"
#include "polylimit/client.h"
#include "polylimit/limiter.h"
#include "redis_cluster.h"
#include "redis_server.h"

using namespace polylimit;
using namespace std::chrono_literals;
using faults::Clock;

namespace {

int env_int(const char* name, int def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : def;
}

struct Usage {
  int fds = 0, threads = 0;
  long rss_kib = 0;
  static Usage now() { return {faults::open_fds(), faults::thread_count(), faults::rss_kib()}; }
};

// What the workers of one client saw.
struct Seen {
  std::atomic<long> checks{0}, decided{0}, errors{0};
  std::mutex mu;
  std::map<std::string, long> by_code;
  std::map<std::string, std::string> first_message;
  void error(ErrorCode code, const std::string& message) {
    errors++;
    std::lock_guard<std::mutex> g(mu);
    std::string name = faults::code_name(code);
    if (by_code[name]++ == 0) first_message[name] = message;
  }
};

int failures = 0;
std::vector<std::pair<bool, std::string>> g_checks;
void expect(bool ok, const std::string& what) {
  std::printf("  %s  %s\n", ok ? "ok  " : "FAIL", what.c_str());
  g_checks.emplace_back(ok, what);
  if (!ok) ++failures;
}

std::shared_ptr<Client> open_client(const std::string& url, int pool) {
  ClientOptions co;
  co.pool.size = pool;
  co.pool.connect_timeout_ms = 200;
  co.pool.command_timeout_ms = 200;
  co.pool.acquire_timeout_ms = 500;
  return Client::open(url, co);
}

// Checks through `limiters` until `stop`: single checks, and every 8th
// operation a batch of 4 keys.
void work(std::vector<Limiter*> limiters, Seen& seen, std::atomic<bool>& stop, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> names;
  for (int i = 0; i < 64; ++i) names.push_back("user" + std::to_string(i));
  for (long op = 0; !stop.load(std::memory_order_relaxed); ++op) {
    Limiter& l = *limiters[op % limiters.size()];
    if (op % 8 == 7) {
      std::vector<std::string_view> keys;
      for (int k = 0; k < 4; ++k) keys.push_back(names[rng() % names.size()]);
      try {
        auto out = l.check_many(keys, 1);
        for (auto& o : out) {
          seen.checks++;
          if (!o.error) {
            seen.decided++;
            continue;
          }
          try {
            std::rethrow_exception(o.error);
          } catch (const Error& e) {
            seen.error(e.code(), e.what());
          }
        }
      } catch (const Error& e) {
        seen.checks += static_cast<long>(keys.size());
        for (size_t k = 0; k < keys.size(); ++k) seen.error(e.code(), e.what());
      }
      continue;
    }
    seen.checks++;
    try {
      l.check(names[rng() % names.size()]);
      seen.decided++;
    } catch (const Error& e) {
      seen.error(e.code(), e.what());
    }
  }
}

std::string mib(long kib) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", kib / 1024.0);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  // --append FILE: add the summary as a Markdown section (docs/reliability.md,
  // after the fault matrix wrote it).
  std::string append_to;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--append" && i + 1 < argc) {
      append_to = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--append FILE.md]\n", argv[0]);
      return 2;
    }
  }
  const int total_s = std::max(20, env_int("POLYLIMIT_SOAK_SECONDS", 120));
  const int threads = std::max(1, env_int("POLYLIMIT_SOAK_THREADS", 4));
  const bool with_sentinel = env_int("POLYLIMIT_SOAK_SENTINEL", 1) != 0;
  const int quiet_s = 8, warm_s = 3;
  const int fault_s = total_s - quiet_s - warm_s - (with_sentinel ? 5 : 0);
  std::printf("soak: %d s (%d s of faults, %d s quiet), %d threads, sentinel %s\n", total_s, fault_s, quiet_s, threads,
              with_sentinel ? "on" : "off");
  auto t_start = Clock::now();

  pltest::RedisServer server;
  std::unique_ptr<pltest::RedisSentinels> sentinels;
  if (with_sentinel) sentinels = std::make_unique<pltest::RedisSentinels>("soakmaster");
  std::printf("deployments up in %.1f s\n", faults::ms_since(t_start) / 1000);

  auto client = open_client(server.url(), 4);
  std::vector<std::unique_ptr<Limiter>> limiters;
  for (Algorithm a : {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow, Algorithm::kGcra}) {
    LimiterOptions o;
    o.prefix = std::string("soak-") + storage_segment(a);
    o.limits = {{a, 200, 1000}};
    limiters.push_back(std::make_unique<Limiter>(client, o));
  }
  std::vector<Limiter*> lp;
  for (auto& l : limiters) lp.push_back(l.get());
  std::shared_ptr<Client> sclient;
  std::unique_ptr<Limiter> slimiter;
  if (sentinels) {
    sclient = open_client(sentinels->url(), 2);
    LimiterOptions o;
    o.prefix = "soak-sentinel";
    o.limits = {{Algorithm::kSlidingLog, 200, 1000}};
    slimiter = std::make_unique<Limiter>(sclient, o);
  }

  Seen seen, sseen;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) workers.emplace_back(work, lp, std::ref(seen), std::ref(stop), 17u + i);
  if (slimiter) workers.emplace_back(work, std::vector<Limiter*>{slimiter.get()}, std::ref(sseen), std::ref(stop), 99u);

  // Warm up, then the baseline (workers running, connections open).
  std::this_thread::sleep_for(
      std::chrono::seconds(warm_s));  // a load phase of fixed length, not a wait for a condition
  expect(seen.errors.load() == 0 && sseen.errors.load() == 0, "no error while warming up");
  const Usage before = Usage::now();
  const Stats s0 = client->stats();
  const long seen_errors0 = seen.errors.load();

  // Faults.
  std::map<std::string, long> injected;
  Usage peak = before;
  auto sample = [&] {
    Usage u = Usage::now();
    peak.fds = std::max(peak.fds, u.fds);
    peak.threads = std::max(peak.threads, u.threads);
    peak.rss_kib = std::max(peak.rss_kib, u.rss_kib);
  };
  std::atomic<bool> faults_over{false};
  std::thread sentinel_driver;
  std::atomic<long> failovers{0}, failover_refused{0};
  if (sentinels)
    sentinel_driver = std::thread([&] {
      while (!faults_over.load()) {
        // One failover every ~15 s; SENTINEL FAILOVER is refused while the
        // previous one settles (the replica must be in sync): try again later.
        for (int i = 0; i < 150 && !faults_over.load(); ++i) std::this_thread::sleep_for(100ms);  // pacing
        if (faults_over.load()) break;
        try {
          sentinels->sentinel_failover();
          sentinels->wait_promoted(20s);
          failovers++;
        } catch (const std::exception& e) {
          failover_refused++;
          std::printf("  (failover not done: %s)\n", e.what());
        }
      }
    });
  const auto fault_end = Clock::now() + std::chrono::seconds(fault_s);
  const char* actions[] = {"kill -9 + restart", "SCRIPT FLUSH", "CLIENT KILL TYPE normal", "SIGSTOP 300 ms + SIGCONT"};
  for (int step = 0; Clock::now() < fault_end; ++step) {
    const char* what = actions[step % 4];
    switch (step % 4) {
      case 0:
        ::kill(pltest::server_pid(server), SIGKILL);
        server.stop();                       // reaps it
        std::this_thread::sleep_for(200ms);  // the length of the outage
        server.start();
        break;
      case 1: server.command({"SCRIPT", "FLUSH"}); break;
      case 2: server.command({"CLIENT", "KILL", "TYPE", "normal"}); break;
      case 3:
        server.pause();
        std::this_thread::sleep_for(300ms);  // the length of the outage
        server.resume();
        break;
    }
    injected[what]++;
    sample();
    std::this_thread::sleep_for(700ms);  // the pace of the faults
  }
  faults_over = true;
  if (sentinel_driver.joinable()) sentinel_driver.join();

  // Quiet: wait for a clean round on every limiter, then count nothing but successes.
  auto settled_at = Clock::now();
  bool settled = faults::wait_until(
      [&] {
        for (Limiter* l : lp) {
          seen.checks++;  // counted like the workers' checks, for the comparison with the stats
          try {
            l->check("settle");
            seen.decided++;
          } catch (const Error& e) {
            seen.error(e.code(), e.what());
            return false;
          }
        }
        if (slimiter) {
          sseen.checks++;
          try {
            slimiter->check("settle");
            sseen.decided++;
          } catch (const Error& e) {
            sseen.error(e.code(), e.what());
            return false;
          }
        }
        return true;
      },
      30s, 20ms);
  expect(settled, "the clients answer again after the faults");
  std::printf("  settled in %.0f ms\n", faults::ms_since(settled_at));
  const Stats q0 = client->stats(), sq0 = sclient ? sclient->stats() : Stats{};
  const long quiet_errors0 = seen.errors.load() + sseen.errors.load();
  const long quiet_checks0 = seen.checks.load();
  std::this_thread::sleep_for(std::chrono::seconds(quiet_s));  // the quiet phase has a fixed length
  const Usage after = Usage::now();
  const Stats q1 = client->stats(), sq1 = sclient ? sclient->stats() : Stats{};
  const long quiet_errors = seen.errors.load() + sseen.errors.load() - quiet_errors0;
  const long quiet_checks = seen.checks.load() - quiet_checks0;
  stop = true;
  for (auto& w : workers) w.join();
  const Stats s1 = client->stats();
  const Stats ss1 = sclient ? sclient->stats() : Stats{};

  // A last check on a fresh key of each limiter.
  bool works = true;
  for (Limiter* l : lp) try {
      works = works && l->check("final").allowed;
    } catch (const Error& e) {
      works = false;
      std::printf("  final check: %s\n", e.what());
    }

  long seen_errors = seen.errors.load() - seen_errors0;
  std::printf("\n=== soak summary (%.0f s) ===\n", faults::ms_since(t_start) / 1000);
  std::printf("%-34s %12s %12s %12s\n", "", "before", "peak", "after");
  std::printf("%-34s %12d %12d %12d\n", "open fds (/proc/self/fd)", before.fds, peak.fds, after.fds);
  std::printf("%-34s %12d %12d %12d\n", "threads (/proc/self/task)", before.threads, peak.threads, after.threads);
  std::printf("%-34s %12s %12s %12s\n", "RSS (/proc/self/status)", mib(before.rss_kib).c_str(),
              mib(peak.rss_kib).c_str(), mib(after.rss_kib).c_str());
  std::printf("\n%-34s %12s\n", "faults injected", "count");
  for (auto& [k, n] : injected) std::printf("%-34s %12ld\n", k.c_str(), n);
  if (sentinels) {
    std::printf("%-34s %12ld\n", "SENTINEL FAILOVER (promoted)", failovers.load());
    std::printf("%-34s %12ld\n", "SENTINEL FAILOVER (not done)", failover_refused.load());
  }
  std::printf("\n%-34s %12s %12s\n", "standalone client (totals)", "stats", "workers saw");
  std::printf("%-34s %12llu %12ld\n", "checks", (unsigned long long)s1.checks, seen.checks.load());
  std::printf("%-34s %12llu %12ld\n", "errors", (unsigned long long)s1.errors, seen.errors.load());
  std::printf("%-34s %12llu %12ld\n", "errors while faults were injected", (unsigned long long)(s1.errors - s0.errors),
              seen_errors);
  std::printf("%-34s %12llu\n", "connect_attempts", (unsigned long long)s1.connect_attempts);
  std::printf("%-34s %12llu\n", "noscript_reloads", (unsigned long long)s1.noscript_reloads);
  std::printf("%-34s %12llu %12ld\n", "quiet phase: errors", (unsigned long long)(q1.errors - q0.errors), quiet_errors);
  std::printf("%-34s %12llu %12ld\n", "quiet phase: checks", (unsigned long long)(q1.checks - q0.checks), quiet_checks);
  for (auto& [code, n] : seen.by_code)
    std::printf("  %-32s %12ld  (first: %s)\n", code.c_str(), n, seen.first_message[code].c_str());
  if (sclient) {
    std::printf("%-34s %12llu %12ld\n", "sentinel client: checks", (unsigned long long)ss1.checks, sseen.checks.load());
    std::printf("%-34s %12llu %12ld\n", "sentinel client: errors", (unsigned long long)ss1.errors, sseen.errors.load());
    for (auto& [code, n] : sseen.by_code)
      std::printf("  %-32s %12ld  (first: %s)\n", code.c_str(), n, sseen.first_message[code].c_str());
  }
  std::printf("\n");

  const long rss_bound = std::max(4L * 1024, before.rss_kib / 4);
  // A connection holds 3 descriptors (the socket and two eventfds), and the
  // pools may hold a few more or fewer connections at the end than when the
  // warm-up ended (4 + 2 at most): the bound is one full pool of the main
  // client over the start. A leak grows with the faults (hundreds of
  // reconnections here), far past it.
  const int fd_bound = 3 * 4;
  expect(after.fds <= before.fds + fd_bound, "open fds back within " + std::to_string(fd_bound) +
                                                 " (a pool's connections) of the start (" + std::to_string(before.fds) +
                                                 " -> " + std::to_string(after.fds) + ")");
  expect(after.threads <= before.threads + 1, "threads back within 1 of the start (" + std::to_string(before.threads) +
                                                  " -> " + std::to_string(after.threads) + ")");
  expect(after.rss_kib <= before.rss_kib + rss_bound, "RSS back within " + mib(rss_bound) + " of the start (" +
                                                          mib(before.rss_kib) + " -> " + mib(after.rss_kib) + ")");
  expect(works, "the client still works (a fresh key of every limiter is admitted)");
  expect(injected.size() == 4, "every kind of fault was injected");
  expect(seen_errors > 0 && s1.errors - s0.errors > 0, "faults caused errors (workers and stats agree they happened)");
  // Totals since the client was made (every call on it was counted here;
  // deltas over a window would race with calls in flight).
  expect(static_cast<long>(s1.errors) == seen.errors.load(), "stats errors == errors the workers saw (" +
                                                                 std::to_string(s1.errors) + " / " +
                                                                 std::to_string(seen.errors.load()) + ")");
  expect(static_cast<long>(s1.checks) == seen.checks.load(), "stats checks == checks the workers made (" +
                                                                 std::to_string(s1.checks) + " / " +
                                                                 std::to_string(seen.checks.load()) + ")");
  if (sclient)
    expect(static_cast<long>(ss1.checks) == sseen.checks.load() && static_cast<long>(ss1.errors) == sseen.errors.load(),
           "sentinel client: stats checks and errors == what its worker saw");
  expect(s1.connect_attempts - s0.connect_attempts >= static_cast<uint64_t>(injected["kill -9 + restart"]),
         "at least one connect per restart");
  expect(s1.noscript_reloads > s0.noscript_reloads, "SCRIPT FLUSH was met by NOSCRIPT reloads");
  expect(quiet_errors == 0 && q1.errors == q0.errors && sq1.errors == sq0.errors, "0 errors in the quiet phase");
  expect(quiet_checks > 0, "checks ran in the quiet phase");
  if (sentinels)
    expect(failovers.load() > 0 || fault_s < 30, "at least one Sentinel failover (when the soak is long enough)");
  std::printf("soak: %s\n", failures ? "FAILED" : "passed");
  if (!append_to.empty()) {
    std::ofstream md(append_to, std::ios::app);
    md << "\n## Soak\n\n"
       << "<!-- Appended by tests/faults/soak.cpp (fault_soak --append) in the same run. -->\n\n"
       << total_s << " s (POLYLIMIT_SOAK_SECONDS): " << threads << " threads check through one client (pool_size 4; "
       << "a limiter per algorithm, single checks and batches of 4 keys, policy error, timeouts 200 ms)"
       << (sclient ? ", one more thread through a Sentinel client" : "") << ", while a driver injects a fault every "
       << "~0.7 s for " << fault_s << " s (kill -9 + restart, SCRIPT FLUSH, CLIENT KILL TYPE normal, SIGSTOP 300 ms)"
       << (sentinels ? " and SENTINEL FAILOVER every ~15 s" : "") << "; then " << quiet_s << " s without faults.\n\n"
       << "| resource | before the faults | peak | after (settled) |\n|---|---|---|---|\n"
       << "| open fds | " << before.fds << " | " << peak.fds << " | " << after.fds << " |\n"
       << "| threads | " << before.threads << " | " << peak.threads << " | " << after.threads << " |\n"
       << "| RSS | " << mib(before.rss_kib) << " | " << mib(peak.rss_kib) << " | " << mib(after.rss_kib) << " |\n\n"
       << "| faults injected | count |\n|---|---|\n";
    for (auto& [k, n] : injected) md << "| " << k << " | " << n << " |\n";
    if (sentinels) md << "| SENTINEL FAILOVER (promoted) | " << failovers.load() << " |\n";
    md << "\n| counter (standalone client) | polylimit_client_stats | seen by the workers |\n|---|---|---|\n"
       << "| checks | " << s1.checks << " | " << seen.checks.load() << " |\n"
       << "| errors | " << s1.errors << " | " << seen.errors.load() << " |\n";
    for (auto& [code, n] : seen.by_code) md << "| errors: " << code << " | | " << n << " |\n";
    md << "| connect_attempts | " << s1.connect_attempts << " | |\n"
       << "| noscript_reloads | " << s1.noscript_reloads << " | |\n"
       << "| errors in the quiet phase | " << (q1.errors - q0.errors) << " | " << quiet_errors << " |\n";
    if (sclient)
      md << "| Sentinel client: checks / errors | " << ss1.checks << " / " << ss1.errors << " | " << sseen.checks.load()
         << " / " << sseen.errors.load() << " |\n";
    md << "\n";
    for (auto& [ok, what] : g_checks) md << "- " << (ok ? "pass" : "**FAIL**") << ": " << what << "\n";
    md << "\nSoak result: " << (failures ? "**FAILED**" : "passed") << ".\n";
  }
  return failures ? 1 : 0;
}
