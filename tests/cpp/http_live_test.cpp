// Limits and plans in the policy document, TOML, and the live policy:
// reload, the watched file, the plan resolver's cache (docs/policy.md).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "polylimit.h"

namespace {

const char* kPlans = R"(# plans: free and pro
version = 1
prefix = "t"
default_plan = "free"

[plans.free]
api = "10/minute"
[plans.pro]
api = "100/minute"

[tenants]
acme = "pro"

[[rules]]
name = "api"
paths = ["/api/*"]
key = "tenant"
limit = "plan"

[[rules]]
name = "login"
paths = ["/login"]
limit = "3/minute"
algorithm = "gcra"
)";

struct Client {
  polylimit_client* client = nullptr;
  Client() {
    polylimit_error err;
    EXPECT_EQ(polylimit_client_open("memory://", nullptr, &client, &err), POLYLIMIT_OK);
  }
  ~Client() { polylimit_client_close(client); }
};

polylimit_http_request request(const char* path, const char* tenant, const char* plan = nullptr) {
  polylimit_http_request r{};
  r.version = POLYLIMIT_HTTP_REQUEST_VERSION;
  r.method = {"GET", 3};
  r.path = {path, std::strlen(path)};
  r.peer = {"192.0.2.1", 9};
  if (tenant != nullptr) r.tenant = {tenant, std::strlen(tenant)};
  if (plan != nullptr) r.plan = {plan, std::strlen(plan)};
  return r;
}

// Decides `n` requests; returns how many went on.
int admitted(polylimit_http_policy* p, const polylimit_http_request& r, int n) {
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    polylimit_http_step step;
    polylimit_decision d;
    polylimit_http_response resp;
    polylimit_error err;
    EXPECT_EQ(polylimit_http_decide(p, &r, &step, &d, &resp, &err), POLYLIMIT_OK) << err.message;
    EXPECT_EQ(err.code, 0) << err.message;
    if (resp.status == 0) ++ok;
  }
  return ok;
}

int admitted(polylimit_http_live* live, const polylimit_http_request& r, int n) {
  polylimit_http_policy* p = polylimit_http_live_current(live);
  int ok = admitted(p, r, n);
  polylimit_http_policy_free(p);
  return ok;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(HttpPlans, EachTenantGetsItsPlansLimit) {
  Client c;
  polylimit_http_policy* p = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_http_policy_load(c.client, kPlans, std::strlen(kPlans), nullptr, 0, &p, &err), POLYLIMIT_OK)
      << err.message;
  EXPECT_EQ(polylimit_http_policy_limiter_count(p), 3u);  // api free, api pro, login
  EXPECT_EQ(admitted(p, request("/api/x", "acme"), 120), 100);
  EXPECT_EQ(admitted(p, request("/api/x", "globex"), 20), 10);  // not in the table: the default plan
  EXPECT_EQ(admitted(p, request("/api/x", nullptr), 20), 0);    // no tenant: a missing credential (401)
  EXPECT_EQ(admitted(p, request("/login", nullptr), 5), 3);     // the rule's own limit
  // The application's plan wins over the default; an unknown one is the default.
  EXPECT_EQ(admitted(p, request("/api/y", "initech", "pro"), 101), 100);
  EXPECT_EQ(admitted(p, request("/api/y", "umbrella", "platinum"), 11), 10);
  // The step names the limiter; the headers name the rule and the plan's limit.
  polylimit_http_request r = request("/api/z", "acme");
  polylimit_http_step step;
  ASSERT_EQ(polylimit_http_prepare(p, &r, &step, &err), POLYLIMIT_OK);
  ASSERT_EQ(step.action, POLYLIMIT_HTTP_CHECK);
  EXPECT_EQ(std::string(step.key, step.key_len), "tenant:acme");
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_http_policy_limiter(p, static_cast<size_t>(step.limiter), &l, &err), POLYLIMIT_OK);
  polylimit_decision d;
  ASSERT_EQ(polylimit_limiter_check(l, step.key, step.key_len, 1, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.limit, 100);
  polylimit_http_response resp;
  ASSERT_EQ(polylimit_http_answer(p, &step, &d, &resp, &err), POLYLIMIT_OK);
  EXPECT_NE(std::string(resp.headers).find("RateLimit-Policy: \"api\";q=100;w=60"), std::string::npos) << resp.headers;
  polylimit_limiter_free(l);
  EXPECT_NE(polylimit_http_policy_limiter(p, 99, &l, &err), POLYLIMIT_OK);
  polylimit_http_policy_free(p);
}

