// Per-client metrics: counters, the latency histogram, Prometheus text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "polylimit.h"
#include "redis_server.h"

TEST(Metrics, CountsEverything) {
  pltest::RedisServer server;
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server.url().c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.deny_cache_size = 10;
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new_spec(client, "20/minute", &o, &l, nullptr), POLYLIMIT_OK);
  polylimit_decision d;
  for (int i = 0; i < 25; ++i)
    ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);  // 20 admitted, 5 denied
  server.command({"SCRIPT", "FLUSH"});
  ASSERT_EQ(polylimit_limiter_check(l, "other", 5, 1, &d, nullptr), POLYLIMIT_OK);  // NOSCRIPT, reload
  const char* keys[] = {"b1", "b2"};
  size_t lens[] = {2, 2};
  polylimit_decision out[2];
  int st[2];
  ASSERT_EQ(polylimit_limiter_check_many(l, reinterpret_cast<const void* const*>(keys), lens, 2, 1, out, st, nullptr,
                                         nullptr),
            POLYLIMIT_OK);
  server.stop();
  EXPECT_NE(polylimit_limiter_check(l, "x", 1, 1, &d, nullptr), POLYLIMIT_OK);

  polylimit_stats s = POLYLIMIT_STATS_INIT;
  polylimit_error err;
  ASSERT_EQ(polylimit_client_stats(client, &s, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(s.checks, 29u);
  EXPECT_EQ(s.admitted, 23u);
  EXPECT_EQ(s.denied, 5u);
  EXPECT_EQ(s.errors, 1u);
  EXPECT_EQ(s.cache_hits, 4u);                    // the first denial went to Redis, the other four did not
  EXPECT_EQ(s.round_trips, 20u + 1 + 1 + 1 + 1);  // 20 admitted + 1 denied, 'other', the batch, the failed one
  EXPECT_EQ(s.noscript_reloads, 3u);              // a fresh server, after SCRIPT FLUSH, the batch's keys call
  EXPECT_EQ(s.near_limit, 2u);                    // the admissions that left 1 and 0 of 20
  EXPECT_EQ(s.degraded, 0u);
  EXPECT_EQ(s.latency_count, 29u);
  uint64_t in_buckets = 0;
  for (int i = 0; i < POLYLIMIT_STATS_LATENCY_BUCKETS; ++i) in_buckets += s.latency_buckets[i];
  EXPECT_EQ(in_buckets, 29u);
  EXPECT_EQ(s.latency_le_us[POLYLIMIT_STATS_LATENCY_BUCKETS - 1], UINT64_MAX);

  char* text = nullptr;
  size_t len = 0;
  ASSERT_EQ(polylimit_client_stats_prometheus(client, &text, &len, &err), POLYLIMIT_OK);
  std::string t(text, len);
  EXPECT_EQ(std::strlen(text), len);
  EXPECT_NE(t.find("polylimit_checks_total 29\n"), std::string::npos) << t;
  EXPECT_NE(t.find("polylimit_cache_hits_total 4\n"), std::string::npos);
  EXPECT_NE(t.find("polylimit_check_latency_seconds_bucket{le=\"+Inf\"} 29\n"), std::string::npos);
  EXPECT_NE(t.find("# TYPE polylimit_check_latency_seconds histogram"), std::string::npos);
  polylimit_free(text);

  // Bad input.
  EXPECT_EQ(polylimit_client_stats(nullptr, &s, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "client is NULL"), nullptr);
  EXPECT_EQ(polylimit_client_stats(client, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "out is NULL"), nullptr);
  s.version = 0;
  EXPECT_EQ(polylimit_client_stats(client, &s, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "out->version = 0"), nullptr);
  EXPECT_EQ(polylimit_client_stats_prometheus(nullptr, &text, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "client is NULL"), nullptr);
  EXPECT_EQ(polylimit_client_stats_prometheus(client, nullptr, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "out is NULL"), nullptr);
  ASSERT_EQ(polylimit_client_stats_prometheus(client, &text, nullptr, nullptr),
            POLYLIMIT_OK);  // len and err may be NULL
  polylimit_free(text);
  polylimit_limiter_free(l);
  polylimit_client_close(client);
}

namespace {

polylimit_client* open_named(const char* name) {
  polylimit_client_options o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.name = name;
  polylimit_client* c = nullptr;
  polylimit_error err;
  EXPECT_EQ(polylimit_client_open("memory://", &o, &c, &err), POLYLIMIT_OK) << err.message;
  return c;
}

void check_n(polylimit_client* c, int n) {
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new_spec(c, "2/minute", nullptr, &l, nullptr), POLYLIMIT_OK);
  polylimit_decision d;
  for (int i = 0; i < n; ++i) ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  polylimit_limiter_free(l);
}

// Every "# HELP x" and "# TYPE x" at most once: what Prometheus parsers demand.
void expect_valid_page(const std::string& page) {
  size_t pos = 0;
  std::vector<std::string> seen;
  while ((pos = page.find("# ", pos)) != std::string::npos) {
    size_t eol = page.find('\n', pos);
    std::string line = page.substr(pos, eol - pos);
    size_t sp = line.find(' ', 7);
    std::string head = line.substr(0, sp);  // "# HELP name" / "# TYPE name"
    for (const auto& s : seen) EXPECT_NE(s, head) << "repeated: " << head;
    seen.push_back(head);
    pos = eol;
  }
  EXPECT_GT(seen.size(), 20u);
}

}  // namespace

