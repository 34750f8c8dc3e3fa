// Every algorithm on Redis and in memory: the same client-clock sequence gives
// the same decisions from both (edges, cost > remaining, several limits),
// exactness under threads, and the sliding counter's documented error bound.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <random>
#include <thread>

#include "backend/memory_backend.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_server.h"

using namespace polylimit;

namespace {

constexpr int64_t kT0 = 1700000000000000;  // a window-aligned microsecond (for 1 s windows)

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

std::string unique_prefix() {
  static std::atomic<int> n{0};
  return "alg" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" + std::to_string(++n);
}

LimiterOptions options(std::vector<LimitParams> limits) {
  LimiterOptions o;
  o.limits = std::move(limits);
  o.prefix = unique_prefix();
  return o;
}

LimiterOptions options(std::vector<LimitParams> limits, int64_t block_ms) {
  LimiterOptions o = options(std::move(limits));
  o.block_ms = block_ms;
  return o;
}

struct Pair {
  Limiter redis;
  Limiter memory;
  Pair(const std::vector<LimitParams>& limits, std::shared_ptr<Client> mem = Client::open("memory://"),
       int64_t block_ms = 0)
      : redis(Client::open(server().url()), options(limits, block_ms)),
        memory(std::move(mem), options(limits, block_ms)) {}
};

void expect_same(const Decision& a, const Decision& b, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(a.allowed, b.allowed);
  EXPECT_EQ(a.limit, b.limit);
  EXPECT_EQ(a.remaining, b.remaining);
  EXPECT_EQ(a.retry_after_ms, b.retry_after_ms);
  EXPECT_EQ(a.reset_after_ms, b.reset_after_ms);
}

Decision op_at(Op op, Limiter& l, Client& c, std::string_view key, int64_t cost, int64_t now_us) {
  Request r;
  r.op = op;
  r.limits = &l.limits();
  r.keys = l.storage_keys(key);
  r.cost = cost;
  r.now_us = now_us;
  if (l.options().block_ms > 0) {
    r.block_us = l.options().block_ms * 1000;
    r.block_key = r.keys[0] + ":block";
  }
  return c.backend().evaluate(r);
}

Decision peek_at(Limiter& l, Client& c, std::string_view key, int64_t now_us) {
  return op_at(Op::kPeek, l, c, key, 1, now_us);
}

class EveryAlgorithm : public ::testing::TestWithParam<Algorithm> {};

std::string name_of(const ::testing::TestParamInfo<Algorithm>& info) { return algorithm_name(info.param); }

}  // namespace

INSTANTIATE_TEST_SUITE_P(Algorithms, EveryAlgorithm,
                         ::testing::Values(Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow,
                                           Algorithm::kGcra),
                         name_of);

// A hand-written sequence with window edges (t = 999999, 1000000 us) and
// costs larger than what remains.
TEST_P(EveryAlgorithm, ScriptedSequenceSameOnRedisAndMemory) {
  auto mem = Client::open("memory://");
  Pair p({{GetParam(), 4, 1000}}, mem);
  const std::vector<std::tuple<int64_t, const char*, int64_t>> steps = {
      {0, "a", 1},       {0, "a", 2},       {100000, "a", 1},  {100000, "b", 4},  {200000, "a", 1},  {300000, "a", 2},
      {500000, "b", 1},  {999999, "a", 1},  {1000000, "a", 1}, {1000000, "a", 2}, {1000000, "a", 4}, {1100000, "a", 3},
      {1100001, "a", 1}, {1250000, "b", 3}, {1500000, "a", 2}, {1999999, "a", 1}, {2000000, "a", 4}, {2000000, "a", 1},
      {2300000, "a", 1}, {2999999, "b", 4}, {3000000, "b", 4}, {5000000, "a", 4}, {5000000, "a", 1}, {6000001, "a", 3}};
  for (size_t i = 0; i < steps.size(); ++i) {
    auto [offset, key, cost] = steps[i];
    Decision a = p.redis.check_at(key, cost, kT0 + offset);
    Decision b = p.memory.check_at(key, cost, kT0 + offset);
    expect_same(a, b, "step " + std::to_string(i));
    Decision pa = peek_at(p.redis, *Client::open(server().url()), key, kT0 + offset);
    Decision pb = peek_at(p.memory, *mem, key, kT0 + offset);
    expect_same(pa, pb, "peek after step " + std::to_string(i));
  }
}

