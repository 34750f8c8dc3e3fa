// Per-client metrics: counters, the latency histogram, Prometheus text.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "redis_server.h"
#include "polylimit.h"

TEST(Metrics, CountsEverything) {
  pltest::RedisServer server;
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server.url().c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.deny_cache_size = 10;
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new_spec(client, "20/minute", &o, &l, nullptr), POLYLIMIT_OK);
  polylimit_decision d;
  for (int i = 0; i < 25; ++i) ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);  // 20 admitted, 5 denied
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
  EXPECT_EQ(s.cache_hits, 4u);  // the first denial went to Redis, the other four did not
  EXPECT_EQ(s.round_trips, 20u + 1 + 1 + 1 + 1);  // 20 admitted + 1 denied, 'other', the batch, the failed one
  EXPECT_EQ(s.noscript_reloads, 2u);  // a fresh server, then after SCRIPT FLUSH
  EXPECT_EQ(s.near_limit, 2u);  // the admissions that left 1 and 0 of 20
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
  ASSERT_EQ(polylimit_client_stats_prometheus(client, &text, nullptr, nullptr), POLYLIMIT_OK);  // len and err may be NULL
  polylimit_free(text);
  polylimit_limiter_free(l);
  polylimit_client_close(client);
}
