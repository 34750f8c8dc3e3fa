// bench_http_policy - what the HTTP request policy costs per request, in C
// (the C ABI every binding calls). A program that prints, not a test.
//
//   bench_http_policy [runs] [seconds per cell]
//
// Two tables. "The policy step" times prepare + answer with no I/O (a
// decision made up front, allowed or denied) for request shapes from cheap
// to dear: the cost every middleware adds to its check. "On top of the
// check" runs one thread against a redis-server it starts: a plain
// polylimit_limiter_check against polylimit_http_decide (prepare, the same
// check, answer) on the same keys, allow path (2,000 keys under a limit
// nothing reaches) and deny path (2,000 keys used up), so the difference is
// the policy's share of a real request. Cells run interleaved (run 1 of
// every cell, then run 2, ...); each prints the median of its runs and
// their spread (min-max).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "polylimit.h"
#include "redis_server.h"

using Clock = std::chrono::steady_clock;

namespace {

struct Stats {
  std::vector<double> v;
  double median() {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
  }
  double lo() { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
  double hi() { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
};

void die(const char* what, const polylimit_error& err) {
  std::fprintf(stderr, "%s: %s\n", what, err.message);
  std::exit(1);
}

// A policy of `rules` path rules before the one that matches, and a deny
// list of `denied` networks.
std::string document(int rules, int denied, const char* key) {
  std::string d = "{\"trusted_proxies\": [\"10.0.0.0/8\", \"127.0.0.1\"], \"deny\": {\"ips\": [";
  for (int i = 0; i < denied; ++i) d += (i ? ", \"" : "\"") + std::string("198.18.") + std::to_string(i) + ".0/24\"";
  d += "]}, \"exempt\": [\"/healthz\", \"/static/*\"], \"rules\": [";
  for (int i = 0; i < rules; ++i)
    d += "{\"name\": \"r" + std::to_string(i) + "\", \"paths\": [\"/v" + std::to_string(i) +
         "/*\"], \"methods\": [\"POST\"], \"limiter\": 0}, ";
  d += "{\"name\": \"api\", \"paths\": [\"/api/*\"], \"limiter\": 0, \"key\": \"" + std::string(key) + "\"}]}";
  return d;
}

// Runs one(i) for requests i = 0, 1, ... until `seconds` have passed,
// reading the clock after every `batch` of them: microseconds per request.
template <typename F>
double per_request(double seconds, int batch, F&& one) {
  long long n = 0;
  auto start = Clock::now();
  auto until = start + std::chrono::duration<double>(seconds);
  Clock::time_point now;
  do {
    for (int i = 0; i < batch; ++i) one(n + i);
    n += batch;
    now = Clock::now();
  } while (now < until);
  return std::chrono::duration<double, std::micro>(now - start).count() / double(n);
}

struct Shape {
  const char* name;
  std::string doc;
  const char* forwarded;  // X-Forwarded-For, or nullptr
  bool api_key;
};

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;

  polylimit_error err;
  polylimit_client* memory = nullptr;
  if (polylimit_client_open("memory://", nullptr, &memory, &err) != POLYLIMIT_OK) die("memory://", err);
  polylimit_limiter* mem_limiter = nullptr;
  if (polylimit_limiter_new_spec(memory, "100/minute", nullptr, &mem_limiter, &err) != POLYLIMIT_OK)
    die("limiter", err);

  std::vector<Shape> shapes = {
      {"ip, no proxy, 1 rule", document(0, 0, "ip"), nullptr, false},
      {"ip via 3 X-Forwarded-For hops, 10 rules", document(10, 0, "ip"), "203.0.113.9, 10.1.1.1, 10.2.2.2", false},
      {"IPv6 /64 via a proxy, 10 rules", document(10, 0, "ip"), "2001:db8:1:2::99", false},
      {"api_key (SHA-256), 10 rules", document(10, 0, "api_key"), nullptr, true},
      {"api_key+ip, 100 rules, 100 denied nets", document(100, 100, "api_key+ip"), "203.0.113.9", true},
  };

  struct Cell {
    std::string name;
    std::function<double()> run;  // microseconds per request
    Stats stats;
  };
  std::vector<Cell> cells;
  std::vector<polylimit_http_policy*> policies;
  polylimit_decision allowed{}, denied{};
  allowed.allowed = 1;
  allowed.limit = 100;
  allowed.remaining = 42;
  allowed.reset_after_ms = 30000;
  denied.limit = 100;
  denied.retry_after_ms = 1500;
  denied.reset_after_ms = 60000;

  for (const auto& shape : shapes) {
    polylimit_http_policy* p = nullptr;
    if (polylimit_http_policy_new(shape.doc.data(), shape.doc.size(), &mem_limiter, 1, &p, &err) != POLYLIMIT_OK)
      die(shape.name, err);
    policies.push_back(p);
    for (bool deny : {false, true}) {
      cells.push_back(
          {std::string(shape.name) + (deny ? ", 429" : ", allowed"), [p, &shape, deny, &allowed, &denied, seconds] {
             size_t n_headers = polylimit_http_policy_header_count(p);
             std::vector<polylimit_str> headers(n_headers, polylimit_str{nullptr, 0});
             for (size_t i = 0; i < n_headers; ++i) {
               std::string name = polylimit_http_policy_header_name(p, i);
               if (name == "x-forwarded-for" && shape.forwarded)
                 headers[i] = {shape.forwarded, std::strlen(shape.forwarded)};
               if (name == "x-api-key" && shape.api_key) headers[i] = {"sk_live_abcdefghijklmnop", 24};
             }
             polylimit_http_request r{};
             r.version = POLYLIMIT_HTTP_REQUEST_VERSION;
             r.method = {"GET", 3};
             r.path = {"/api/items/42", 13};
             r.peer = {"10.0.0.7:51234", 14};
             r.headers = headers.data();
             r.header_count = headers.size();
             polylimit_http_step step;
             polylimit_http_response resp;
             polylimit_error e;
             double us = per_request(seconds, 256, [&](long long) {
               polylimit_http_prepare(p, &r, &step, &e);
               polylimit_http_answer(p, &step, deny ? &denied : &allowed, &resp, &e);
             });
             if (step.action != POLYLIMIT_HTTP_CHECK) {
               std::fprintf(stderr, "%s: step %d, not a check\n", shape.name, step.action);
               std::exit(1);
             }
             return us;
           }});
    }
  }

  // On top of a real check: a redis-server of the fixture.
  pltest::RedisServer server;
  polylimit_client* client = nullptr;
  if (polylimit_client_open(server.url().c_str(), nullptr, &client, &err) != POLYLIMIT_OK) die("client", err);
  polylimit_limiter* open_limit = nullptr;  // nothing reaches it
  polylimit_limiter* used_up = nullptr;     // 1/hour, each key used up below
  if (polylimit_limiter_new_spec(client, "1000000/hour", nullptr, &open_limit, &err) != POLYLIMIT_OK) die("l", err);
  if (polylimit_limiter_new_spec(client, "1/hour", nullptr, &used_up, &err) != POLYLIMIT_OK) die("l", err);
  const int kKeys = 2000;
  std::vector<std::string> ips, keys;
  for (int i = 0; i < kKeys; ++i) {
    ips.push_back("203.0." + std::to_string(i / 250) + "." + std::to_string(i % 250));
    keys.push_back("ip:" + ips.back());
  }
  for (const auto& k : keys) {
    polylimit_decision d;
    polylimit_limiter_check(used_up, k.data(), k.size(), 1, &d, &err);
  }
  const char* doc = R"({"trusted_proxies": ["127.0.0.1"], "rules": [{"name": "api", "limiter": 0}]})";
  for (bool deny : {false, true}) {
    polylimit_limiter* l = deny ? used_up : open_limit;
    polylimit_http_policy* p = nullptr;
    if (polylimit_http_policy_new(doc, std::strlen(doc), &l, 1, &p, &err) != POLYLIMIT_OK) die("policy", err);
    policies.push_back(p);
    const char* path = deny ? "deny" : "allow";
    cells.push_back({std::string("check alone, ") + path, [l, &keys, seconds] {
                       polylimit_decision d;
                       polylimit_error e;
                       return per_request(seconds, 1, [&](long long n) {
                         const auto& k = keys[static_cast<size_t>(n) % keys.size()];
                         polylimit_limiter_check(l, k.data(), k.size(), 1, &d, &e);
                       });
                     }});
    cells.push_back({std::string("polylimit_http_decide, ") + path, [p, &ips, seconds, deny] {
                       polylimit_http_request r{};
                       r.version = POLYLIMIT_HTTP_REQUEST_VERSION;
                       r.method = {"GET", 3};
                       r.path = {"/", 1};
                       r.peer = {"127.0.0.1:40000", 15};
                       polylimit_str xff{nullptr, 0};
                       r.headers = &xff;
                       r.header_count = 1;
                       polylimit_http_step step;
                       polylimit_decision d;
                       polylimit_http_response resp;
                       polylimit_error e;
                       return per_request(seconds, 1, [&](long long n) {
                         const auto& ip = ips[static_cast<size_t>(n) % ips.size()];
                         xff = {ip.data(), ip.size()};
                         polylimit_http_decide(p, &r, &step, &d, &resp, &e);
                         if (resp.status != (deny ? 429 : 0)) {
                           std::fprintf(stderr, "decide answered %d\n", resp.status);
                           std::exit(1);
                         }
                       });
                     }});
  }

  for (int run = 0; run < runs; ++run)
    for (auto& c : cells) c.stats.v.push_back(c.run());

  std::printf("polylimit %s, %d runs of %.1f s per cell, interleaved; medians (min-max)\n\n",
              polylimit_version_string(), runs, seconds);
  std::printf("The policy step (prepare + answer, no I/O), one thread:\n\n");
  std::printf("| request | us/request |\n|---|---|\n");
  size_t policy_cells = shapes.size() * 2;
  for (size_t i = 0; i < policy_cells; ++i) {
    auto& c = cells[i];
    std::printf("| %s | %.3f (%.3f-%.3f) |\n", c.name.c_str(), c.stats.median(), c.stats.lo(), c.stats.hi());
  }
  std::printf("\nOn top of the check, one thread, a local redis-server, 2,000 keys:\n\n");
  std::printf("| path | check alone us/request | decide us/request | decide - check |\n|---|---|---|---|\n");
  for (size_t i = policy_cells; i + 1 < cells.size(); i += 2) {
    auto& a = cells[i];
    auto& b = cells[i + 1];
    double ma = a.stats.median(), mb = b.stats.median();
    std::printf("| %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %+.2f |\n", i == policy_cells ? "allow" : "deny", ma,
                a.stats.lo(), a.stats.hi(), mb, b.stats.lo(), b.stats.hi(), mb - ma);
  }
  for (auto* p : policies) polylimit_http_policy_free(p);
  polylimit_limiter_free(open_limit);
  polylimit_limiter_free(used_up);
  polylimit_limiter_free(mem_limiter);
  polylimit_client_close(client);
  polylimit_client_close(memory);
  return 0;
}