// Random (time, key, cost) sequences, including a clock that steps back, for
// one limit and for three limits at once.
TEST_P(EveryAlgorithm, RandomSequencesSameOnRedisAndMemory) {
  // Rounds: one limit; three limits; one limit with a punitive block.
  for (int round = 0; round < 3; ++round) {
    std::vector<LimitParams> limits = {{GetParam(), 7, 1000}};
    if (round == 1) limits = {{GetParam(), 3, 200}, {GetParam(), 10, 1000}, {GetParam(), 20, 5000}};
    if (GetParam() == Algorithm::kGcra) limits[0].burst = 2;
    auto mem = Client::open("memory://");
    Pair p(limits, mem, round == 2 ? 300 : 0);
    auto redis_client = Client::open(server().url());
    std::mt19937_64 rng(1234 + round);
    int64_t t = kT0 + 12345;
    int64_t cap = limits[0].capacity();
    for (int i = 0; i < 400; ++i) {
      int64_t step = static_cast<int64_t>(rng() % 120000);
      if (rng() % 10 == 0) step = static_cast<int64_t>(rng() % 1500000);
      if (rng() % 25 == 0) step = -static_cast<int64_t>(rng() % 50000);  // a client clock steps back
      t += step;
      std::string key = std::string("k") + std::to_string(rng() % 3);
      int64_t cost = 1 + static_cast<int64_t>(rng() % cap);
      Decision a = p.redis.check_at(key, cost, t);
      Decision b = p.memory.check_at(key, cost, t);
      expect_same(a, b, "round " + std::to_string(round) + " step " + std::to_string(i));
      if (i % 7 == 0)
        expect_same(peek_at(p.redis, *redis_client, key, t), peek_at(p.memory, *mem, key, t),
                    "peek at step " + std::to_string(i));
      if (i % 5 == 0) {  // a refund of some units
        int64_t units = 1 + static_cast<int64_t>(rng() % 3);
        expect_same(op_at(Op::kRefund, p.redis, *redis_client, key, units, t),
                    op_at(Op::kRefund, p.memory, *mem, key, units, t), "refund at step " + std::to_string(i));
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// Threads hammer one key at one timestamp: exactly the capacity is admitted.
TEST_P(EveryAlgorithm, ExactUnderThreads) {
  for (const char* url : {"redis", "memory"}) {
    LimitParams lp{GetParam(), 200, 3600 * 1000};
    std::shared_ptr<Client> c =
        std::string(url) == "redis" ? Client::open(server().url(), ClientOptions{{16}}) : Client::open("memory://");
    Limiter l(c, options({lp}));
    std::atomic<int> admitted{0};
    std::vector<std::thread> threads;
    for (int th = 0; th < 16; ++th)
      threads.emplace_back([&] {
        for (int i = 0; i < 30; ++i)
          if (l.check_at("hot", 1, kT0 + 1000).allowed) ++admitted;
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(admitted.load(), 200) << url;
  }
}

// The server clock: GCRA admits its burst then the rate; the others their limit.
TEST_P(EveryAlgorithm, ServerClockAllowThenDeny) {
  Limiter l(Client::open(server().url()), options({{GetParam(), 3, 60000}}));
  for (int i = 0; i < 3; ++i) {
    Decision d = l.check("k");
    ASSERT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.remaining, 2 - i);
  }
  Decision d = l.check("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.retry_after_ms, 0);
  EXPECT_LE(d.retry_after_ms, 120000);
  EXPECT_GE(d.reset_after_ms, d.retry_after_ms);
  Decision pk = l.peek("k");
  EXPECT_FALSE(pk.allowed);
  l.reset("k");
  EXPECT_TRUE(l.check("k").allowed);
}

// Several limits: a denial by one consumes nothing from the others.
TEST_P(EveryAlgorithm, MultiLimitDenialConsumesNothing) {
  for (const char* url : {"redis", "memory"}) {
    std::shared_ptr<Client> c = std::string(url) == "redis" ? Client::open(server().url()) : Client::open("memory://");
    // 2 per second AND 5 per minute
    Limiter l(c, options({{GetParam(), 2, 1000}, {GetParam(), 5, 60000}}));
    int64_t t = kT0;
    EXPECT_TRUE(l.check_at("k", 2, t).allowed);
    Decision d = l.check_at("k", 1, t + 10);  // the 2/s limit denies
    EXPECT_FALSE(d.allowed) << url;
    EXPECT_EQ(d.limit, 2) << url;
    EXPECT_GT(d.retry_after_ms, 0);
    // Nothing was taken from the per-minute limit: 3 remain there.
    Request r;
    r.op = Op::kPeek;
    std::vector<LimitParams> minute{l.limits()[1]};
    r.limits = &minute;
    r.keys = {l.storage_keys("k")[1]};
    r.now_us = t + 10;
    Decision m = c->backend().evaluate(r);
    EXPECT_EQ(m.remaining, 3) << url;
    // After a second the small limit admits again, then the minute limit is
    // the tightest (the sliding counter still weighs the previous second).
    if (GetParam() == Algorithm::kSlidingCounter) continue;
    t += 2000000;
    d = l.check_at("k", 2, t);
    EXPECT_TRUE(d.allowed) << url;
    d = l.check_at("k", 1, t + 1100000);
    EXPECT_TRUE(d.allowed) << url;
    EXPECT_EQ(d.limit, 5) << url;
    EXPECT_EQ(d.remaining, 0) << url;
    d = l.check_at("k", 1, t + 2200000);
    EXPECT_FALSE(d.allowed) << url;
    EXPECT_EQ(d.limit, 5) << url;
    EXPECT_GT(d.retry_after_ms, 5000) << url;
  }
}

TEST(SlidingLog, ExactInEverySlidingWindow) {
  // The reference the approximate algorithms are measured against.
  Limiter l(Client::open("memory://"), options({{Algorithm::kSlidingLog, 10, 1000}}));
  std::mt19937_64 rng(7);
  std::deque<int64_t> admitted;
  int64_t t = kT0;
  for (int i = 0; i < 20000; ++i) {
    t += static_cast<int64_t>(rng() % 60000);
    if (l.check_at("k", 1, t).allowed) {
      admitted.push_back(t);
      while (admitted.front() <= t - 1000000) admitted.pop_front();
      ASSERT_LE(admitted.size(), 10u);
    }
  }
}

// The documented bound: in any window, at most limit + p*f units pass, p the
// previous fixed window's count, f the elapsed fraction: always < 2*limit.
TEST(SlidingCounter, ErrorBoundHolds) {
  const int64_t limit = 50, window = 1000000;
  Limiter l(Client::open("memory://"), options({{Algorithm::kSlidingCounter, limit, window / 1000}}));
  std::mt19937_64 rng(11);
  std::vector<int64_t> admitted;
  int64_t t = kT0;
  size_t worst = 0;
  for (int i = 0; i < 60000; ++i) {
    // Bursty arrivals: quiet stretches, then floods near window ends.
    int64_t phase = (t - kT0) % window;
    t += phase > window * 9 / 10 ? static_cast<int64_t>(rng() % 300) : static_cast<int64_t>(rng() % 40000);
    if (!l.check_at("k", 1, t).allowed) continue;
    admitted.push_back(t);
    // Units in (t - window, t], and the bound for this instant.
    size_t in_window = admitted.end() - std::upper_bound(admitted.begin(), admitted.end(), t - window);
    int64_t start = t - (t % window);
    int64_t prev = std::upper_bound(admitted.begin(), admitted.end(), start - 1) -
                   std::upper_bound(admitted.begin(), admitted.end(), start - window - 1);
    double f = static_cast<double>(t - start) / window;
    ASSERT_LE(static_cast<double>(in_window), limit + prev * f + 1) << "at step " << i;
    ASSERT_LT(in_window, static_cast<size_t>(2 * limit));
    worst = std::max(worst, in_window);
  }
  std::printf("  sliding counter: worst sliding-window count %zu for limit %lld\n", worst,
              static_cast<long long>(limit));
  // Over the long run the rate holds: admitted per window on average <= limit.
  double windows = static_cast<double>(t - kT0) / window;
  EXPECT_LE(admitted.size() / windows, limit * 1.01);
}

TEST(FixedWindow, BurstAtEdgeIsTheDocumentedWeakness) {
  Limiter l(Client::open("memory://"), options({{Algorithm::kFixedWindow, 5, 1000}}));
  EXPECT_TRUE(l.check_at("k", 5, kT0 + 999999).allowed);
  Decision d = l.check_at("k", 1, kT0 + 999999);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 1);                          // 1 us to the edge, rounded up
  EXPECT_TRUE(l.check_at("k", 5, kT0 + 1000000).allowed);  // a new window
}

TEST(Gcra, BurstThenSteadyRate) {
  LimitParams lp{Algorithm::kGcra, 10, 1000, 3};  // 10/s, bursts of 3
  Limiter l(Client::open("memory://"), options({lp}));
  for (int i = 0; i < 3; ++i) {
    Decision d = l.check_at("k", 1, kT0);
    ASSERT_TRUE(d.allowed);
    EXPECT_EQ(d.limit, 3);
    EXPECT_EQ(d.remaining, 2 - i);
  }
  Decision d = l.check_at("k", 1, kT0);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 100);  // one emission interval
  EXPECT_EQ(d.reset_after_ms, 300);
  EXPECT_TRUE(l.check_at("k", 1, kT0 + 100000).allowed);
  EXPECT_FALSE(l.check_at("k", 1, kT0 + 150000).allowed);
  EXPECT_TRUE(l.check_at("k", 1, kT0 + 200000).allowed);
  // Over 10 s at full demand: the burst plus 10 per second.
  int admitted = 0;
  for (int64_t ms = 201; ms <= 10200; ++ms)
    if (l.check_at("k", 1, kT0 + ms * 1000).allowed) ++admitted;
  EXPECT_EQ(admitted, 100);
}

TEST(Gcra, CostAboveBurstIsRejected) {
  Limiter l(Client::open("memory://"), options({{Algorithm::kGcra, 10, 1000, 3}}));
  try {
    l.check("k", 4);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("exceeds burst = 3"), std::string::npos) << e.what();
  }
}

TEST(Limits, BadParamsAreRejected) {
  auto c = Client::open("memory://");
  auto expect_invalid = [&](std::vector<LimitParams> limits, const std::string& fragment) {
    try {
      Limiter l(c, options(limits));
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_invalid({{Algorithm::kFixedWindow, 10, 1000, 5}}, "burst = 5 is only for the gcra");
  expect_invalid({{Algorithm::kGcra, 10, 1000, -1}}, "burst = -1");
  expect_invalid({{Algorithm::kGcra, 10, 1000, kMaxLimit + 1}}, "burst");
  expect_invalid({{Algorithm::kGcra, 1, kMaxWindowMs, kMaxLimit}}, "too long");
  expect_invalid({{Algorithm::kGcra, 10, 1000}, {Algorithm::kFixedWindow, 10, 1000}}, "one algorithm per limiter");
  expect_invalid({{Algorithm::kGcra, 10, 1000}, {Algorithm::kGcra, 0, 1000}}, "limits[1]: limit = 0");
  expect_invalid(std::vector<LimitParams>(17, {Algorithm::kGcra, 10, 1000}), "limits = 17 is out of range 1..16");
}

TEST_P(EveryAlgorithm, RefundGivesUnitsBack) {
  for (const char* url : {"redis", "memory"}) {
    std::shared_ptr<Client> c = std::string(url) == "redis" ? Client::open(server().url()) : Client::open("memory://");
    Limiter l(c, options({{GetParam(), 5, 60000}}));
    ASSERT_TRUE(l.check("k", 5).allowed);
    ASSERT_FALSE(l.check("k").allowed);
    Decision d = l.refund("k", 2);
    EXPECT_TRUE(d.allowed) << url;
    EXPECT_EQ(d.remaining, 2) << url;
    EXPECT_TRUE(l.check("k", 2).allowed) << url;
    EXPECT_FALSE(l.check("k").allowed) << url;
    d = l.refund("k", 100);  // more than was taken: back to full, no further
    EXPECT_EQ(d.remaining, 5) << url;
  }
}

TEST_P(EveryAlgorithm, PunitiveBlock) {
  for (const char* url : {"redis", "memory"}) {
    std::shared_ptr<Client> c = std::string(url) == "redis" ? Client::open(server().url()) : Client::open("memory://");
    LimiterOptions o = options({{GetParam(), 2, 1000}}, /*block_ms=*/10000);
    Limiter l(c, o);
    ASSERT_TRUE(l.check_at("k", 2, kT0).allowed);
    Decision d = l.check_at("k", 1, kT0 + 1000);  // denied: the block starts
    EXPECT_FALSE(d.allowed) << url;
    EXPECT_EQ(d.retry_after_ms, 10000) << url;
    d = l.check_at("k", 1, kT0 + 5000000);  // the limit would admit; the block denies
    EXPECT_FALSE(d.allowed) << url;
    EXPECT_EQ(d.retry_after_ms, 5001) << url;
    EXPECT_TRUE(l.check_at("k", 1, kT0 + 10001000).allowed) << url;  // the block is over
    l.reset("k");
  }
}

// Threads race at each instant of a schedule: the number admitted at every
// instant equals a sequential replay on the memory backend (so concurrency
// neither over- nor under-admits), and the sliding counter's bound holds.
TEST_P(EveryAlgorithm, ConcurrentScheduleMatchesSequentialReplay) {
  const LimitParams lp{GetParam(), 20, 1000};
  Limiter redis(Client::open(server().url(), ClientOptions{{8}}), options({lp}));
  Limiter memory(Client::open("memory://"), options({lp}));
  std::mt19937_64 rng(99);
  int64_t t = kT0;
  std::vector<std::pair<int64_t, int>> admitted_at;  // (time, units admitted then)
  for (int step = 0; step < 40; ++step) {
    t += 20000 + static_cast<int64_t>(rng() % 150000);
    std::atomic<int> got{0};
    std::vector<std::thread> threads;
    for (int th = 0; th < 8; ++th)
      threads.emplace_back([&] {
        for (int i = 0; i < 3; ++i)
          if (redis.check_at("hot", 1, t).allowed) ++got;
      });
    for (auto& th : threads) th.join();
    int expected = 0;
    for (int i = 0; i < 24; ++i)
      if (memory.check_at("hot", 1, t).allowed) ++expected;
    ASSERT_EQ(got.load(), expected) << "step " << step;
    admitted_at.push_back({t, got.load()});
  }
  // Units admitted in any window of 1 s ending at an instant of the schedule.
  for (size_t i = 0; i < admitted_at.size(); ++i) {
    int in_window = 0;
    for (size_t j = 0; j <= i; ++j)
      if (admitted_at[j].first > admitted_at[i].first - 1000000) in_window += admitted_at[j].second;
    if (GetParam() == Algorithm::kSlidingLog) EXPECT_LE(in_window, 20);
    if (GetParam() == Algorithm::kSlidingCounter) EXPECT_LT(in_window, 40);  // < 2 x limit
    if (GetParam() == Algorithm::kFixedWindow) EXPECT_LE(in_window, 40);     // 2 x limit across an edge
    if (GetParam() == Algorithm::kGcra) EXPECT_LE(in_window, 20 + 20);       // burst + rate over the window
  }
}
