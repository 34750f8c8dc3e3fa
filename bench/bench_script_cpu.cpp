// bench_script_cpu - Redis CPU per decision, the budget every app server
// shares (docs/limiter.md): for each algorithm, the admit and deny paths,
// keys holding ~10 / 100 / 1000 units, one limit and two, of the library's
// scripts (NEW) against the frozen scripts of tests/cpp/legacy_scripts/ (OLD:
// the scripts before the work on their cost), in one run on one server.
//
// Both run through the library's RedisBackend with the same KEYS/ARGV (OLD
// through pltest::LegacyTransport, which swaps only the script text), with the
// server's clock, as an application calls them. Per measurement: fresh keys,
// an untimed prefill, CONFIG RESETSTAT, the timed calls (pipelined in batches
// of 100, and the peers' 100 at a time too: a call that finds the server idle
// costs it more, up to 2x on a quiet machine), then INFO commandstats:
// cmdstat_evalsha usec / calls. Repetitions interleave OLD and NEW (order
// alternating) and the table shows median (min..max) and NEW / OLD.
// A program that prints, not a test: no timed assertions.
//   bench_script_cpu [repetitions (5)] [filter: runs only scenarios whose name contains it]
//                    [peer command...: each run once per repetition against the
//                     same server with "--port P --calls N --prefix X --batch B"
//                     appended (B calls in flight at once, as ours);
//                     it prints "peer<TAB>scenario<TAB>usec per decision" lines,
//                     e.g. bench/python/bench_limits_cpu.py (limits) and
//                     bench/go/redis_rate_cpu (redis_rate, GCRA)]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/redis_backend.h"
#include "legacy_scripts.h"
#include "polylimit/url.h"
#include "redis_server.h"

using namespace polylimit;

namespace {

constexpr int64_t kCalls = 4000;  // timed decisions per measurement
constexpr size_t kBatch = 100;    // requests per pipeline

struct Scenario {
  std::string name;
  Algorithm algorithm;
  int64_t units;    // what each key holds when the timed calls start
  bool admit;       // the timed calls are admitted (else denied)
  bool two_limits;  // a second, looser limit (10x units per day) next to the first
};

// The limits of a scenario. Admit: room for `units` more, so each key takes
// `units` timed calls and holds units..2*units meanwhile. Deny: full.
std::vector<LimitParams> limits_of(const Scenario& s) {
  std::vector<LimitParams> l = {{s.algorithm, s.admit ? 2 * s.units : s.units, 3600000, 0}};
  if (s.two_limits) l.push_back({s.algorithm, 20 * s.units, 86400000, 0});
  return l;
}

struct Sample {
  double usec_per_call = 0;
  long long calls = 0;
  std::string inner;  // the commands the script ran, per call
};

long long field(const std::string& line, const std::string& name) {
  size_t p = line.find(name + "=");
  if (p == std::string::npos) throw std::runtime_error("INFO commandstats: no " + name + " in " + line);
  return std::atoll(line.c_str() + p + name.size() + 1);
}

// One measurement: `keys` fresh keys, prefilled untimed, then kCalls timed
// cost-1 checks spread over them.
Sample measure(pltest::RedisServer& server, RedisBackend& backend, const Scenario& s, const std::string& prefix) {
  const std::vector<LimitParams> limits = limits_of(s);
  // Admit: a key takes `units` checks before it is full; deny: any number.
  const int64_t keys = s.admit ? (kCalls + s.units - 1) / s.units : 4;
  auto request = [&](int64_t k, int64_t cost) {
    Request rq;
    rq.limits = &limits;
    rq.cost = cost;
    rq.keys.push_back(prefix + ":{" + std::to_string(k) + "}");
    if (s.two_limits) rq.keys.push_back(rq.keys[0] + ":1");
    return rq;
  };
  std::vector<Request> fill;
  if (s.algorithm == Algorithm::kSlidingLog) {
    // A ring as steady traffic leaves it: written past its start once, so
    // that head is mid-ring (a first fill leaves head at 0 when the ring is
    // full). Half the units a window ago (gone by now), then `units` a
    // second ago.
    const std::string t = server.command({"TIME"});
    const int64_t now = std::atoll(t.c_str()) * 1000000 + std::atoll(t.c_str() + t.find('\n') + 1);
    for (int64_t k = 0; k < keys; ++k) {
      fill.push_back(request(k, std::max<int64_t>(1, s.units / 2)));
      fill.back().now_us = now - 3600000000 - 2000000;
      fill.push_back(request(k, s.units));
      fill.back().now_us = now - 1000000;
    }
  } else {
    for (int64_t k = 0; k < keys; ++k) fill.push_back(request(k, s.units));
  }
  for (const Outcome& o : backend.evaluate_many(fill))
    if (o.error || !o.decision.allowed) throw std::runtime_error(s.name + ": prefill not admitted");

  std::vector<Request> timed;
  for (int64_t i = 0; i < kCalls; ++i) timed.push_back(request(i % keys, 1));
  server.command({"CONFIG", "RESETSTAT"});
  for (size_t at = 0; at < timed.size(); at += kBatch) {
    std::vector<Request> batch(timed.begin() + at, timed.begin() + std::min(timed.size(), at + kBatch));
    for (const Outcome& o : backend.evaluate_many(batch))
      if (o.error || o.decision.allowed != s.admit)
        throw std::runtime_error(s.name + ": a timed call was not " + (s.admit ? "admitted" : "denied"));
  }
  const std::string info = server.command({"INFO", "commandstats"});
  Sample out;
  long long usec = 0;
  size_t start = 0;
  while (start < info.size()) {
    size_t end = info.find_first_of("\r\n", start);
    if (end == std::string::npos) end = info.size();
    const std::string line = info.substr(start, end - start);
    start = end + 1;
    if (line.rfind("cmdstat_", 0) != 0) continue;
    const std::string cmd = line.substr(8, line.find(':') - 8);
    if (cmd == "evalsha") {
      out.calls = field(line, "calls");
      usec = field(line, "usec");
    } else if (cmd.rfind("config", 0) != 0 && cmd != "info") {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.2f", out.inner.empty() ? "" : ", ", cmd.c_str(),
                    static_cast<double>(field(line, "calls")) / kCalls);
      out.inner += buf;
    }
  }
  if (out.calls != kCalls)
    throw std::runtime_error(s.name + ": Redis counted " + std::to_string(out.calls) + " EVALSHA");
  out.usec_per_call = static_cast<double>(usec) / out.calls;
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string cell(const std::vector<double>& v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f (%.1f..%.1f)", median(v), *std::min_element(v.begin(), v.end()),
                *std::max_element(v.begin(), v.end()));
  return buf;
}

}  // namespace

