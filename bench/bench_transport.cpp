// bench_transport - the transport's throughput against raw hiredis, in one run.
//
// Baselines (hiredis, the library's own sliding-log script and ARGV, EVALSHA):
//   hiredis sync        1 thread, one connection, one call per round trip
//   hiredis pipe x64    1 thread, one connection, 64 calls per round trip:
//                       the server's ceiling for this script on this machine
//   hiredis pipe x16    the same with 16 calls per round trip, and
//   hiredis 2x8 overlap two batches of 8 kept in flight (one is answered
//                       while the server runs the other): what any client
//                       gets from the server with at most 16 calls in
//                       flight, as 16 blocking threads have; the bound the
//                       16-thread rows are read against, not a target
// The library (C ABI, one client with default options):
//   polylimit Nt        N threads (1, 16, 64) calling polylimit_limiter_check
// Each mode runs on the allow path (every call admitted: a large limit over
// rotating keys) and the deny path (one exhausted key per thread, deny cache
// off, so every call is a script call that denies). Modes are interleaved
// within each repetition; the table shows the median of the repetitions with
// their min..max, calls/s computed from the measured time, client CPU per
// call (getrusage), the server's CPU per call (INFO cpu) and the connections
// the server saw (INFO clients).
//
// Usage: bench_transport [repetitions=3] [seconds per measurement=1.0] [only] [pool_size]
#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "polylimit.h"
#include "polylimit/limiter.h"
#include "redis_server.h"
#include "scripts_generated.h"

namespace {

using Clock = std::chrono::steady_clock;
using Argv = std::vector<std::string>;

constexpr int64_t kAllowLimit = 1000000;  // per window: never reached here
constexpr int64_t kWindowMs = 3600000;
constexpr int kKeysPerThread = 512;  // the allow path rotates over these

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The storage key the library uses for caller key `id` (prefix "pl").
std::string storage_key(const std::string& id) {
  static std::shared_ptr<polylimit::Client> offline = polylimit::Client::open("memory://");
  polylimit::LimiterOptions o;
  o.limit = {polylimit::Algorithm::kSlidingLog, kAllowLimit, kWindowMs};
  return polylimit::Limiter(offline, o).storage_key(id);
}

// The ARGV the library sends for check(key, 1) with one limit, server clock.
Argv check_argv(const std::string& key, int64_t limit) {
  const int64_t window_us = kWindowMs * 1000;
  return {"EVALSHA",
          polylimit::scripts::k_sliding_log.sha1,
          "1",
          key,
          "check",
          "1",
          "",
          std::to_string(limit),
          std::to_string(window_us)};
}

class Conn {
 public:
  explicit Conn(int port) : c_(redisConnect("127.0.0.1", port)) {
    if (c_ == nullptr || c_->err) throw std::runtime_error("cannot connect to redis-server");
  }
  ~Conn() { redisFree(c_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  void append(const Argv& a) {
    std::vector<const char*> p;
    std::vector<size_t> n;
    for (const auto& s : a) {
      p.push_back(s.data());
      n.push_back(s.size());
    }
    redisAppendCommandArgv(c_, static_cast<int>(a.size()), p.data(), n.data());
  }
  // Reads one reply; returns whether it was an admission ({1, ...}).
  bool read_admitted() {
    void* r = nullptr;
    if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) throw std::runtime_error("connection lost");
    auto* reply = static_cast<redisReply*>(r);
    if (reply->type == REDIS_REPLY_ERROR) {
      std::string e(reply->str, reply->len);
      freeReplyObject(reply);
      throw std::runtime_error("script error: " + e);
    }
    bool admitted = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
                    reply->element[0]->type == REDIS_REPLY_INTEGER && reply->element[0]->integer == 1;
    freeReplyObject(reply);
    return admitted;
  }
  std::string text(const Argv& a) {
    append(a);
    void* r = nullptr;
    if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) throw std::runtime_error("connection lost");
    auto* reply = static_cast<redisReply*>(r);
    std::string out = reply->str != nullptr ? std::string(reply->str, reply->len) : std::to_string(reply->integer);
    freeReplyObject(reply);
    return out;
  }

 private:
  redisContext* c_;
};

struct Sample {
  double calls_per_s = 0;
  double cpu_us_per_call = 0;
  double server_us_per_call = 0;  // redis-server's CPU (INFO cpu) per call
  long long connections = 0;
  long long admitted = 0, calls = 0;
};

struct Path {
  const char* name;
  bool allow;
};

// Runs `threads` workers for `seconds`; each calls body(thread, i) until the
// time is up and returns how many calls it made and how many were admitted.
Sample run_threads(int threads, double seconds, const std::function<std::pair<long long, long long>(int)>& worker,
                   std::atomic<bool>& stop) {
  stop = false;
  std::vector<std::pair<long long, long long>> counts(threads);
  std::vector<std::thread> pool;
  double cpu0 = cpu_seconds();
  auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { counts[t] = worker(t); });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  double cpu = cpu_seconds() - cpu0;
  Sample s;
  for (auto& [calls, admitted] : counts) {
    s.calls += calls;
    s.admitted += admitted;
  }
  s.calls_per_s = static_cast<double>(s.calls) / elapsed;
  s.cpu_us_per_call = s.calls > 0 ? cpu * 1e6 / static_cast<double>(s.calls) : 0;
  return s;
}

