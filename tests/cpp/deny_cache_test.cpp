// The local deny cache: fewer round trips under a flood, the same admissions,
// never a local denial of what Redis would admit.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "redis_server.h"
#include "polylimit/limiter.h"

using namespace polylimit;
using namespace std::chrono_literals;

namespace {

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

LimiterOptions opts(const std::string& prefix, size_t cache, LimitParams lp) {
  LimiterOptions o;
  o.limit = lp;
  o.prefix = prefix;
  o.deny_cache_size = cache;
  return o;
}

}  // namespace

TEST(DenyCache, FloodCostsFewRoundTripsAndAdmitsTheSame) {
  for (Algorithm alg : {Algorithm::kSlidingLog, Algorithm::kGcra}) {
    auto plain_client = Client::open(server().url());
    auto cached_client = Client::open(server().url());
    LimitParams lp{alg, 5, 200};
    std::string p = std::string("flood-") + algorithm_name(alg);
    Limiter plain(plain_client, opts(p + "-plain", 0, lp));
    Limiter cached(cached_client, opts(p + "-cached", 1000, lp));
    int admitted_plain = 0, admitted_cached = 0, hits = 0, checks = 0;
    auto end = std::chrono::steady_clock::now() + 1s;
    while (std::chrono::steady_clock::now() < end) {  // ~25 admitted per second: a flood of 100x and more
      ++checks;
      if (plain.check("victim").allowed) ++admitted_plain;
      Decision d = cached.check("victim");
      if (d.allowed) ++admitted_cached;
      if (d.cached) ++hits;
      std::this_thread::sleep_for(100us);
    }
    long rt_plain = plain_client->backend().round_trips();
    long rt_cached = cached_client->backend().round_trips();
    std::printf("  %s: %d checks; admitted plain %d cached %d; round trips plain %ld cached %ld; cache hits %d\n",
                algorithm_name(alg), checks, admitted_plain, admitted_cached, rt_plain, rt_cached, hits);
    // A flood (the precondition of what follows): at least 10 checks per
    // admission even in a sanitizer build on a busy machine.
    EXPECT_GE(checks, 10 * admitted_plain);
    EXPECT_NEAR(admitted_cached, admitted_plain, 2);
    EXPECT_EQ(rt_cached + hits, checks);
    // About one round trip per admission plus a few per retry period (the
    // cache expires a millisecond early, to stay on the safe side).
    EXPECT_LE(rt_cached, admitted_cached * 12 + 20);
    EXPECT_LT(rt_cached * 5, rt_plain);
  }
}

TEST(DenyCache, ResetClearsAndSmallerCostsAskRedis) {
  auto client = Client::open(server().url());
  Limiter l(client, opts("dc-reset", 100, {Algorithm::kSlidingLog, 4, 60000}));
  ASSERT_TRUE(l.check("k", 3).allowed);
  Decision d = l.check("k", 2);  // 1 remains
  ASSERT_FALSE(d.allowed);
  EXPECT_FALSE(d.cached);
  d = l.check("k", 2);
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.cached);  // the same cost: denied locally
  EXPECT_EQ(d.remaining, 1);
  EXPECT_GT(d.retry_after_ms, 50000);
  long rt = client->backend().round_trips();
  d = l.check("k", 1);  // a smaller cost may fit: Redis decides, and admits
  EXPECT_TRUE(d.allowed);
  EXPECT_FALSE(d.cached);
  EXPECT_EQ(client->backend().round_trips(), rt + 1);
  EXPECT_TRUE(l.check("k", 3).cached);  // larger than the cached cost: still local
  l.reset("k");
  d = l.check("k", 4);  // the reset cleared the entry
  EXPECT_TRUE(d.allowed);
  EXPECT_FALSE(d.cached);
}

TEST(DenyCache, ExpiresWhenRedisWouldAdmit) {
  Limiter l(Client::open(server().url()), opts("dc-expire", 100, {Algorithm::kFixedWindow, 1, 100}));
  // Wait for denials to turn into admissions; every local denial must come
  // before the real retry point, so the admission count matches the windows.
  auto start = std::chrono::steady_clock::now();
  int admitted = 0;
  while (std::chrono::steady_clock::now() - start < 450ms) {
    if (l.check("k").allowed) ++admitted;
    std::this_thread::sleep_for(200us);
  }
  EXPECT_GE(admitted, 4);  // 100 ms windows over 450 ms
  EXPECT_LE(admitted, 6);
}

TEST(DenyCache, LruIsBounded) {
  Limiter l(Client::open("memory://"), opts("dc-lru", 2, {Algorithm::kSlidingLog, 1, 60000}));
  for (const char* k : {"a", "b", "c"}) {
    ASSERT_TRUE(l.check(k).allowed);
    ASSERT_FALSE(l.check(k).cached);
  }
  EXPECT_FALSE(l.check("a").cached);  // "a" was evicted by "c"
  EXPECT_TRUE(l.check("c").cached);
  EXPECT_TRUE(l.check("a").cached);   // re-cached just now
}
