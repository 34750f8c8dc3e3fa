// Variants of a check: partial grants (at most n), blocking acquire, shadow
// mode and limits passed per call, in C++ and through the C ABI.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>

#include "hammer.h"
#include "polylimit.h"
#include "polylimit/errors.h"
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

LimiterOptions opts(const std::string& prefix, std::vector<LimitParams> limits) {
  LimiterOptions o;
  o.limits = std::move(limits);
  o.prefix = prefix;
  return o;
}

}  // namespace

TEST(AtMost, GrantsWhatFits) {
  for (Algorithm alg :
       {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow, Algorithm::kGcra}) {
    SCOPED_TRACE(algorithm_name(alg));
    Limiter l(Client::open(server().url()), opts(std::string("most-") + algorithm_name(alg), {{alg, 10, 60000}}));
    Decision d = l.check_at_most("k", 4);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.granted, 4);
    d = l.check_at_most("k", 100);  // only 6 fit
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.granted, 6);
    EXPECT_EQ(d.remaining, 0);
    d = l.check_at_most("k", 3);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.granted, 0);
    EXPECT_GT(d.retry_after_ms, 0);
  }
}

TEST(Acquire, WaitsForRetryAfterUpToTheTimeout) {
  Limiter l(Client::open(server().url()), opts("acq", {{Algorithm::kGcra, 20, 1000, 1}}));  // one per 50 ms
  ASSERT_TRUE(l.check("k").allowed);
  auto t = steady_clock::now();
  Decision d = l.acquire("k", 1, 500ms);
  auto waited = duration_cast<milliseconds>(steady_clock::now() - t).count();
  EXPECT_TRUE(d.allowed);
  EXPECT_GE(waited, 35);
  EXPECT_LT(waited, 400);
  // A timeout shorter than the wait: returns at once, denied.
  t = steady_clock::now();
  d = l.acquire("k", 1, 10ms);
  EXPECT_FALSE(d.allowed);
  EXPECT_LT(duration_cast<milliseconds>(steady_clock::now() - t).count(), 10);
}

// The same on the client's clock, stepped: acquire sleeps on it until
// retry_after, exactly, and gives up at once when the wait would pass the
// timeout (memory://'s algorithm clock is the same ManualClock).
TEST(Acquire, WaitsOnTheClientClock) {
  auto clock = std::make_shared<ManualClock>();
  const auto start = clock->now();
  ClientOptions co;
  co.clock = clock;
  co.memory_clock = [clock, start] {
    return int64_t{1700000000000000} + duration_cast<microseconds>(clock->now() - start).count();
  };
  Limiter l(Client::open("memory://", co), opts("acq-clock", {{Algorithm::kGcra, 20, 1000, 1}}));  // one per 50 ms
  ASSERT_TRUE(l.check("k").allowed);
  Decision d = l.check("k");
  ASSERT_FALSE(d.allowed);
  const int64_t retry_ms = d.retry_after_ms;
  ASSERT_EQ(retry_ms, 50);
  // The wait would end 1 ms after the deadline: denied at once, no sleep.
  d = l.acquire("k", 1, milliseconds(retry_ms - 1));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(clock->now(), start);
  // It ends at the deadline: acquire sleeps on the clock until then.
  auto waiting = std::async(std::launch::async, [&] { return l.acquire("k", 1, milliseconds(retry_ms)); });
  ASSERT_TRUE(clock->await_sleeps(1, 10s));
  clock->advance(milliseconds(retry_ms) - 1us);
  EXPECT_EQ(waiting.wait_for(0s), std::future_status::timeout);  // 1 us short: still asleep
  clock->advance(1us);
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
  d = waiting.get();
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(clock->now() - start, milliseconds(retry_ms));
  // Several waits in a row within one timeout: two more units, 50 ms apart.
  auto twice = std::async(std::launch::async,
                          [&] { return l.acquire("k", 1, 200ms).allowed && l.acquire("k", 1, 200ms).allowed; });
  for (size_t i = 2; i <= 3; ++i) {
    ASSERT_TRUE(clock->await_sleeps(i, 10s));
    clock->advance(milliseconds(retry_ms));
  }
  ASSERT_EQ(twice.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(twice.get());
}

TEST(Shadow, DecidesAndCountsButAdmits) {
  auto c = Client::open(server().url());
  LimiterOptions o = opts("shadow", {{Algorithm::kSlidingLog, 2, 60000}});
  o.shadow = true;
  Limiter l(c, o);
  for (int i = 0; i < 5; ++i) {
    Decision d = l.check("k");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.shadowed, i >= 2) << i;
  }
  Stats s = c->stats();
  EXPECT_EQ(s.admitted, 2u);
  EXPECT_EQ(s.denied, 3u);
}

