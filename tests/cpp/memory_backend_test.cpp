// The in-process sliding-window log against a fake clock.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "backend/memory_backend.h"
#include "polylimit/limiter.h"

using namespace polylimit;

namespace {

constexpr int64_t kT0 = 1700000000000000;  // microseconds

struct FakeClock {
  std::shared_ptr<std::atomic<int64_t>> now = std::make_shared<std::atomic<int64_t>>(kT0);
  void advance_ms(int64_t ms) { *now += ms * 1000; }
  void advance_us(int64_t us) { *now += us; }
  MemoryBackend::Clock fn() const {
    auto n = now;
    return [n] { return n->load(); };
  }
};

Limiter make(FakeClock& clock, int64_t limit, int64_t window_ms) {
  ClientOptions co;
  co.memory_clock = clock.fn();
  LimiterOptions lo;
  lo.limit = {Algorithm::kSlidingLog, limit, window_ms};
  return Limiter(Client::open("memory://", co), lo);
}

}  // namespace

TEST(MemoryBackend, AdmitsUpToLimitThenDenies) {
  FakeClock clock;
  Limiter l = make(clock, 3, 1000);
  for (int i = 0; i < 3; ++i) {
    Decision d = l.check("k");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.limit, 3);
    EXPECT_EQ(d.remaining, 2 - i);
    EXPECT_EQ(d.retry_after_ms, 0);
    EXPECT_EQ(d.reset_after_ms, 1000);
  }
  Decision d = l.check("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after_ms, 1000);
}

TEST(MemoryBackend, ExactWindowEdge) {
  FakeClock clock;
  Limiter l = make(clock, 1, 1000);
  ASSERT_TRUE(l.check("k").allowed);
  clock.advance_us(999999);  // 1 us before the entry leaves
  Decision d = l.check("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 1);  // 1 us, rounded up to a millisecond
  clock.advance_us(1);             // exactly window after: the entry has left
  EXPECT_TRUE(l.check("k").allowed);
}

TEST(MemoryBackend, SlidingNotFixed) {
  FakeClock clock;
  Limiter l = make(clock, 2, 1000);
  ASSERT_TRUE(l.check("k").allowed);  // t=0
  clock.advance_ms(600);
  ASSERT_TRUE(l.check("k").allowed);  // t=600
  clock.advance_ms(300);
  Decision d = l.check("k");  // t=900: both still inside
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 100);  // the t=0 entry leaves at 1000
  EXPECT_EQ(d.reset_after_ms, 700);  // the t=600 entry leaves at 1600
  clock.advance_ms(100);
  d = l.check("k");  // t=1000
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
}

TEST(MemoryBackend, CostIsAllOrNothing) {
  FakeClock clock;
  Limiter l = make(clock, 10, 1000);
  ASSERT_TRUE(l.check("k", 4).allowed);  // t=0: 4
  clock.advance_ms(100);
  ASSERT_TRUE(l.check("k", 4).allowed);  // t=100: 8
  clock.advance_ms(100);
  Decision d = l.check("k", 3);  // 8 + 3 > 10
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 2);         // nothing consumed
  EXPECT_EQ(d.retry_after_ms, 800);  // the 4 units from t=0 must leave
  d = l.check("k", 2);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
}

TEST(MemoryBackend, RetryAfterCountsUnitsNotEntries) {
  FakeClock clock;
  Limiter l = make(clock, 5, 1000);
  ASSERT_TRUE(l.check("k", 1).allowed);  // t=0
  clock.advance_ms(100);
  ASSERT_TRUE(l.check("k", 3).allowed);  // t=100
  clock.advance_ms(100);
  ASSERT_TRUE(l.check("k", 1).allowed);  // t=200
  Decision d = l.check("k", 3);          // needs 3 out: 1 (t=0) + 3 (t=100)
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 900);  // when the t=100 entry leaves
}

TEST(MemoryBackend, PeekConsumesNothing) {
  FakeClock clock;
  Limiter l = make(clock, 2, 1000);
  Decision p = l.peek("k");
  EXPECT_TRUE(p.allowed);
  EXPECT_EQ(p.remaining, 2);
  EXPECT_EQ(p.reset_after_ms, 0);
  ASSERT_TRUE(l.check("k").allowed);
  ASSERT_TRUE(l.check("k").allowed);
  for (int i = 0; i < 3; ++i) {
    p = l.peek("k");
    EXPECT_FALSE(p.allowed);
    EXPECT_EQ(p.remaining, 0);
    EXPECT_EQ(p.retry_after_ms, 1000);
  }
}

TEST(MemoryBackend, ResetRestoresCapacity) {
  FakeClock clock;
  Limiter l = make(clock, 1, 60000);
  ASSERT_TRUE(l.check("k").allowed);
  ASSERT_FALSE(l.check("k").allowed);
  l.reset("k");
  EXPECT_TRUE(l.check("k").allowed);
}

TEST(MemoryBackend, KeysAreIndependentAndBinary) {
  FakeClock clock;
  Limiter l = make(clock, 1, 1000);
  std::string a("a\0b", 3), b("a\0c", 3);
  EXPECT_TRUE(l.check(a).allowed);
  EXPECT_TRUE(l.check(b).allowed);
  EXPECT_FALSE(l.check(a).allowed);
}

TEST(MemoryBackend, IdleKeysAreSwept) {
  FakeClock clock;
  auto backend = std::make_shared<MemoryBackend>(clock.fn());
  LimitParams p{Algorithm::kSlidingLog, 5, 100};
  for (int i = 0; i < 5000; ++i) backend->evaluate(Op::kCheck, p, "key" + std::to_string(i), 1, kServerTime);
  EXPECT_GE(backend->size(), 4000u);
  clock.advance_ms(200);
  // Traffic on a few new keys reaches every shard, and each shard sweeps.
  for (int i = 0; i < 40000; ++i) backend->evaluate(Op::kCheck, p, "new" + std::to_string(i % 64), 1, kServerTime);
  EXPECT_LE(backend->size(), 64u);
}

TEST(MemoryBackend, ExactUnderThreads) {
  FakeClock clock;
  Limiter l = make(clock, 1000, 60000);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i)
        if (l.check("hot").allowed) ++admitted;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 1000);
}
