// Per-client metrics: counters, the latency histogram, Prometheus text.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "redis_server.h"
#include "redlimit.h"

TEST(Metrics, CountsEverything) {
  rltest::RedisServer server;
  rl_client* client = nullptr;
  ASSERT_EQ(rl_client_open(server.url().c_str(), nullptr, &client, nullptr), RL_OK);
  rl_limiter_options o = RL_LIMITER_OPTIONS_INIT;
  o.deny_cache_size = 10;
  rl_limiter* l = nullptr;
  ASSERT_EQ(rl_limiter_new_spec(client, "20/minute", &o, &l, nullptr), RL_OK);
  rl_decision d;
  for (int i = 0; i < 25; ++i) ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);  // 20 admitted, 5 denied
  server.command({"SCRIPT", "FLUSH"});
  ASSERT_EQ(rl_check(l, "other", 5, 1, &d, nullptr), RL_OK);  // NOSCRIPT, reload
  const char* keys[] = {"b1", "b2"};
  size_t lens[] = {2, 2};
  rl_decision out[2];
  int st[2];
  ASSERT_EQ(rl_check_many(l, reinterpret_cast<const void* const*>(keys), lens, 2, 1, out, st, nullptr), RL_OK);
  server.stop();
  EXPECT_NE(rl_check(l, "x", 1, 1, &d, nullptr), RL_OK);

  rl_stats s = RL_STATS_INIT;
  rl_error err;
  ASSERT_EQ(rl_client_stats(client, &s, &err), RL_OK) << err.message;
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
  for (int i = 0; i < RL_STATS_LATENCY_BUCKETS; ++i) in_buckets += s.latency_buckets[i];
  EXPECT_EQ(in_buckets, 29u);
  EXPECT_EQ(s.latency_le_us[RL_STATS_LATENCY_BUCKETS - 1], UINT64_MAX);

  char* text = nullptr;
  size_t len = 0;
  ASSERT_EQ(rl_client_stats_prometheus(client, &text, &len, &err), RL_OK);
  std::string t(text, len);
  EXPECT_EQ(std::strlen(text), len);
  EXPECT_NE(t.find("redlimit_checks_total 29\n"), std::string::npos) << t;
  EXPECT_NE(t.find("redlimit_cache_hits_total 4\n"), std::string::npos);
  EXPECT_NE(t.find("redlimit_check_latency_seconds_bucket{le=\"+Inf\"} 29\n"), std::string::npos);
  EXPECT_NE(t.find("# TYPE redlimit_check_latency_seconds histogram"), std::string::npos);
  rl_free(text);

  // Bad input.
  EXPECT_EQ(rl_client_stats(nullptr, &s, &err), RL_EINVALID);
  EXPECT_NE(std::strstr(err.message, "client is NULL"), nullptr);
  EXPECT_EQ(rl_client_stats(client, nullptr, &err), RL_EINVALID);
  EXPECT_NE(std::strstr(err.message, "out is NULL"), nullptr);
  s.version = 0;
  EXPECT_EQ(rl_client_stats(client, &s, &err), RL_EINVALID);
  EXPECT_NE(std::strstr(err.message, "out->version = 0"), nullptr);
  EXPECT_EQ(rl_client_stats_prometheus(nullptr, &text, &len, &err), RL_EINVALID);
  EXPECT_NE(std::strstr(err.message, "client is NULL"), nullptr);
  EXPECT_EQ(rl_client_stats_prometheus(client, nullptr, &len, &err), RL_EINVALID);
  EXPECT_NE(std::strstr(err.message, "out is NULL"), nullptr);
  ASSERT_EQ(rl_client_stats_prometheus(client, &text, nullptr, nullptr), RL_OK);  // len and err may be NULL
  rl_free(text);
  rl_limiter_free(l);
  rl_client_close(client);
}