// The non-blocking path counts as check() does: a shadowed denial is a
// denial in the stats, from the server and from the deny cache alike.
TEST(Shadow, AsyncChecksCountTheDenials) {
  for (bool cache : {false, true}) {
    SCOPED_TRACE(cache ? "deny cache on" : "deny cache off");
    auto c = Client::open(server().url());
    LimiterOptions o = opts(cache ? "shadow-async-cached" : "shadow-async", {{Algorithm::kSlidingLog, 2, 60000}});
    o.shadow = true;
    o.deny_cache_size = cache ? 100 : 0;
    auto l = std::make_shared<Limiter>(c, o);
    for (int i = 0; i < 5; ++i) {
      Decision d = pltest::check_async_and_wait(l, "k");
      EXPECT_TRUE(d.allowed);
      EXPECT_EQ(d.shadowed, i >= 2) << i;
    }
    Stats s = c->stats();
    EXPECT_EQ(s.admitted, 2u);
    EXPECT_EQ(s.denied, 3u);
    if (cache) EXPECT_GT(s.cache_hits, 0u);
  }
}

TEST(PerCallLimit, ChangesAtRunTime) {
  Limiter l(Client::open(server().url()), opts("percall", {{Algorithm::kFixedWindow, 2, 60000}}));
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_FALSE(l.check("k").allowed);
  Decision d = l.check_with("k", 1, {{Algorithm::kFixedWindow, 5, 60000}});  // raised: same counter
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.limit, 5);
  EXPECT_EQ(d.remaining, 2);
  try {
    l.check_with("k", 1, {{Algorithm::kGcra, 5, 60000}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not the limiter's fixed_window"), std::string::npos) << e.what();
  }
}

TEST(CheckVariants, CApi) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server().url().c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.prefix = "peer-c";
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new_spec(client, "5/minute", &o, &l, nullptr), POLYLIMIT_OK);
  polylimit_decision d;
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_check_at_most(l, "k", 1, 3, &d, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(d.granted, 3);
  ASSERT_EQ(polylimit_limiter_check_at_most(l, "k", 1, 3, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.granted, 2);
  ASSERT_EQ(polylimit_limiter_acquire(l, "k", 1, 1, 0, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 0);
  ASSERT_EQ(polylimit_limiter_check_limit(l, "k", 1, 1, 6, 60000, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.granted, 1);
  EXPECT_EQ(d.limit, 6);
  // Bad input.
  EXPECT_EQ(polylimit_limiter_check_at_most(nullptr, "k", 1, 1, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "limiter is NULL"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_at_most(l, "k", 1, 0, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "max_cost = 0"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_at_most(l, nullptr, 1, 1, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_check_at_most(l, "k", 1, 1, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_acquire(l, "k", 1, 1, -1, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "timeout_ms = -1"), nullptr);
  EXPECT_EQ(polylimit_limiter_acquire(l, "k", 1, 0, 10, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "cost = 0"), nullptr);
  EXPECT_EQ(polylimit_limiter_acquire(nullptr, "k", 1, 1, 10, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_acquire(l, "", 0, 1, 10, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "key is empty"), nullptr);
  EXPECT_EQ(polylimit_limiter_acquire(l, "k", 1, 1, 10, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_check_limit(l, "k", 1, 1, 0, 1000, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "limit = 0"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_limit(l, "k", 1, 1, 10, -5, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "window_ms = -5"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_limit(l, "k", 1, 11, 10, 1000, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "exceeds limit = 10"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_limit(nullptr, "k", 1, 1, 10, 1000, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_check_limit(l, nullptr, 1, 1, 10, 1000, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_check_limit(l, "k", 1, 1, 10, 1000, nullptr, &err), POLYLIMIT_EINVALID);
  // Refund.
  ASSERT_EQ(polylimit_limiter_refund(l, "k", 1, 2, &d, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.remaining, 1);  // 6 units were taken (one under a per-call limit of 6)
  EXPECT_EQ(polylimit_limiter_refund(l, "k", 1, 0, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "units = 0"), nullptr);
  EXPECT_EQ(polylimit_limiter_refund(nullptr, "k", 1, 1, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_refund(l, nullptr, 1, 1, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_refund(l, "k", 1, 1, nullptr, &err), POLYLIMIT_EINVALID);
  polylimit_limiter_free(l);
  // A punitive block through the C options.
  o.block_ms = 60000;
  o.prefix = "peer-block";
  ASSERT_EQ(polylimit_limiter_new_spec(client, "1/s", &o, &l, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 0);
  EXPECT_GT(d.retry_after_ms, 59000);  // the block, not the 1 s window
  polylimit_limiter_free(l);
  o.block_ms = -1;
  EXPECT_EQ(polylimit_limiter_new_spec(client, "1/s", &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "block_ms = -1"), nullptr);
  o.block_ms = 0;
  // Shadow through the C options.
  o.shadow = 1;
  o.prefix = "peer-shadow";
  ASSERT_EQ(polylimit_limiter_new_spec(client, "1/minute", &o, &l, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.shadowed, 1);
  polylimit_limiter_free(l);
  polylimit_client_close(client);
}
