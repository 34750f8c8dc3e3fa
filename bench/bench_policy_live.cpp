// bench_policy_live - plans and live reload, in C (the C ABI every binding
// calls). A program that prints, not a test.
//
//   bench_policy_live [runs] [seconds per cell]
//
// "Plans": prepare + answer, no I/O, for a policy of 100 rules (the plan
// rule last) whose tenant comes from a table of 10,000 tenants, or from the
// resolver's cache of 10,000 tenants (the binding's lookup, then prepare
// with the plan): each request a different tenant.
//
// "Reload under load": 64 threads decide requests (polylimit_http_decide:
// prepare, the check, answer) against a redis-server it starts, each taking
// the live policy's current one per request, with no reload and with a
// reload every 10 ms (the same limits, alternating between two documents);
// the phases are interleaved. Prints the latency percentiles of each, the
// p99 difference, requests that failed (none may), and the admissions of one
// hot tenant on a limit of 2,000 per hour that every thread hits through the
// reloads (exactly 2,000 may go on).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "polylimit.h"
#include "redis_server.h"

using Clock = std::chrono::steady_clock;

namespace {

void die(const char* what, const polylimit_error& err) {
  std::fprintf(stderr, "%s: %s\n", what, err.message);
  std::exit(1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// 100 rules: 99 on other paths, then "api" by plan; plans free/pro; a
// tenants table of `tenants` entries; `prefix` names the run.
std::string document(int tenants, const std::string& prefix, const char* free_limit, bool resolver) {
  std::string d = "prefix = \"" + prefix + "\"\ndefault_plan = \"free\"\ntrusted_proxies = [\"10.0.0.0/8\"]\n";
  d += "[plans.free]\napi = \"" + std::string(free_limit) + "\"\nhot = \"2000/hour\"\n";
  d += "[plans.pro]\napi = \"1000000/minute\"\nhot = \"2000/hour\"\n";
  if (resolver) d += "[resolver]\ntimeout_ms = 50\ncache_size = 20000\ncache_ttl_ms = 3600000\n";
  d += "[tenants]\n";
  for (int i = 0; i < tenants; ++i) d += "t" + std::to_string(i) + " = \"" + (i % 2 ? "pro" : "free") + "\"\n";
  for (int i = 0; i < 98; ++i)
    d += "[[rules]]\nname = \"r" + std::to_string(i) + "\"\npaths = [\"/v" + std::to_string(i) +
         "/*\"]\nmethods = [\"POST\"]\nlimit = \"100/minute\"\n";
  d += "[[rules]]\nname = \"hot\"\npaths = [\"/hot\"]\nkey = \"tenant\"\nlimit = \"plan\"\n";
  d += "[[rules]]\nname = \"api\"\npaths = [\"/api/*\"]\nkey = \"tenant\"\nlimit = \"plan\"\n";
  return d;
}

polylimit_http_request request(const char* path, const std::string& tenant) {
  polylimit_http_request r{};
  r.version = POLYLIMIT_HTTP_REQUEST_VERSION;
  r.method = {"GET", 3};
  r.path = {path, std::strlen(path)};
  r.peer = {"10.0.0.7:51234", 14};
  r.tenant = {tenant.data(), tenant.size()};
  r.plan = {"", 0};
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  polylimit_error err;

  // ---- plans: the policy step alone ----------------------------------------
  polylimit_client* memory = nullptr;
  if (polylimit_client_open("memory://", nullptr, &memory, &err) != POLYLIMIT_OK) die("memory://", err);
  const int kTenants = 10000;
  std::vector<std::string> tenants;
  for (int i = 0; i < kTenants; ++i) tenants.push_back("t" + std::to_string(i));
  std::string table_doc = document(kTenants, "bench", "100/minute", false);
  std::string resolver_doc = document(0, "bench", "100/minute", true);
  polylimit_http_live* table = nullptr;
  polylimit_http_live* resolved = nullptr;
  if (polylimit_http_live_new(memory, table_doc.data(), table_doc.size(), nullptr, 0, &table, &err) != POLYLIMIT_OK)
    die("policy", err);
  if (polylimit_http_live_new(memory, resolver_doc.data(), resolver_doc.size(), nullptr, 0, &resolved, &err) !=
      POLYLIMIT_OK)
    die("policy", err);
  for (int i = 0; i < kTenants; ++i)
    polylimit_http_live_cache_plan(resolved, tenants[i].data(), tenants[i].size(), i % 2 ? "pro" : "free",
                                   i % 2 ? 3 : 4, &err);
  polylimit_decision allowed{};
  allowed.allowed = 1;
  allowed.limit = 100;
  allowed.remaining = 42;
  allowed.reset_after_ms = 30000;
  auto step_cost = [&](polylimit_http_live* live, bool resolver) {
    polylimit_http_policy* p = polylimit_http_live_current(live);
    polylimit_http_step step;
    polylimit_http_response resp;
    polylimit_error e;
    char plan[32];
    long long n = 0;
    auto start = Clock::now();
    auto until = start + std::chrono::duration<double>(seconds);
    Clock::time_point now;
    do {
      for (int i = 0; i < 256; ++i) {
        const std::string& t = tenants[static_cast<size_t>((n + i) * 7919 % kTenants)];
        polylimit_http_request r = request("/api/items/42", t);
        if (resolver) {
          if (polylimit_http_live_cached_plan(live, t.data(), t.size(), plan, sizeof plan) != 1) std::abort();
          r.plan = {plan, std::strlen(plan)};
        }
        polylimit_http_prepare(p, &r, &step, &e);
        polylimit_http_answer(p, &step, &allowed, &resp, &e);
      }
      n += 256;
      now = Clock::now();
    } while (now < until);
    if (step.action != POLYLIMIT_HTTP_CHECK) {
      std::fprintf(stderr, "step %d, not a check\n", step.action);
      std::exit(1);
    }
    polylimit_http_policy_free(p);
    return std::chrono::duration<double, std::micro>(now - start).count() / double(n);
  };
  std::vector<double> by_table, by_cache;
  for (int run = 0; run < runs; ++run) {
    by_table.push_back(step_cost(table, false));
    by_cache.push_back(step_cost(resolved, true));
  }
  auto lo = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  auto hi = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  std::printf("Plans: prepare + answer, no I/O, 100 rules, a different tenant each request (%d runs x %.1f s)\n\n",
              runs, seconds);
  std::printf("| tenant's plan from | us/request (median) | spread |\n|---|---|---|\n");
  std::printf("| the tenants table, 10,000 tenants | %.2f | %.2f-%.2f |\n", median(by_table), lo(by_table),
              hi(by_table));
  std::printf("| the resolver's cache, 10,000 tenants (lookup + prepare) | %.2f | %.2f-%.2f |\n\n", median(by_cache),
              lo(by_cache), hi(by_cache));
  polylimit_http_live_free(table);
  polylimit_http_live_free(resolved);
  polylimit_client_close(memory);

  // ---- reload under load -----------------------------------------------------
  pltest::RedisServer server;
  polylimit_client* client = nullptr;
  if (polylimit_client_open(server.url().c_str(), nullptr, &client, &err) != POLYLIMIT_OK) die("client", err);
  const std::string a = document(100, "reload", "1000000/minute", false);
  const std::string b = document(100, "reload", "1000000 / minute", false);  // the same limits, another text
  polylimit_http_live* live = nullptr;
  if (polylimit_http_live_new(client, a.data(), a.size(), nullptr, 0, &live, &err) != POLYLIMIT_OK) die("live", err);
  const int kThreads = 64;
  static const std::string kHot = "hot";
  std::atomic<long long> failed{0}, hot_admitted{0};
  struct Phase {
    bool reload;
    std::vector<double> p50, p99, p999;
    long long requests = 0;
    long long reloads = 0;
  } phases[2] = {{false, {}, {}, {}}, {true, {}, {}, {}}};
  for (int run = 0; run < runs; ++run) {
    for (auto& ph : phases) {
      std::atomic<bool> stop{false};
      std::vector<std::vector<double>> lat(kThreads);
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
          long long i = 0;
          while (!stop.load(std::memory_order_relaxed)) {
            // One in 8 requests goes to the hot tenant's 2000/hour.
            const bool hot = (i++ % 8) == 0;
            const std::string& tenant = tenants[static_cast<size_t>((t * 131 + i) % 100)];
            polylimit_http_request r = request(hot ? "/hot" : "/api/x", hot ? kHot : tenant);
            polylimit_http_step step;
            polylimit_decision d;
            polylimit_http_response resp;
            polylimit_error e;
            auto start = Clock::now();
            polylimit_http_policy* p = polylimit_http_live_current(live);
            int rc = polylimit_http_decide(p, &r, &step, &d, &resp, &e);
            polylimit_http_policy_free(p);
            lat[static_cast<size_t>(t)].push_back(
                std::chrono::duration<double, std::micro>(Clock::now() - start).count());
            if (rc != POLYLIMIT_OK || e.code != 0 || (resp.status != 0 && resp.status != 429)) failed.fetch_add(1);
            if (hot && resp.status == 0) hot_admitted.fetch_add(1);
          }
        });
      auto until = Clock::now() + std::chrono::duration<double>(seconds * 2);
      bool flip = false;
      while (Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!ph.reload) continue;
        const std::string& doc = (flip = !flip) ? b : a;
        if (polylimit_http_live_reload(live, doc.data(), doc.size(), &err) != POLYLIMIT_OK) die("reload", err);
        ++ph.reloads;
      }
      stop = true;
      for (auto& th : threads) th.join();
      std::vector<double> all;
      for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
      std::sort(all.begin(), all.end());
      ph.requests += static_cast<long long>(all.size());
      ph.p50.push_back(all[all.size() / 2]);
      ph.p99.push_back(all[all.size() * 99 / 100]);
      ph.p999.push_back(all[all.size() * 999 / 1000]);
    }
  }
  std::printf(
      "Reload under load: 64 threads, polylimit_http_decide on a redis-server, %d interleaved runs x %.1f s\n\n", runs,
      seconds * 2);
  std::printf(
      "| phase | requests | reloads | p50 us | p99 us (median, spread) | p99.9 us |\n|---|---|---|---|---|---|\n");
  for (auto& ph : phases)
    std::printf("| %s | %lld | %lld | %.0f | %.0f (%.0f-%.0f) | %.0f |\n",
                ph.reload ? "a reload every 10 ms" : "no reload", ph.requests, ph.reloads, median(ph.p50),
                median(ph.p99), lo(ph.p99), hi(ph.p99), median(ph.p999));
  std::printf("\np99 with reloads minus without: %+.0f us (the target: at most +1000 us)\n",
              median(phases[1].p99) - median(phases[0].p99));
  std::printf("requests that failed or were answered other than 200/429: %lld (the target: 0)\n", failed.load());
  std::printf("hot tenant (2000/hour, every thread, through %lld reloads): %lld admitted (exactly 2000 may be)\n",
              phases[1].reloads, hot_admitted.load());
  polylimit_http_live_free(live);
  polylimit_client_close(client);
  return failed.load() == 0 && hot_admitted.load() == 2000 ? 0 : 1;
}