TEST(Metrics, NamedClientsShareOnePage) {
  polylimit_client* api = open_named("api");
  polylimit_client* jobs = open_named("jobs/batch");
  check_n(api, 3);  // 2 admitted, 1 denied
  check_n(jobs, 1);

  char* text = nullptr;
  size_t len = 0;
  polylimit_error err;
  ASSERT_EQ(polylimit_client_stats_prometheus(api, &text, &len, &err), POLYLIMIT_OK);
  std::string one(text, len);
  polylimit_free(text);
  EXPECT_NE(one.find("polylimit_checks_total{client=\"api\"} 3\n"), std::string::npos) << one;
  EXPECT_NE(one.find("polylimit_check_latency_seconds_bucket{client=\"api\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(one.find("polylimit_check_latency_seconds_count{client=\"api\"} 3\n"), std::string::npos);

  polylimit_client* both[] = {api, jobs};
  ASSERT_EQ(polylimit_clients_stats_prometheus(both, 2, &text, &len, &err), POLYLIMIT_OK) << err.message;
  std::string page(text, len);
  polylimit_free(text);
  expect_valid_page(page);
  EXPECT_NE(page.find("polylimit_denied_total{client=\"api\"} 1\npolylimit_denied_total{client=\"jobs/batch\"} 0\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("polylimit_check_latency_seconds_count{client=\"jobs/batch\"} 1\n"), std::string::npos);
  // The bug this fixes: two single pages glued together repeat every HELP.
  EXPECT_EQ(std::count(page.begin(), page.end(), '#'), 2 * 17);  // HELP and TYPE of 17 families

  // Bad input names the client.
  polylimit_client* unnamed = nullptr;
  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &unnamed, nullptr), POLYLIMIT_OK);
  polylimit_client* three[] = {api, unnamed, jobs};
  EXPECT_EQ(polylimit_clients_stats_prometheus(three, 3, &text, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "clients[1] has no name"), nullptr) << err.message;
  polylimit_client* twice[] = {api, jobs, api};
  EXPECT_EQ(polylimit_clients_stats_prometheus(twice, 3, &text, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "clients[2] and clients[0] are both named 'api'"), nullptr) << err.message;
  EXPECT_EQ(polylimit_clients_stats_prometheus(both, 0, &text, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "n = 0 is out of range"), nullptr) << err.message;
  polylimit_client* with_null[] = {api, nullptr};
  EXPECT_EQ(polylimit_clients_stats_prometheus(with_null, 2, &text, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "clients[1] is NULL"), nullptr) << err.message;
  EXPECT_EQ(polylimit_clients_stats_prometheus(nullptr, 1, &text, &len, &err), POLYLIMIT_EINVALID);
  // One unnamed client alone is fine (no labels).
  ASSERT_EQ(polylimit_clients_stats_prometheus(&unnamed, 1, &text, nullptr, nullptr), POLYLIMIT_OK);
  EXPECT_NE(std::string(text).find("\npolylimit_checks_total 0\n"), std::string::npos);
  polylimit_free(text);
  polylimit_client_close(unnamed);
  polylimit_client_close(api);
  polylimit_client_close(jobs);
}
