// bench_queue - the completion queue's cost against the blocking call and
// against the server's own client, in one run.
//
// Modes (one client, default options, the sliding log as the library sends it):
//   hiredis sync        1 thread, one call per round trip: the floor of a
//                       blocking call's cost
//   blocking 1t         polylimit_limiter_check on 1 thread
//   submit+poll 1       1 thread: submit_check, then queue_poll(-1) for it;
//                       one call in flight, as an awaited promise or task
//   submit+poll 64      1 thread keeps 64 checks in flight: each poll takes
//                       what has arrived and submits as many again
//   redis-benchmark     redis-benchmark -c 4 -P 16 (64 in flight) of the same
//                       EVALSHA with the same arguments: the server's ceiling
// Allow path: a limit never reached, over rotating keys; deny path: one
// exhausted key, deny cache off, so every call is a script call that denies.
// Modes are interleaved within each repetition; the table shows the median of
// the repetitions with min..max, client CPU per call (getrusage) and the
// ratios the issue reads: submit+poll 1 against blocking 1t, submit+poll 64
// against redis-benchmark.
//
// Usage: bench_queue [repetitions=5] [seconds per measurement=1.0] [only]
// (only: run the measurements whose "path mode" contains this text, for
// profiling one case; the ratios need their baselines in the run.)
#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
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
constexpr int kKeys = 512;  // the allow path rotates over these

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string allow_id(long long i) { return "allow-" + std::to_string(i % kKeys); }
const std::string kDenyId = "deny";

// The storage key the library uses for caller key `id` (default prefix).
std::string storage_key(const std::string& id) {
  static std::shared_ptr<polylimit::Client> offline = polylimit::Client::open("memory://");
  polylimit::LimiterOptions o;
  o.limit = {polylimit::Algorithm::kSlidingLog, kAllowLimit, kWindowMs};
  return polylimit::Limiter(offline, o).storage_key(id);
}

// The command the library sends for check(key, 1) with one limit, server clock.
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

// Sends `argv` on a fresh hiredis connection; 1 for an admission, 0 for a
// denial; throws on anything else (the bench would measure the wrong path).
int admitted(int port, const Argv& argv) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err) throw std::runtime_error("cannot connect to redis-server");
  std::vector<const char*> p;
  std::vector<size_t> n;
  for (const auto& s : argv) {
    p.push_back(s.data());
    n.push_back(s.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), p.data(), n.data()));
  int out = -1;
  if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_INTEGER)
    out = static_cast<int>(r->element[0]->integer);
  std::string what = r != nullptr && r->str != nullptr ? std::string(r->str, r->len) : "";
  if (r != nullptr) freeReplyObject(r);
  redisFree(c);
  if (out < 0) throw std::runtime_error("unexpected reply to the script: " + what);
  return out;
}

struct Sample {
  double calls_per_s = 0;
  double cpu_us_per_call = 0;
};

// Runs body() until `seconds` have passed; body returns the calls it made
// in one step (steps are short: the clock is read between them).
Sample timed(double seconds, const std::function<long long()>& body) {
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  const auto until = t0 + std::chrono::duration<double>(seconds);
  long long calls = 0;
  while (Clock::now() < until) calls += body();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  Sample s;
  s.calls_per_s = static_cast<double>(calls) / elapsed;
  s.cpu_us_per_call = calls > 0 ? (cpu_seconds() - cpu0) * 1e6 / static_cast<double>(calls) : 0;
  return s;
}

