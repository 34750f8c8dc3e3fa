// The client's monotonic clock (clock.h) and the pure time logic that reads
// it: the circuit breaker's cool-down, the deny cache's expiry and the
// reconnect backoff's schedule. No server: a ManualClock is stepped.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "limiter/breaker.h"
#include "limiter/deny_cache.h"
#include "net/pool.h"
#include "util/clock.h"

using namespace polylimit;
using namespace std::chrono;
using namespace std::chrono_literals;

TEST(ManualClock, MovesOnlyWhenAdvanced) {
  ManualClock clock;
  const auto t0 = clock.now();
  std::this_thread::sleep_for(2ms);  // real time passing does not move it
  EXPECT_EQ(clock.now(), t0);
  clock.advance(1us);
  EXPECT_EQ(clock.now() - t0, 1us);
  clock.advance(0ns);
  EXPECT_EQ(clock.now() - t0, 1us);
  EXPECT_THROW(clock.advance(-1ns), std::invalid_argument);
  EXPECT_EQ(clock.now() - t0, 1us);
  clock.sleep_until(t0);  // in the past: returns at once
  clock.sleep_until(clock.now());
  EXPECT_EQ(clock.sleeps(), 0u);
}

TEST(ManualClock, SleepUntilWakesExactlyAtTheTarget) {
  ManualClock clock;
  const auto wake = clock.now() + 50ms;
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.sleep_until(wake);
    woke = true;
  });
  ASSERT_TRUE(clock.await_sleeps(1, 10s));
  EXPECT_EQ(clock.sleepers(), 1u);
  clock.advance(50ms - 1ns);
  EXPECT_FALSE(woke.load());  // 1 ns short: still asleep
  EXPECT_EQ(clock.sleepers(), 1u);
  clock.advance(1ns);
  sleeper.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(clock.sleepers(), 0u);
  EXPECT_EQ(clock.sleeps(), 1u);
}

TEST(RealClock, IsSteadyClockAndShared) {
  const auto& real = MonotonicClock::real();
  ASSERT_TRUE(real);
  EXPECT_EQ(real.get(), MonotonicClock::real().get());
  const auto before = steady_clock::now();
  const auto now = real->now();
  EXPECT_GE(now, before);
  EXPECT_LE(now, steady_clock::now());
  const auto t = real->now() + 2ms;
  real->sleep_until(t);
  EXPECT_GE(steady_clock::now(), t);
}

// Breaker(3 failures, 400 ms): open for exactly the cool-down, then one probe.
TEST(BreakerClock, OpenForExactlyTheCooldownThenOneProbe) {
  auto clock = std::make_shared<ManualClock>();
  Breaker b(3, 400ms, clock);
  EXPECT_TRUE(b.allow());
  b.failure();
  b.failure();
  EXPECT_FALSE(b.open());  // two of three
  EXPECT_TRUE(b.allow());
  b.success();  // resets the count
  b.failure();
  b.failure();
  EXPECT_FALSE(b.open());
  b.failure();  // the third in a row: open from now
  EXPECT_TRUE(b.open());
  EXPECT_FALSE(b.allow());
  clock->advance(399ms);
  EXPECT_FALSE(b.allow());  // cool-down - 1 ms
  clock->advance(1ms - 1ns);
  EXPECT_FALSE(b.allow());  // cool-down - 1 ns
  clock->advance(1ns);
  EXPECT_TRUE(b.allow());   // cool-down: this caller is the probe (half-open)
  EXPECT_FALSE(b.allow());  // the probe is out: nobody else
  EXPECT_TRUE(b.open());
  clock->advance(10s);
  EXPECT_FALSE(b.allow());  // half-open waits for the probe, whatever the time
  b.failure();              // the probe failed: open again, from now
  EXPECT_FALSE(b.allow());
  clock->advance(400ms - 1ns);
  EXPECT_FALSE(b.allow());
  clock->advance(1ns);
  EXPECT_TRUE(b.allow());
  b.success();  // the probe answered: closed
  EXPECT_FALSE(b.open());
  EXPECT_TRUE(b.allow());
  EXPECT_TRUE(b.allow());
}

// An entry recorded for a call that started at t with retry_after R is
// served until t + R - 1 ms (exclusive), and not from then on.
TEST(DenyCacheClock, ServedUntilOneMillisecondBeforeRetryAfter) {
  ManualClock clock;
  DenyCache cache(10);
  Decision denied;
  denied.allowed = false;
  denied.limit = 5;
  denied.remaining = 0;
  denied.retry_after_ms = 100;
  denied.reset_after_ms = 1000;
  const auto started = clock.now();
  cache.record("k", 2, denied, started, cache.epoch());
  ASSERT_EQ(cache.size(), 1u);
  const auto until = started + 99ms;

  auto d = cache.lookup("k", 2, started);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->cached);
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->retry_after_ms, 99);
  EXPECT_FALSE(cache.lookup("k", 1, started));  // a smaller cost may fit
  EXPECT_TRUE(cache.lookup("k", 3, started));   // a larger one cannot

  clock.advance(until - 1us - clock.now());
  d = cache.lookup("k", 2, clock.now());  // 1 us before expiry: still served
  ASSERT_TRUE(d);
  EXPECT_EQ(d->retry_after_ms, 1);  // rounded up, never 0 on a denial
  EXPECT_GE(d->reset_after_ms, d->retry_after_ms);
  EXPECT_EQ(cache.size(), 1u);

  clock.advance(1us);
  EXPECT_FALSE(cache.lookup("k", 2, clock.now()));  // at expiry: ask Redis
  EXPECT_EQ(cache.size(), 0u);                      // and the entry is gone

  // retry_after of 1 ms or less is not worth an entry; an erase() racing
  // with the call wins over its record().
  denied.retry_after_ms = 1;
  cache.record("k", 2, denied, clock.now(), cache.epoch());
  EXPECT_EQ(cache.size(), 0u);
  denied.retry_after_ms = 100;
  const uint64_t epoch = cache.epoch();
  cache.erase("other");
  cache.record("k", 2, denied, clock.now(), epoch);
  EXPECT_EQ(cache.size(), 0u);
}

// 10 ms doubling to 1 s, each wait jittered within [base / 2, base].
TEST(ReconnectBackoff, ScheduleAndJitterBounds) {
  for (int failures = 1; failures <= 12; ++failures) {
    const microseconds base = failures >= 8 ? microseconds(1000000) : microseconds(10000 << (failures - 1));
    std::set<int64_t> seen;
    for (int i = 0; i < 200; ++i) {
      const microseconds w = ConnectionPool::backoff(failures);
      ASSERT_GE(w, base / 2) << "failures " << failures;
      ASSERT_LE(w, base) << "failures " << failures;
      seen.insert(w.count());
    }
    EXPECT_GT(seen.size(), 100u) << "failures " << failures << ": too little jitter";
  }
  // Each thread has its own sequence: two threads do not reconnect in step.
  auto draw = [] {
    std::vector<int64_t> v;
    for (int i = 0; i < 8; ++i) v.push_back(ConnectionPool::backoff(10).count());
    return v;
  };
  auto a = std::async(std::launch::async, draw), b = std::async(std::launch::async, draw);
  EXPECT_NE(a.get(), b.get());
}
