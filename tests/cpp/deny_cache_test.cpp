// The local deny cache: fewer round trips under a flood, the same admissions,
// never a local denial of what Redis would admit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "polylimit/limiter.h"
#include "redis_server.h"
#include "util/clock.h"

using namespace polylimit;
using namespace std::chrono;
using namespace std::chrono_literals;

namespace {

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

constexpr int64_t kT0 = 1700000000000000;  // microseconds since the epoch

// One stepped time for a test: a ManualClock that is both the client's clock
// (the deny cache reads it) and memory://'s algorithm clock, which memory://
// reads once per backend call (counted: its "round trips").
struct SteppedTime {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  const MonotonicClock::time_point start = clock->now();
  std::map<const Client*, std::shared_ptr<std::atomic<long>>> reads;

  std::shared_ptr<Client> client() {
    auto n = std::make_shared<std::atomic<long>>(0);
    ClientOptions co;
    co.clock = clock;
    co.memory_clock = [c = clock, start = start, n] {
      ++*n;
      return kT0 + duration_cast<microseconds>(c->now() - start).count();
    };
    auto client = Client::open("memory://", co);
    reads[client.get()] = n;
    return client;
  }
  long evaluations(const std::shared_ptr<Client>& c) { return reads.at(c.get())->load(); }
};

LimiterOptions opts(const std::string& prefix, size_t cache, LimitParams lp) {
  LimiterOptions o;
  o.limit = lp;
  o.prefix = prefix;
  o.deny_cache_size = cache;
  return o;
}

}  // namespace

// A flood against memory:// on one stepped time: the ManualClock is the
// client's (deny cache) and memory://'s algorithm clock, so the cache's
// promise (never deny what the backend would admit) is checked at every step.
TEST(DenyCache, FloodCostsFewRoundTripsAndAdmitsTheSame) {
  for (Algorithm alg : {Algorithm::kSlidingLog, Algorithm::kGcra}) {
    SCOPED_TRACE(algorithm_name(alg));
    SteppedTime time;
    auto plain_client = time.client();
    auto cached_client = time.client();
    LimitParams lp{alg, 5, 200};
    Limiter plain(plain_client, opts("flood-plain", 0, lp));
    Limiter cached(cached_client, opts("flood-cached", 1000, lp));
    int admitted_plain = 0, admitted_cached = 0, hits = 0, checks = 0;
    for (int step = 0; step < 10000; ++step) {  // 1 s in 100 us steps; ~25 admitted: a flood of 400x
      ++checks;
      const bool p = plain.check("victim").allowed;
      Decision d = cached.check("victim");
      if (p) ++admitted_plain;
      if (d.allowed) ++admitted_cached;
      if (d.cached) ++hits;
      ASSERT_EQ(d.allowed, p) << "at " << step * 100 << " us" << (d.cached ? " (cached)" : "");
      time.clock->advance(100us);
    }
    const long rt_plain = time.evaluations(plain_client);
    const long rt_cached = time.evaluations(cached_client);
    std::printf("  %s: %d checks; admitted plain %d cached %d; backend calls plain %ld cached %ld; cache hits %d\n",
                algorithm_name(alg), checks, admitted_plain, admitted_cached, rt_plain, rt_cached, hits);
    EXPECT_GE(checks, 10 * admitted_plain);
    EXPECT_GE(admitted_plain, 25);  // 5 per 200 ms
    EXPECT_LE(admitted_plain, 31);
    EXPECT_EQ(admitted_cached, admitted_plain);
    EXPECT_EQ(rt_plain, checks);
    EXPECT_EQ(rt_cached + hits, checks);
    EXPECT_EQ(static_cast<long>(cached_client->stats().cache_hits), hits);
    // About one backend call per admission plus ten per retry period (the
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

// Denials turn into admissions exactly when the backend admits again: one
// per 100 ms window, at the window's first step, on one stepped time.
TEST(DenyCache, ExpiresWhenTheBackendWouldAdmit) {
  SteppedTime time;
  Limiter l(time.client(), opts("dc-expire", 100, {Algorithm::kFixedWindow, 1, 100}));
  std::vector<int64_t> admitted_at_us;
  int hits = 0;
  for (int64_t t = 0; t < 450000; t += 200) {  // kT0 is a multiple of the window
    Decision d = l.check("k");
    if (d.allowed) admitted_at_us.push_back(t);
    if (d.cached) ++hits;
    time.clock->advance(200us);
  }
  EXPECT_EQ(admitted_at_us, (std::vector<int64_t>{0, 100000, 200000, 300000, 400000}));
  EXPECT_GT(hits, 2000);  // most of the 2250 checks were answered locally
}

// With Redis: an entry is served until 1 ms before the retry_after Redis
// sent, counted from the call's start on the client's clock (stepped here,
// while Redis's own clock runs on), and the first check from then on asks
// Redis again.
TEST(DenyCache, ServedUntilRetryAfterThenAsksRedis) {
  auto clock = std::make_shared<ManualClock>();
  ClientOptions co;
  co.clock = clock;
  auto client = Client::open(server().url(), co);
  Limiter l(client, opts("dc-edge", 100, {Algorithm::kSlidingLog, 1, 60000}));
  ASSERT_TRUE(l.check("k").allowed);
  Decision d = l.check("k");  // Redis denies: cached from this call's start
  ASSERT_FALSE(d.allowed);
  ASSERT_FALSE(d.cached);
  const int64_t retry_ms = d.retry_after_ms;
  ASSERT_GT(retry_ms, 59000);
  const long rt = client->backend().round_trips();
  d = l.check("k");
  EXPECT_TRUE(d.cached);
  EXPECT_EQ(d.retry_after_ms, retry_ms - 1);
  clock->advance(milliseconds(retry_ms - 1) - 1us);
  d = l.check("k");  // 1 us before expiry: still local
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.cached);
  EXPECT_EQ(d.retry_after_ms, 1);
  EXPECT_EQ(client->backend().round_trips(), rt);
  clock->advance(1us);
  d = l.check("k");  // expired: Redis answers (and, its clock barely moved, denies)
  EXPECT_FALSE(d.allowed);
  EXPECT_FALSE(d.cached);
  EXPECT_GT(d.retry_after_ms, 59000);
  EXPECT_EQ(client->backend().round_trips(), rt + 1);
  d = l.check("k");  // cached again, from the last call's start
  EXPECT_TRUE(d.cached);
  EXPECT_EQ(client->backend().round_trips(), rt + 1);
}

TEST(DenyCache, LruIsBounded) {
  Limiter l(Client::open("memory://"), opts("dc-lru", 2, {Algorithm::kSlidingLog, 1, 60000}));
  for (const char* k : {"a", "b", "c"}) {
    ASSERT_TRUE(l.check(k).allowed);
    ASSERT_FALSE(l.check(k).cached);
  }
  EXPECT_FALSE(l.check("a").cached);  // "a" was evicted by "c"
  EXPECT_TRUE(l.check("c").cached);
  EXPECT_TRUE(l.check("a").cached);  // re-cached just now
}
