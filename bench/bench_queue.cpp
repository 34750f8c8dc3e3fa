// bench_queue - the completion queue's cost against the blocking call and
// against the server's own client, with coalescing on and off, in one run.
//
// Modes (one thread each; the sliding log's baselines send the library's
// script and ARGV):
//   hiredis sync        one call per round trip: the floor of a blocking
//                       call's cost (sliding log)
//   blocking 1t         polylimit_limiter_check (sliding log)
//   submit+poll 1       submit_check, then queue_poll(-1) for it: one check
//                       in flight, as an awaited promise or task
//   submit+poll 64      64 checks in flight: each poll takes what has
//                       arrived and submits as many again
//   redis-benchmark     redis-benchmark -c 4 -P 16 (64 in flight) of the
//                       same EVALSHA with the same arguments: the server's
//                       ceiling (sliding log)
// The submit+poll cells run for the sliding log, the fixed window and GCRA,
// through a client with coalescing on (the default) and one with
// `no_coalescing` (docs/limiter.md, "Hot keys" and "Many keys of one
// limit"), on 2,000 distinct keys: the allow path under a limit never
// reached, the deny path over 2,000 used-up keys (deny cache off, so every
// check is decided by a script). Each in-flight slot owns its own share of
// the keys (slot s: keys s, s + 64, ...), so no two checks in flight share a
// key: many clients, not one hot key. A hot-key cell puts 64 checks in flight
// on ONE used-up key. The baselines keep their keys: the allow path rotates
// over the same 2,000 keys, the deny path uses the one hot key.
//
// Cells are interleaved within each repetition. Each shows the median checks/s
// with min..max, the client's CPU per check (getrusage RUSAGE_SELF: every
// thread of this process; redis-benchmark: RUSAGE_CHILDREN), the Redis main
// thread's CPU per check (INFO cpu before and after), `CPU used` =
// checks/s x (client + Redis CPU per check) / cores, `Redis busy` = checks/s
// x Redis CPU per check (one core), script calls per check (the client's
// stats: script_calls / checks), coalescing on/off (ratio of medians, with
// the per-run range) and the ratios to the baselines: submit+poll 1 against
// blocking 1t, submit+poll 64 against redis-benchmark. Derived columns are
// medians of the per-run values.
//
// Usage: bench_queue [repetitions=5] [seconds per measurement=1.0] [only]
// (only: run the cells whose label, e.g. "deny gcra 2000 keys submit+poll 64
// off", contains this text, for profiling one case; the ratios need their
// baselines in the run.)
#include <hiredis/hiredis.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
// The fixed window's and GCRA's used-up keys: one unit per 30 days, so no
// window edge frees a key during a run.
constexpr int64_t kDenyWindowMs = 30LL * 24 * 3600000;
constexpr int kKeys = 2000;  // distinct keys of the allow and deny paths
constexpr int kDeep = 64;    // checks in flight in the deep cells

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }
double cpu_seconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return seconds_of(u.ru_utime) + seconds_of(u.ru_stime);
}

std::string allow_id(long long i) { return "allow-" + std::to_string(i % kKeys); }
std::string deny_id(long long i) { return "deny-" + std::to_string(i % kKeys); }
const std::string kHotId = "deny";  // one used-up key: the baselines' deny path and the hot-key cells

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

redisReply* command(redisContext* c, const Argv& argv) {
  std::vector<const char*> p;
  std::vector<size_t> n;
  for (const auto& s : argv) {
    p.push_back(s.data());
    n.push_back(s.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), p.data(), n.data()));
  if (r == nullptr) throw std::runtime_error("connection to redis-server lost");
  return r;
}