long long connected_clients(const pltest::RedisServer& server) {
  std::string info = server.command({"INFO", "clients"});
  auto at = info.find("connected_clients:");
  return at == std::string::npos ? -1 : std::atoll(info.c_str() + at + 18);
}

struct Mode {
  std::string name;
  int threads;
  std::function<Sample(const Path&, double)> run;
};

std::string deny_id(int t) { return "deny-" + std::to_string(t); }
std::string allow_id(int t, int i) { return "allow-" + std::to_string(t) + "-" + std::to_string(i % kKeysPerThread); }

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const double seconds = argc > 2 ? std::max(0.2, std::atof(argv[2])) : 1.0;
  // Optional: run only the measurements whose "path mode" contains this
  // text (for profiling one case; ratios need their baselines in the run).
  const std::string only = argc > 3 ? argv[3] : "";
  // Optional: the library's pool_size (connections per node; 0: the default).
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  co.pool_size = argc > 4 ? std::atoi(argv[4]) : 0;
  pltest::RedisServer server;
  Conn control(server.port());
  if (control.text({"SCRIPT", "LOAD", polylimit::scripts::k_sliding_log.source}) !=
      polylimit::scripts::k_sliding_log.sha1)
    throw std::runtime_error("script SHA1 mismatch");

  polylimit_client* client = nullptr;
  polylimit_error err;
  if (polylimit_client_open(server.url().c_str(), nullptr, &client, &err) != POLYLIMIT_OK)
    throw std::runtime_error(err.message);
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.limit = kAllowLimit;
  lo.window_ms = kWindowMs;
  lo.limit = 1;  // the deny path: one unit, taken before the runs
  polylimit_limiter* deny = nullptr;
  if (polylimit_limiter_new(client, &lo, &deny, &err) != POLYLIMIT_OK) throw std::runtime_error(err.message);
  // Deny keys are the same storage keys for the library and hiredis: the
  // library's limiter with limit 1 names them; exhaust them once.
  for (int t = 0; t < 64; ++t) {
    polylimit_decision d;
    std::string id = deny_id(t);
    polylimit_limiter_check(deny, id.data(), id.size(), 1, &d, nullptr);
  }

  std::atomic<bool> stop{false};
  std::vector<Mode> modes;
  // hiredis gets its ARGV prebuilt (the same storage keys and arguments the
  // library sends), so its numbers are a ceiling, not a straw man.
  std::vector<Argv> allow_argv;
  for (int i = 0; i < kKeysPerThread; ++i) allow_argv.push_back(check_argv(storage_key(allow_id(0, i)), kAllowLimit));
  const Argv deny_argv = check_argv(storage_key(deny_id(0)), 1);
  auto argv_for = [&](const Path& p, long long n) -> const Argv& {
    return p.allow ? allow_argv[static_cast<size_t>(n % kKeysPerThread)] : deny_argv;
  };
  // One thread, one connection, `batches` batches of `depth` calls kept in
  // flight: each round queues a batch (written by the next read) and reads
  // the oldest one's replies.
  auto pipelined = [&](int batches, int depth) {
    return [&, batches, depth](const Path& p, double s) {
      Conn c(server.port());
      return run_threads(
          1, s,
          [&](int) {
            long long n = 0, ok = 0;
            auto queue = [&] {
              for (int j = 0; j < depth; ++j) c.append(argv_for(p, n + j));
              n += depth;
            };
            auto read = [&] {
              for (int j = 0; j < depth; ++j) ok += c.read_admitted();
            };
            for (int b = 1; b < batches; ++b) queue();
            while (!stop.load(std::memory_order_relaxed)) {
              queue();
              read();
            }
            for (int b = 1; b < batches; ++b) read();
            return std::make_pair(n, ok);
          },
          stop);
    };
  };
  modes.push_back({"hiredis sync", 1, pipelined(1, 1)});
  modes.push_back({"hiredis pipe x64", 1, pipelined(1, 64)});
  modes.push_back({"hiredis pipe x16", 1, pipelined(1, 16)});
  modes.push_back({"hiredis 2x8 overlap", 1, pipelined(2, 8)});
  for (int threads : {1, 16, 64}) {
    modes.push_back({"polylimit " + std::to_string(threads) + "t", threads, [&, threads](const Path& p, double s) {
                       // A fresh client per measurement, so that the
                       // connections counted are the ones this run opened.
                       const long long before = connected_clients(server);
                       polylimit_client* c = nullptr;
                       polylimit_limiter* lim = nullptr;
                       polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
                       o.limit = p.allow ? kAllowLimit : 1;
                       o.window_ms = kWindowMs;
                       if (polylimit_client_open(server.url().c_str(), &co, &c, nullptr) != POLYLIMIT_OK ||
                           polylimit_limiter_new(c, &o, &lim, nullptr) != POLYLIMIT_OK)
                         throw std::runtime_error("cannot open a client");
                       std::atomic<long long> peak{0};
                       std::thread watcher([&] {
                         while (!stop.load()) {
                           long long n = connected_clients(server) - before;
                           if (n > peak.load()) peak = n;
                           std::this_thread::sleep_for(std::chrono::milliseconds(50));
                         }
                       });
                       Sample smp = run_threads(
                           threads, s,
                           [&](int t) {
                             long long n = 0, ok = 0;
                             polylimit_decision d;
                             std::string dkey = deny_id(t);
                             while (!stop.load(std::memory_order_relaxed)) {
                               std::string key = p.allow ? allow_id(t, static_cast<int>(n)) : dkey;
                               if (polylimit_limiter_check(lim, key.data(), key.size(), 1, &d, nullptr) != POLYLIMIT_OK)
                                 throw std::runtime_error("check failed");
                               ok += d.allowed;
                               ++n;
                             }
                             return std::make_pair(n, ok);
                           },
                           stop);
                       watcher.join();
                       smp.connections = peak.load();
                       polylimit_limiter_free(lim);
                       polylimit_client_close(c);
                       return smp;
                     }});
  }
  const Path paths[] = {{"allow", true}, {"deny", false}};
  std::map<std::pair<std::string, std::string>, std::vector<Sample>> results;
  for (int r = 0; r < reps; ++r)
    for (const Path& p : paths)
      for (const Mode& m : modes) {
        if (!only.empty() && (std::string(p.name) + " " + m.name).find(only) == std::string::npos) continue;
        const double server0 = server.cpu_seconds();
        Sample s = m.run(p, seconds);
        if (s.calls > 0) s.server_us_per_call = (server.cpu_seconds() - server0) * 1e6 / static_cast<double>(s.calls);
        if (p.allow ? s.admitted != s.calls : s.admitted != 0)
          throw std::runtime_error(m.name + " " + p.name + ": the path was not the one measured");
        results[{p.name, m.name}].push_back(s);
      }

  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::printf("bench_transport: %d repetitions x %.1f s per measurement, modes interleaved; redis-server on loopback\n",
              reps, seconds);
  std::printf("%-6s %-19s %12s %19s %10s %10s %6s  %s\n", "path", "mode", "calls/s", "(min..max)", "cpu us/call",
              "srv us/call", "conns", "ratio");
  for (const Path& p : paths) {
    std::map<std::string, double> med;
    for (const Mode& m : modes) {
      std::vector<double> rate, cpu, srv;
      long long conns = 0;
      if (results[{p.name, m.name}].empty()) continue;
      for (const Sample& s : results[{p.name, m.name}]) {
        rate.push_back(s.calls_per_s);
        cpu.push_back(s.cpu_us_per_call);
        srv.push_back(s.server_us_per_call);
        conns = std::max(conns, s.connections);
      }
      med[m.name] = median(rate);
      std::string ratio;
      if (m.name == "polylimit 1t" && med.count("hiredis sync")) {
        char b[64];
        std::snprintf(b, sizeof b, "%.2fx hiredis sync", med[m.name] / med["hiredis sync"]);
        ratio = b;
      } else if ((m.threads > 1 || m.name == "hiredis pipe x16" || m.name == "hiredis 2x8 overlap") &&
                 med.count("hiredis pipe x64")) {
        char b[64];
        std::snprintf(b, sizeof b, "%.2fx hiredis pipe x64", med[m.name] / med["hiredis pipe x64"]);
        ratio = b;
      }
      char range[48];
      std::snprintf(range, sizeof range, "(%.0f..%.0f)", *std::min_element(rate.begin(), rate.end()),
                    *std::max_element(rate.begin(), rate.end()));
      std::printf("%-6s %-19s %12.0f %19s %10.1f %10.1f %6s  %s\n", p.name, m.name.c_str(), med[m.name], range,
                  median(cpu), median(srv), m.name.rfind("polylimit", 0) == 0 ? std::to_string(conns).c_str() : "1",
                  ratio.c_str());
    }
  }
  polylimit_limiter_free(deny);
  polylimit_client_close(client);
  return 0;
}