TEST(HttpPlans, AResolverIsAskedOnlyForTenantsTheDocumentDoesNotName) {
  Client c;
  std::string doc = std::string(kPlans) + "\n[resolver]\ntimeout_ms = 20\ncache_ttl_ms = 50\ncache_size = 2\n";
  polylimit_http_live* live = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_http_live_new(c.client, doc.data(), doc.size(), nullptr, 0, &live, &err), POLYLIMIT_OK)
      << err.message;
  polylimit_http_policy* p = polylimit_http_live_current(live);
  EXPECT_EQ(polylimit_http_policy_resolver_timeout_ms(p), 20);
  polylimit_http_step step;
  polylimit_http_request r = request("/api/x", "globex");
  ASSERT_EQ(polylimit_http_prepare(p, &r, &step, &err), POLYLIMIT_OK);
  EXPECT_EQ(step.action, POLYLIMIT_HTTP_NEED_PLAN);
  r = request("/api/x", "acme");  // in the tenants table
  ASSERT_EQ(polylimit_http_prepare(p, &r, &step, &err), POLYLIMIT_OK);
  EXPECT_EQ(step.action, POLYLIMIT_HTTP_CHECK);
  r = request("/api/x", "globex", "");  // a binding without a resolver: the default plan
  ASSERT_EQ(polylimit_http_prepare(p, &r, &step, &err), POLYLIMIT_OK);
  EXPECT_EQ(step.action, POLYLIMIT_HTTP_CHECK);
  // The cache: fresh answers only, at most cache_size tenants.
  char plan[16];
  EXPECT_EQ(polylimit_http_live_cached_plan(live, "globex", 6, plan, sizeof plan), 0);
  ASSERT_EQ(polylimit_http_live_cache_plan(live, "globex", 6, "pro", 3, &err), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_http_live_cached_plan(live, "globex", 6, plan, sizeof plan), 1);
  EXPECT_STREQ(plan, "pro");
  ASSERT_EQ(polylimit_http_live_cache_plan(live, "a", 1, "free", 4, &err), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_http_live_cache_plan(live, "b", 1, "free", 4, &err), POLYLIMIT_OK);  // drops globex
  EXPECT_EQ(polylimit_http_live_cached_plan(live, "globex", 6, plan, sizeof plan), 0);
  EXPECT_EQ(polylimit_http_live_cached_plan(live, "b", 1, plan, sizeof plan), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(polylimit_http_live_cached_plan(live, "b", 1, plan, sizeof plan), 0);  // older than 50 ms
  polylimit_http_policy_free(p);
  // A service with no resolver refuses a document that asks for one: now,
  // and in a later reload.
  EXPECT_EQ(polylimit_http_live_set_has_resolver(live, 0, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("gave no plan resolver"), std::string::npos) << err.message;
  polylimit_http_live_free(live);
  ASSERT_EQ(polylimit_http_live_new(c.client, kPlans, std::strlen(kPlans), nullptr, 0, &live, &err), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_http_live_set_has_resolver(live, 0, &err), POLYLIMIT_OK);
  EXPECT_EQ(polylimit_http_live_reload(live, doc.data(), doc.size(), &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("gave no plan resolver"), std::string::npos) << err.message;
  EXPECT_EQ(polylimit_http_live_generation(live), 1u);
  polylimit_http_live_free(live);
}

TEST(HttpLive, AReloadKeepsEachKeysStateAndRefusesBrokenDocuments) {
  Client c;
  polylimit_http_live* live = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_http_live_new(c.client, kPlans, std::strlen(kPlans), nullptr, 0, &live, &err), POLYLIMIT_OK);
  EXPECT_EQ(polylimit_http_live_generation(live), 1u);
  polylimit_http_request free_tenant = request("/api/x", "globex");
  EXPECT_EQ(admitted(live, free_tenant, 15), 10);
  // A request that took the policy before the reload finishes on it.
  polylimit_http_policy* before = polylimit_http_live_current(live);
  std::string twenty = replace(kPlans, "api = \"10/minute\"", "api = \"20/minute\"");
  ASSERT_EQ(polylimit_http_live_reload(live, twenty.data(), twenty.size(), &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(polylimit_http_live_generation(live), 2u);
  EXPECT_EQ(admitted(before, free_tenant, 1), 0);  // the old limit, 10
  EXPECT_EQ(admitted(live, free_tenant, 15), 10);  // up to 20 in the window: the 10 used count
  polylimit_http_policy_free(before);
  // A broken document: refused with its line, the old policy stays.
  std::string broken = replace(twenty, "limit = \"3/minute\"", "limit = \"3/fortnight\"");
  EXPECT_EQ(polylimit_http_live_reload(live, broken.data(), broken.size(), &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("policy line 23: rules[1] (\"login\").limit"), std::string::npos)
      << err.message;
  std::string syntax = twenty + "\n[plans.free\n";
  EXPECT_EQ(polylimit_http_live_reload(live, syntax.data(), syntax.size(), &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("policy line 26"), std::string::npos) << err.message;
  EXPECT_EQ(polylimit_http_live_generation(live), 2u);
  char* last = nullptr;
  size_t len = 0;
  ASSERT_EQ(polylimit_http_live_last_error(live, &last, &len, &err), POLYLIMIT_OK);
  EXPECT_NE(std::string(last, len).find("line 26"), std::string::npos);
  polylimit_free(last);
  EXPECT_EQ(admitted(live, request("/api/x", "initech"), 25), 20);
  // Counters go on across reloads; the refused documents are counted.
  char* text = nullptr;
  ASSERT_EQ(polylimit_http_live_metrics_prometheus(live, &text, &len, &err), POLYLIMIT_OK);
  std::string m(text, len);
  polylimit_free(text);
  EXPECT_NE(m.find("polylimit_http_requests_total{rule=\"api\",outcome=\"allowed\"} 40\n"), std::string::npos) << m;
  EXPECT_NE(m.find("polylimit_http_policy_reloads_total{result=\"refused\"} 2\n"), std::string::npos) << m;
  polylimit_http_live_free(live);
}

TEST(HttpLive, AWatchedFileIsReloadedWhenItChanges) {
  Client c;
  char dir[] = "/tmp/polylimit-live-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/policy.toml";
  auto write = [&](const std::string& text) {
    const std::string tmp = path + ".new";
    std::ofstream(tmp) << text;
    ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0);  // as editors and config tools do
  };
  write(kPlans);
  polylimit_http_live* live = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_http_live_open(c.client, path.c_str(), nullptr, 0, 20, &live, &err), POLYLIMIT_OK) << err.message;
  polylimit_http_request r = request("/api/x", "globex");
  EXPECT_EQ(admitted(live, r, 12), 10);
  auto wait_for_generation = [&](uint64_t g) {
    for (int i = 0; i < 100 && polylimit_http_live_generation(live) < g; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return polylimit_http_live_generation(live);
  };
  write(replace(kPlans, "api = \"10/minute\"", "api = \"20/minute\""));
  ASSERT_EQ(wait_for_generation(2), 2u) << "not reloaded within a second";
  EXPECT_EQ(admitted(live, r, 12), 10);
  // A broken file: remembered, the policy stays; fixed again: reloaded.
  write("[[rules]]\nname = \"x\"\nlimit = 5\n");
  for (int i = 0; i < 100; ++i) {
    char* last = nullptr;
    size_t len = 0;
    polylimit_http_live_last_error(live, &last, &len, &err);
    std::string e(last, len);
    polylimit_free(last);
    if (!e.empty()) {
      EXPECT_NE(e.find("policy line 3: rules[0] (\"x\").limit"), std::string::npos) << e;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(polylimit_http_live_generation(live), 2u);
  EXPECT_EQ(admitted(live, request("/api/x", "hooli"), 21), 20);
  write(replace(kPlans, "api = \"10/minute\"", "api = \"30/minute\""));
  ASSERT_EQ(wait_for_generation(3), 3u);
  EXPECT_EQ(admitted(live, r, 12), 10);
  polylimit_http_live_free(live);
  std::remove(path.c_str());
  rmdir(dir);
}

TEST(HttpPlans, DocumentErrorsNameTheLineAndTheProblem) {
  Client c;
  struct Case {
    std::string doc, error;
  } cases[] = {
      {replace(kPlans, "default_plan = \"free\"", "default_plan = \"gold\""),
       "policy line 4: default_plan: must name one of the plans (free, pro)"},
      {replace(kPlans, "acme = \"pro\"", "acme = \"platinum\""), "policy line 12: tenants.acme: must name one"},
      {replace(kPlans, "api = \"100/minute\"", "search = \"100/minute\""),
       "plans.pro: has no \"api\" limit, which rule \"api\" takes from every plan"},
      {replace(kPlans, "algorithm = \"gcra\"", "algorithm = \"leaky\""),
       "rules[1] (\"login\").algorithm: must be one of sliding_log, sliding_counter, fixed_window, gcra"},
      {replace(kPlans, "limit = \"3/minute\"", "limit = \"3/minute\"\nlimiter = 0"), "not both"},
      {R"({"rules": [{"name": "a", "limit": "plan"}]})", "\"plan\" needs \"plans\""},
      {"[[rules]]\nname = \"a\"\nlimit = \"5/minute\"\nwhen = 2024-01-01\n", "line 4"},
  };
  for (const auto& k : cases) {
    polylimit_http_policy* p = nullptr;
    polylimit_error err;
    EXPECT_EQ(polylimit_http_policy_load(c.client, k.doc.data(), k.doc.size(), nullptr, 0, &p, &err),
              POLYLIMIT_EINVALID)
        << k.doc;
    EXPECT_NE(std::string(err.message).find(k.error), std::string::npos) << err.message;
  }
  // Without a client, a document's own limits cannot be checked.
  polylimit_http_policy* p = nullptr;
  polylimit_error err;
  EXPECT_EQ(polylimit_http_policy_load(nullptr, kPlans, std::strlen(kPlans), nullptr, 0, &p, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("need a client"), std::string::npos) << err.message;
}

TEST(HttpLive, RequestsDuringReloadsSeeOnePolicyOrTheOther) {
  Client c;
  polylimit_http_live* live = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_http_live_new(c.client, kPlans, std::strlen(kPlans), nullptr, 0, &live, &err), POLYLIMIT_OK);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::string tenant = "t" + std::to_string(t);
      polylimit_http_request r = request("/api/x", tenant.c_str());
      while (!stop.load()) {
        polylimit_http_policy* p = polylimit_http_live_current(live);
        polylimit_http_step step;
        polylimit_error e;
        if (polylimit_http_prepare(p, &r, &step, &e) != POLYLIMIT_OK || step.action != POLYLIMIT_HTTP_CHECK)
          failures.fetch_add(1);
        polylimit_http_policy_free(p);
      }
    });
  std::string other = replace(kPlans, "api = \"10/minute\"", "api = \"11/minute\"");
  for (int i = 0; i < 200; ++i) {
    const std::string& d = i % 2 ? other : std::string(kPlans);
    ASSERT_EQ(polylimit_http_live_reload(live, d.data(), d.size(), &err), POLYLIMIT_OK);
  }
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(polylimit_http_live_generation(live), 201u);
  polylimit_http_live_free(live);
}

}  // namespace