// Sends `argv` on a fresh hiredis connection; 1 for an admission, 0 for a
// denial; throws on anything else (the bench would measure the wrong path).
int admitted(int port, const Argv& argv) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err) throw std::runtime_error("cannot connect to redis-server");
  redisReply* r = command(c, argv);
  int out = -1;
  if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_INTEGER)
    out = static_cast<int>(r->element[0]->integer);
  std::string what = r->str != nullptr ? std::string(r->str, r->len) : "";
  freeReplyObject(r);
  redisFree(c);
  if (out < 0) throw std::runtime_error("unexpected reply to the script: " + what);
  return out;
}

// A field of an INFO reply ("name:value"), or -1.
double info_field(const std::string& info, const std::string& name) {
  const size_t at = info.find("\n" + name + ":");
  if (at == std::string::npos) return -1;
  return std::atof(info.c_str() + at + name.size() + 2);
}

// Reads the server's counters on a connection of its own.
class ServerInfo {
 public:
  explicit ServerInfo(int port) : c_(redisConnect("127.0.0.1", port)) {
    if (c_ == nullptr || c_->err) throw std::runtime_error("cannot connect to redis-server");
  }
  ~ServerInfo() { redisFree(c_); }
  std::string info(const std::string& section) {
    redisReply* r = command(c_, {"INFO", section});
    std::string out = "\n" + (r->str != nullptr ? std::string(r->str, r->len) : "");
    freeReplyObject(r);
    return out;
  }
  // The main thread's CPU (user + system), seconds; the whole server's when
  // the main-thread fields are absent.
  double cpu() {
    const std::string s = info("cpu");
    const double u = info_field(s, "used_cpu_user_main_thread"), y = info_field(s, "used_cpu_sys_main_thread");
    if (u >= 0 && y >= 0) return u + y;
    return info_field(s, "used_cpu_user") + info_field(s, "used_cpu_sys");
  }

 private:
  redisContext* c_;
};

struct Sample {
  double calls_per_s = 0;
  double cpu_us = 0;         // client CPU per check
  double redis_us = 0;       // Redis main thread CPU per check
  double script_calls = -1;  // per check (client stats); -1: not a library cell
};

// What a cell reads before and after its timed part.
struct Meter {
  ServerInfo* server;
  polylimit_client* client;  // nullptr: not a library cell
  int cpu_who = RUSAGE_SELF;
  double cpu0 = 0, redis0 = 0;
  polylimit_stats st0 = POLYLIMIT_STATS_INIT;
  polylimit_error err{};
  void start() {
    if (client != nullptr) polylimit_client_stats(client, &st0, &err);
    redis0 = server->cpu();
    cpu0 = cpu_seconds(cpu_who);
  }
  // Fills s from `checks` made over `elapsed` seconds.
  void stop(Sample& s, long long checks, double elapsed) {
    const double cpu = cpu_seconds(cpu_who) - cpu0;
    const double redis = server->cpu() - redis0;
    polylimit_stats st1 = POLYLIMIT_STATS_INIT;
    if (client != nullptr) polylimit_client_stats(client, &st1, &err);
    const double n = static_cast<double>(std::max(1LL, checks));
    if (elapsed > 0) s.calls_per_s = static_cast<double>(checks) / elapsed;
    s.cpu_us = cpu * 1e6 / n;
    s.redis_us = redis * 1e6 / n;
    if (client != nullptr && st1.checks > st0.checks)
      s.script_calls =
          static_cast<double>(st1.script_calls - st0.script_calls) / static_cast<double>(st1.checks - st0.checks);
  }
};

// Runs body() until `seconds` have passed; body returns the checks it made
// in one step (steps are short: the clock is read between them).
Sample timed(Meter m, double seconds, const std::function<long long()>& body) {
  Sample s;
  m.start();
  const auto t0 = Clock::now();
  const auto until = t0 + std::chrono::duration<double>(seconds);
  long long calls = 0;
  while (Clock::now() < until) calls += body();
  m.stop(s, calls, std::chrono::duration<double>(Clock::now() - t0).count());
  return s;
}