void expect(bool allow, const polylimit_decision& d) {
  if (static_cast<bool>(d.allowed) != allow) throw std::runtime_error("the path was not the one measured");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const double seconds = argc > 2 ? std::max(0.2, std::atof(argv[2])) : 1.0;
  const std::string only = argc > 3 ? argv[3] : "";
  pltest::RedisServer server;
  const int port = server.port();
  if (server.command({"SCRIPT", "LOAD", polylimit::scripts::k_sliding_log.source}) !=
      polylimit::scripts::k_sliding_log.sha1)
    throw std::runtime_error("script SHA1 mismatch");

  polylimit_client* client = nullptr;
  polylimit_error err;
  if (polylimit_client_open(server.url().c_str(), nullptr, &client, &err) != POLYLIMIT_OK)
    throw std::runtime_error(err.message);
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.window_ms = kWindowMs;
  lo.limit = kAllowLimit;
  polylimit_limiter* allow = nullptr;
  lo.limit = kAllowLimit;
  if (polylimit_limiter_new(client, &lo, &allow, &err) != POLYLIMIT_OK) throw std::runtime_error(err.message);
  lo.limit = 1;
  polylimit_limiter* deny = nullptr;
  if (polylimit_limiter_new(client, &lo, &deny, &err) != POLYLIMIT_OK) throw std::runtime_error(err.message);
  polylimit_decision d;
  polylimit_limiter_check(deny, kDenyId.data(), kDenyId.size(), 1, &d, nullptr);  // uses the one unit
  polylimit_queue* queue = nullptr;
  if (polylimit_queue_new(&queue, &err) != POLYLIMIT_OK) throw std::runtime_error(err.message);

  // The same commands for hiredis and redis-benchmark as the library sends,
  // checked once to take the path measured.
  std::vector<Argv> allow_argv;
  for (int i = 0; i < kKeys; ++i) allow_argv.push_back(check_argv(storage_key(allow_id(i)), kAllowLimit));
  const Argv deny_argv = check_argv(storage_key(kDenyId), 1);
  if (admitted(port, allow_argv[0]) != 1 || admitted(port, deny_argv) != 0)
    throw std::runtime_error("the scripts' arguments do not match the library's");

  struct Mode {
    std::string name;
    std::function<Sample(bool allow, double seconds)> run;
  };
  std::vector<Mode> modes;

  modes.push_back({"hiredis sync", [&](bool a, double s) {
                     redisContext* c = redisConnect("127.0.0.1", port);
                     if (c == nullptr || c->err) throw std::runtime_error("cannot connect");
                     long long n = 0;
                     Sample out = timed(s, [&] {
                       const Argv& v = a ? allow_argv[static_cast<size_t>(n++ % kKeys)] : deny_argv;
                       std::vector<const char*> p;
                       std::vector<size_t> len;
                       for (const auto& x : v) {
                         p.push_back(x.data());
                         len.push_back(x.size());
                       }
                       auto* r = static_cast<redisReply*>(
                           redisCommandArgv(c, static_cast<int>(v.size()), p.data(), len.data()));
                       if (r == nullptr) throw std::runtime_error("connection lost");
                       freeReplyObject(r);
                       return 1LL;
                     });
                     redisFree(c);
                     return out;
                   }});

  modes.push_back({"blocking 1t", [&](bool a, double s) {
                     long long n = 0;
                     return timed(s, [&] {
                       const std::string key = a ? allow_id(n++) : kDenyId;
                       if (polylimit_limiter_check(a ? allow : deny, key.data(), key.size(), 1, &d, &err) !=
                           POLYLIMIT_OK)
                         throw std::runtime_error(err.message);
                       expect(a, d);
                       return 1LL;
                     });
                   }});

  polylimit_completion done[64];
  auto submit = [&](bool a, long long n) {
    const std::string key = a ? allow_id(n) : kDenyId;
    if (polylimit_limiter_submit_check(a ? allow : deny, key.data(), key.size(), 1, queue, static_cast<uint64_t>(n),
                                       &err) != POLYLIMIT_OK)
      throw std::runtime_error(err.message);
  };
  auto reap = [&](bool a, size_t max) {
    const size_t got = polylimit_queue_poll(queue, done, max, -1);
    for (size_t i = 0; i < got; ++i) {
      if (done[i].status != POLYLIMIT_OK) throw std::runtime_error(done[i].error.message);
      expect(a, done[i].decision);
    }
    return got;
  };

  modes.push_back({"submit+poll 1", [&](bool a, double s) {
                     long long n = 0;
                     return timed(s, [&] {
                       submit(a, n++);
                       return static_cast<long long>(reap(a, 1));
                     });
                   }});

  modes.push_back({"submit+poll 64", [&](bool a, double s) {
                     long long n = 0;
                     for (int i = 0; i < 64; ++i) submit(a, n++);
                     Sample out = timed(s, [&] {
                       const size_t got = reap(a, 64);
                       for (size_t i = 0; i < got; ++i) submit(a, n++);
                       return static_cast<long long>(got);
                     });
                     while (polylimit_queue_outstanding(queue) > 0) reap(a, 64);
                     return out;
                   }});

  modes.push_back({"redis-benchmark", [&](bool a, double s) {
                     // -r substitutes __rand_int__ in the key: the allow path's keys rotate.
                     Argv v = a ? check_argv(storage_key("allow-__rand_int__"), kAllowLimit) : deny_argv;
                     const long long n = std::max(20000LL, static_cast<long long>(s * 60000));
                     std::string cmd = "redis-benchmark -p " + std::to_string(port) + " -c 4 -P 16 -q -n " +
                                       std::to_string(n) + (a ? " -r 512" : "");
                     for (const auto& x : v) cmd += " '" + x + "'";  // no quote in these arguments
                     cmd += " 2>/dev/null";
                     FILE* f = popen(cmd.c_str(), "r");
                     if (f == nullptr) throw std::runtime_error("cannot run redis-benchmark");
                     std::string text;
                     char buf[512];
                     while (std::fgets(buf, sizeof buf, f) != nullptr) text += buf;
                     if (pclose(f) != 0) throw std::runtime_error("redis-benchmark failed: " + text);
                     // The last "<n> requests per second" of its output (-q rewrites a progress line).
                     const size_t at = text.rfind(" requests per second");
                     if (at == std::string::npos) throw std::runtime_error("redis-benchmark: " + text);
                     size_t from = text.rfind(' ', at - 1);
                     Sample out;
                     out.calls_per_s = std::atof(text.c_str() + (from == std::string::npos ? 0 : from + 1));
                     return out;
                   }});

  const bool paths[] = {true, false};
  std::map<std::pair<bool, std::string>, std::vector<Sample>> results;
  for (int r = 0; r < reps; ++r)
    for (bool p : paths)
      for (const Mode& m : modes)
        if (only.empty() || (std::string(p ? "allow " : "deny ") + m.name).find(only) != std::string::npos)
          results[{p, m.name}].push_back(m.run(p, seconds));

  std::printf("bench_queue: %d repetitions x %.1f s per measurement, modes interleaved; redis-server on loopback\n",
              reps, seconds);
  std::printf("%-6s %-16s %10s %19s %11s  %s\n", "path", "mode", "calls/s", "(min..max)", "cpu us/call", "ratio");
  for (bool p : paths) {
    std::map<std::string, double> med;
    for (const Mode& m : modes) {
      std::vector<double> rate;
      for (const Sample& s : results[{p, m.name}]) rate.push_back(s.calls_per_s);
      if (!rate.empty()) med[m.name] = median(rate);
    }
    for (const Mode& m : modes) {
      if (results[{p, m.name}].empty()) continue;
      std::vector<double> rate, cpu;
      for (const Sample& s : results[{p, m.name}]) {
        rate.push_back(s.calls_per_s);
        cpu.push_back(s.cpu_us_per_call);
      }
      char ratio[64] = "";
      if (m.name == "blocking 1t" && med.count("hiredis sync"))
        std::snprintf(ratio, sizeof ratio, "%.2fx hiredis sync", med[m.name] / med["hiredis sync"]);
      else if (m.name == "submit+poll 1" && med.count("blocking 1t"))
        std::snprintf(ratio, sizeof ratio, "%.2fx blocking 1t", med[m.name] / med["blocking 1t"]);
      else if (m.name == "submit+poll 64" && med.count("redis-benchmark"))
        std::snprintf(ratio, sizeof ratio, "%.2fx redis-benchmark", med[m.name] / med["redis-benchmark"]);
      char range[48];
      std::snprintf(range, sizeof range, "(%.0f..%.0f)", *std::min_element(rate.begin(), rate.end()),
                    *std::max_element(rate.begin(), rate.end()));
      char cpu_text[16] = "-";
      if (m.name != "redis-benchmark") std::snprintf(cpu_text, sizeof cpu_text, "%.1f", median(cpu));
      std::printf("%-6s %-16s %10.0f %19s %11s  %s\n", p ? "allow" : "deny", m.name.c_str(), med[m.name], range,
                  cpu_text, ratio);
    }
  }
  polylimit_queue_free(queue);
  polylimit_limiter_free(allow);
  polylimit_limiter_free(deny);
  polylimit_client_close(client);
  return 0;
}