// Runs the peer's command once; adds its figures to `us` and `names` by scenario.
void run_peer(const std::string& command, int port, const std::string& prefix,
              std::map<std::string, std::vector<double>>& us, std::map<std::string, std::string>& names) {
  const std::string line = command + " --port " + std::to_string(port) + " --calls " + std::to_string(kCalls) +
                           " --prefix " + prefix + " --batch " + std::to_string(kBatch);
  FILE* f = popen(line.c_str(), "r");
  if (f == nullptr) throw std::runtime_error("cannot run " + line);
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) {
    std::string l(buf);
    size_t a = l.find('\t'), b = l.find('\t', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string scenario = l.substr(a + 1, b - a - 1);
    names[scenario] = l.substr(0, a);
    us[scenario].push_back(std::atof(l.c_str() + b + 1));
  }
  if (pclose(f) != 0) throw std::runtime_error("peer command failed: " + line);
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string filter = argc > 2 ? argv[2] : "";
  const std::vector<std::string> peers(argv + std::min(argc, 3), argv + argc);
  pltest::RedisServer server;
  auto transport = [&] { return std::make_unique<StandaloneTransport>(parse_url(server.url()), PoolOptions{}); };
  // Without coalescing: one script call per decision (a batch of checks of
  // one limit would otherwise go as keys calls), what this bench weighs.
  RedisBackend next(transport(), /*coalesce=*/false);
  RedisBackend old(std::make_unique<pltest::LegacyTransport>(transport()), /*coalesce=*/false);

  std::vector<Scenario> scenarios;
  for (Algorithm a : {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow, Algorithm::kGcra}) {
    for (bool admit : {true, false}) {
      for (int64_t units : {10, 100, 1000})
        scenarios.push_back({std::string(algorithm_name(a)) + (admit ? " admit " : " deny ") + std::to_string(units), a,
                             units, admit, false});
      scenarios.push_back(
          {std::string(algorithm_name(a)) + (admit ? " admit " : " deny ") + "100, 2 limits", a, 100, admit, true});
    }
  }
  if (!filter.empty())
    scenarios.erase(std::remove_if(scenarios.begin(), scenarios.end(),
                                   [&](const Scenario& s) { return s.name.find(filter) == std::string::npos; }),
                    scenarios.end());

  const std::string info = server.command({"INFO", "server"});
  const size_t v = info.find("redis_version:");
  std::printf("redis-server %s; %d repetitions of %lld calls per scenario\n",
              v == std::string::npos ? "?" : info.substr(v + 14, info.find_first_of("\r\n", v) - v - 14).c_str(), reps,
              static_cast<long long>(kCalls));
  std::printf("OLD: tests/cpp/legacy_scripts/ (frozen); NEW: core/scripts/ as the library embeds it\n");
  std::map<std::string, std::vector<double>> us_old, us_new;
  std::map<std::string, std::string> inner_old, inner_new;
  std::map<std::string, std::vector<double>> us_peer;
  std::map<std::string, std::string> peer_name;
  for (int r = 0; r < reps; ++r) {
    // The peer runs before our scenarios in even repetitions, after them in odd ones.
    if (r % 2 == 0)
      for (size_t p = 0; p < peers.size(); ++p)
        run_peer(peers[p], server.port(), "peer" + std::to_string(r) + "." + std::to_string(p), us_peer, peer_name);
    for (size_t i = 0; i < scenarios.size(); ++i) {
      const Scenario& s = scenarios[i];
      const std::string base = "b" + std::to_string(r) + "." + std::to_string(i);
      auto run_old = [&] {
        Sample x = measure(server, old, s, base + ".old");
        us_old[s.name].push_back(x.usec_per_call);
        inner_old[s.name] = x.inner;
      };
      auto run_new = [&] {
        Sample x = measure(server, next, s, base + ".new");
        us_new[s.name].push_back(x.usec_per_call);
        inner_new[s.name] = x.inner;
      };
      if ((r + i) % 2 == 0) {
        run_old();
        run_new();
      } else {
        run_new();
        run_old();
      }
    }
    if (r % 2 == 1)
      for (size_t p = 0; p < peers.size(); ++p)
        run_peer(peers[p], server.port(), "peer" + std::to_string(r) + "." + std::to_string(p), us_peer, peer_name);
    server.command({"FLUSHALL"});
  }
  std::printf(
      "\nRedis CPU per decision: INFO commandstats cmdstat_evalsha usec / calls, us,\n"
      "median (min..max) of %d interleaved repetitions; window 1 h (second limit: 10x per day)\n\n",
      reps);
  std::printf("| %-36s | %-20s | %-20s | %-7s |\n", "scenario (units held)", "OLD us/decision", "NEW us/decision",
              "NEW/OLD");
  std::printf("|%s|%s|%s|%s:|\n", std::string(38, '-').c_str(), std::string(22, '-').c_str(),
              std::string(22, '-').c_str(), std::string(8, '-').c_str());
  for (const Scenario& s : scenarios) {
    std::printf("| %-36s | %20s | %20s | %6.2fx |\n", s.name.c_str(), cell(us_old[s.name]).c_str(),
                cell(us_new[s.name]).c_str(), median(us_new[s.name]) / median(us_old[s.name]));
  }
  if (!us_peer.empty()) {
    std::printf(
        "\nAgainst the peers, same server, same run (the peer's EVALSHA usec / calls, its calls %zu in\n"
        "flight as ours; median (min..max)):\n\n",
        kBatch);
    std::printf("| %-26s | %-36s | %-20s | %-20s | %-8s | %-8s |\n", "scenario (units held)", "peer",
                "peer us/decision", "NEW us/decision", "NEW/peer", "OLD/peer");
    std::printf("|%s|%s|%s|%s|%s:|%s:|\n", std::string(28, '-').c_str(), std::string(38, '-').c_str(),
                std::string(22, '-').c_str(), std::string(22, '-').c_str(), std::string(9, '-').c_str(),
                std::string(9, '-').c_str());
    for (const auto& [name, v] : us_peer) {
      if (us_new.count(name) == 0) continue;
      std::printf("| %-26s | %-36s | %20s | %20s | %7.2fx | %7.2fx |\n", name.c_str(), peer_name[name].c_str(),
                  cell(v).c_str(), cell(us_new[name]).c_str(), median(us_new[name]) / median(v),
                  median(us_old[name]) / median(v));
    }
  }
  std::printf("\nRedis commands per decision (cmdstat_*, last repetition):\n");
  for (const Scenario& s : scenarios)
    std::printf("  %-36s OLD: %s\n  %-36s NEW: %s\n", s.name.c_str(), inner_old[s.name].c_str(), "",
                inner_new[s.name].c_str());
  return 0;
}