void expect(bool allow, const polylimit_decision& d) {
  if (static_cast<bool>(d.allowed) != allow) throw std::runtime_error("the path was not the one measured");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The first line of a command's output, or "?".
std::string first_line(const std::string& cmd) {
  FILE* f = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (f == nullptr) return "?";
  char buf[256] = "";
  std::string out = std::fgets(buf, sizeof buf, f) != nullptr ? buf : "?";
  pclose(f);
  out.erase(out.find_last_not_of("\r\n") + 1);
  return out;
}

struct Algo {
  const char* name;
  int algorithm;
  const char* prefix;  // nullptr: the default (the baselines' keys)
  int64_t deny_window_ms;
};
constexpr int kAlgos = 3;
const Algo kAlgo[kAlgos] = {{"sliding_log", POLYLIMIT_ALG_SLIDING_LOG, nullptr, kWindowMs},
                            {"fixed_window", POLYLIMIT_ALG_FIXED_WINDOW, "plfw", kDenyWindowMs},
                            {"gcra", POLYLIMIT_ALG_GCRA, "plgcra", kDenyWindowMs}};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const double seconds = argc > 2 ? std::max(0.2, std::atof(argv[2])) : 1.0;
  const std::string only = argc > 3 ? argv[3] : "";
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  pltest::RedisServer server;
  const int port = server.port();
  if (server.command({"SCRIPT", "LOAD", polylimit::scripts::k_sliding_log.source}) !=
      polylimit::scripts::k_sliding_log.sha1)
    throw std::runtime_error("script SHA1 mismatch");
  ServerInfo info(port);

  polylimit_error err;
  // [0]: coalescing on (the default), [1]: no_coalescing.
  polylimit_client* clients[2] = {nullptr, nullptr};
  for (int c = 0; c < 2; ++c) {
    polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
    co.no_coalescing = c;
    if (polylimit_client_open(server.url().c_str(), &co, &clients[c], &err) != POLYLIMIT_OK)
      throw std::runtime_error(err.message);
  }
  // limiters[algorithm][client][deny]
  polylimit_limiter* limiters[kAlgos][2][2] = {};
  for (int a = 0; a < kAlgos; ++a)
    for (int c = 0; c < 2; ++c)
      for (int deny = 0; deny < 2; ++deny) {
        polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
        lo.algorithm = kAlgo[a].algorithm;
        lo.prefix = kAlgo[a].prefix;
        lo.limit = deny ? 1 : kAllowLimit;
        lo.window_ms = deny ? kAlgo[a].deny_window_ms : kWindowMs;
        if (polylimit_limiter_new(clients[c], &lo, &limiters[a][c][deny], &err) != POLYLIMIT_OK)
          throw std::runtime_error(err.message);
      }
  // Uses up the deny path's keys (one unit each) and the hot key.
  polylimit_decision d;
  for (int a = 0; a < kAlgos; ++a)
    for (int i = 0; i <= kKeys; ++i) {
      const std::string key = i < kKeys ? deny_id(i) : kHotId;
      if (polylimit_limiter_check(limiters[a][0][1], key.data(), key.size(), 1, &d, &err) != POLYLIMIT_OK)
        throw std::runtime_error(err.message);
    }
  polylimit_queue* queue = nullptr;
  if (polylimit_queue_new(&queue, &err) != POLYLIMIT_OK) throw std::runtime_error(err.message);

  // The same commands for hiredis and redis-benchmark as the library sends,
  // checked once to take the path measured.
  std::vector<Argv> allow_argv;
  for (int i = 0; i < kKeys; ++i) allow_argv.push_back(check_argv(storage_key(allow_id(i)), kAllowLimit));
  const Argv deny_argv = check_argv(storage_key(kHotId), 1);
  if (admitted(port, allow_argv[0]) != 1 || admitted(port, deny_argv) != 0)
    throw std::runtime_error("the scripts' arguments do not match the library's");

  struct Cell {
    bool allow;
    int algo;
    bool hot;
    std::string mode;  // hiredis sync, blocking 1t, submit+poll, redis-benchmark
    int coalescing;    // 1 on, 0 off, -1 not a library cell
    int in_flight;
    std::function<Sample(double seconds)> run;
    std::vector<Sample> results;
    std::string label() const {
      std::string s =
          std::string(allow ? "allow " : "deny ") + kAlgo[algo].name + (hot ? " one key " : " 2000 keys ") + mode;
      if (mode == "submit+poll") s += " " + std::to_string(in_flight);
      if (coalescing >= 0) s += coalescing ? " on" : " off";
      return s;
    }
  };
  std::vector<Cell> cells;

  auto hiredis_sync = [&](bool a) {
    return [&, a](double s) {
      redisContext* c = redisConnect("127.0.0.1", port);
      if (c == nullptr || c->err) throw std::runtime_error("cannot connect");
      long long n = 0;
      Sample out = timed({&info, nullptr}, s, [&] {
        freeReplyObject(command(c, a ? allow_argv[static_cast<size_t>(n++ % kKeys)] : deny_argv));
        return 1LL;
      });
      redisFree(c);
      return out;
    };
  };

  auto blocking = [&](bool a) {
    return [&, a](double s) {
      long long n = 0;
      polylimit_limiter* lim = limiters[0][0][a ? 0 : 1];
      return timed({&info, clients[0]}, s, [&] {
        const std::string key = a ? allow_id(n++) : kHotId;
        if (polylimit_limiter_check(lim, key.data(), key.size(), 1, &d, &err) != POLYLIMIT_OK)
          throw std::runtime_error(err.message);
        expect(a, d);
        return 1LL;
      });
    };
  };

  // `in_flight` checks on one thread; slot s (the token) takes keys s,
  // s + in_flight, ... of the path's 2,000 (or always the hot key).
  std::vector<polylimit_completion> done(kDeep);
  auto submit_poll = [&](bool a, int algo, int coalescing, bool hot, int in_flight) {
    return [&, a, algo, coalescing, hot, in_flight](double s) {
      polylimit_limiter* lim = limiters[algo][coalescing ? 0 : 1][a ? 0 : 1];
      std::vector<std::string> ids;
      for (int i = 0; i < kKeys; ++i) ids.push_back(a ? allow_id(i) : deny_id(i));
      std::vector<int> next(static_cast<size_t>(in_flight));
      for (int slot = 0; slot < in_flight; ++slot) next[static_cast<size_t>(slot)] = slot;
      auto submit = [&](int slot) {
        int& k = next[static_cast<size_t>(slot)];
        const std::string& key = hot ? kHotId : ids[static_cast<size_t>(k)];
        k += in_flight;
        if (k >= kKeys) k = slot;
        if (polylimit_limiter_submit_check(lim, key.data(), key.size(), 1, queue, static_cast<uint64_t>(slot), &err) !=
            POLYLIMIT_OK)
          throw std::runtime_error(err.message);
      };
      auto reap = [&](bool resubmit) {
        const size_t got = polylimit_queue_poll(queue, done.data(), done.size(), -1);
        for (size_t i = 0; i < got; ++i) {
          if (done[i].status != POLYLIMIT_OK) throw std::runtime_error(done[i].error.message);
          expect(a, done[i].decision);
          if (resubmit) submit(static_cast<int>(done[i].token));
        }
        return static_cast<long long>(got);
      };
      for (int slot = 0; slot < in_flight; ++slot) submit(slot);
      Sample out = timed({&info, clients[coalescing ? 0 : 1]}, s, [&] { return reap(true); });
      while (polylimit_queue_outstanding(queue) > 0) reap(false);
      return out;
    };
  };

  auto redis_benchmark = [&](bool a) {
    return [&, a](double s) {
      // -r substitutes __rand_int__ in the key: the allow path's keys rotate.
      Argv v = a ? check_argv(storage_key("allow-__rand_int__"), kAllowLimit) : deny_argv;
      const long long n = std::max(20000LL, static_cast<long long>(s * 60000));
      std::string cmd = "redis-benchmark -p " + std::to_string(port) + " -c 4 -P 16 -q -n " + std::to_string(n) +
                        (a ? " -r " + std::to_string(kKeys) : "");
      for (const auto& x : v) cmd += " '" + x + "'";  // no quote in these arguments
      cmd += " 2>/dev/null";
      Meter m{&info, nullptr, RUSAGE_CHILDREN};
      m.start();
      FILE* f = popen(cmd.c_str(), "r");
      if (f == nullptr) throw std::runtime_error("cannot run redis-benchmark");
      std::string text;
      char buf[512];
      while (std::fgets(buf, sizeof buf, f) != nullptr) text += buf;
      if (pclose(f) != 0) throw std::runtime_error("redis-benchmark failed: " + text);
      Sample out;
      m.stop(out, n, 0);
      // The last "<n> requests per second" of its output (-q rewrites a progress line).
      const size_t at = text.rfind(" requests per second");
      if (at == std::string::npos) throw std::runtime_error("redis-benchmark: " + text);
      size_t from = text.rfind(' ', at - 1);
      out.calls_per_s = std::atof(text.c_str() + (from == std::string::npos ? 0 : from + 1));
      return out;
    };
  };

  for (bool a : {true, false}) {
    cells.push_back({a, 0, !a, "hiredis sync", -1, 1, hiredis_sync(a), {}});
    cells.push_back({a, 0, !a, "blocking 1t", -1, 1, blocking(a), {}});
    for (int algo = 0; algo < kAlgos; ++algo)
      for (int in_flight : {1, kDeep})
        for (int c : {1, 0})
          cells.push_back({a, algo, false, "submit+poll", c, in_flight, submit_poll(a, algo, c, false, in_flight), {}});
    cells.push_back({a, 0, !a, "redis-benchmark", -1, kDeep, redis_benchmark(a), {}});
  }
  for (int algo = 0; algo < kAlgos; ++algo)
    for (int c : {1, 0})
      cells.push_back({false, algo, true, "submit+poll", c, kDeep, submit_poll(false, algo, c, true, kDeep), {}});

  for (int r = 0; r < reps; ++r)
    for (Cell& c : cells)
      if (only.empty() || c.label().find(only) != std::string::npos) c.results.push_back(c.run(seconds));

  const std::string redis_version = [&] {
    const std::string s = info.info("server");
    const size_t at = s.find("\nredis_version:");
    if (at == std::string::npos) return std::string("?");
    return s.substr(at + 15, s.find_first_of("\r\n", at + 15) - at - 15);
  }();
  std::printf(
      "polylimit %s (C API), hiredis %d.%d.%d, redis-server %s, %s; %ld cores; medians of %d interleaved runs of "
      "%.1f s; allow: %d keys under %lld/hour; deny: %d used-up keys; one key: a used-up key; one thread per cell\n\n",
      polylimit_version_string(), HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, redis_version.c_str(),
      first_line("redis-benchmark --version").c_str(), cores, reps, seconds, kKeys, static_cast<long long>(kAllowLimit),
      kKeys);

  auto find = [&](bool a, int algo, bool hot, const std::string& mode, int coalescing, int in_flight) -> Cell* {
    for (Cell& c : cells)
      if (c.allow == a && c.algo == algo && c.hot == hot && c.mode == mode && c.coalescing == coalescing &&
          c.in_flight == in_flight && !c.results.empty())
        return &c;
    return nullptr;
  };
  auto rate = [](const Cell& c) {
    std::vector<double> v;
    for (const Sample& s : c.results) v.push_back(s.calls_per_s);
    return median(v);
  };
  std::vector<std::vector<std::string>> rows = {
      {"path", "algorithm", "keys", "mode", "coalescing", "in flight", "checks/s (min..max)", "CPU us/check",
       "Redis CPU us/check", "CPU used", "Redis busy", "script calls/check", "on/off (per run)", "vs baseline"}};
  auto fmt = [](const char* f, double x) {
    char b[64];
    std::snprintf(b, sizeof b, f, x);
    return std::string(b);
  };
  for (const Cell& c : cells) {
    if (c.results.empty()) continue;
    std::vector<double> r, cpu, redis, used, busy, calls;
    for (const Sample& s : c.results) {
      r.push_back(s.calls_per_s);
      cpu.push_back(s.cpu_us);
      redis.push_back(s.redis_us);
      used.push_back(s.calls_per_s * (s.cpu_us + s.redis_us) / 1e6 / static_cast<double>(cores));
      busy.push_back(s.calls_per_s * s.redis_us / 1e6);
      if (s.script_calls >= 0) calls.push_back(s.script_calls);
    }
    std::string on_off = "", vs = "";
    if (c.coalescing == 1) {
      if (const Cell* off = find(c.allow, c.algo, c.hot, c.mode, 0, c.in_flight)) {
        std::vector<double> per_run;
        for (size_t i = 0; i < std::min(c.results.size(), off->results.size()); ++i)
          per_run.push_back(c.results[i].calls_per_s / off->results[i].calls_per_s);
        on_off = fmt("%.2fx", rate(c) / rate(*off)) + " (" +
                 fmt("%.2f", *std::min_element(per_run.begin(), per_run.end())) + ".." +
                 fmt("%.2f", *std::max_element(per_run.begin(), per_run.end())) + ")";
      }
    }
    if (c.mode == "blocking 1t") {
      if (const Cell* b = find(c.allow, 0, c.hot, "hiredis sync", -1, 1))
        vs = fmt("%.2fx hiredis sync", rate(c) / rate(*b));
    } else if (c.mode == "submit+poll" && c.algo == 0 && !c.hot && c.in_flight == 1) {
      if (const Cell* b = find(c.allow, 0, !c.allow, "blocking 1t", -1, 1))
        vs = fmt("%.2fx blocking 1t", rate(c) / rate(*b));
    } else if (c.mode == "submit+poll" && c.algo == 0 && !c.hot && c.in_flight == kDeep) {
      if (const Cell* b = find(c.allow, 0, !c.allow, "redis-benchmark", -1, kDeep))
        vs = fmt("%.2fx redis-benchmark", rate(c) / rate(*b));
    }
    rows.push_back({c.allow ? "allow" : "deny", kAlgo[c.algo].name, c.hot ? "one" : std::to_string(kKeys), c.mode,
                    c.coalescing < 0 ? "-" : (c.coalescing ? "on" : "off"), std::to_string(c.in_flight),
                    fmt("%.0f", rate(c)) + " (" + fmt("%.0f", *std::min_element(r.begin(), r.end())) + ".." +
                        fmt("%.0f", *std::max_element(r.begin(), r.end())) + ")",
                    fmt("%.1f", median(cpu)), fmt("%.1f", median(redis)), fmt("%.0f %%", median(used) * 100),
                    fmt("%.0f %%", median(busy) * 100), calls.empty() ? "-" : fmt("%.3f", median(calls)), on_off, vs});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (size_t n = 0; n < rows.size(); ++n) {
    std::string line = "|";
    for (size_t i = 0; i < rows[n].size(); ++i)
      line += " " + rows[n][i] + std::string(width[i] - rows[n][i].size(), ' ') + " |";
    std::puts(line.c_str());
    if (n == 0) {
      line = "|";
      for (size_t w : width) line += std::string(w + 2, '-') + "|";
      std::puts(line.c_str());
    }
  }
  polylimit_queue_free(queue);
  for (auto& per_algo : limiters)
    for (auto& per_client : per_algo)
      for (polylimit_limiter* l : per_client) polylimit_limiter_free(l);
  for (polylimit_client* c : clients) polylimit_client_close(c);
  return 0;
}
