// Failure policies and the circuit breaker against a real server that is
// paused (SIGSTOP: timeouts) or killed (refused connections).
#include <gtest/gtest.h>

#include <chrono>

#include "error_code.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_server.h"
#include "util/clock.h"

using namespace polylimit;
using pltest::code_of;
using namespace std::chrono;
using namespace std::chrono_literals;

namespace {

constexpr int kTimeoutMs = 150;

// `clock`: of the breaker and the reconnect backoff (null: the real one).
std::shared_ptr<Client> client_for(const pltest::RedisServer& s,
                                   std::shared_ptr<const MonotonicClock> clock = nullptr) {
  ClientOptions co;
  co.pool.command_timeout_ms = kTimeoutMs;
  co.pool.connect_timeout_ms = kTimeoutMs;
  co.clock = std::move(clock);
  return Client::open(s.url(), co);
}

Limiter make(std::shared_ptr<Client> c, FailurePolicy policy, int breaker = 0, int cooldown_ms = 1000) {
  LimiterOptions o;
  o.prefix = "policy" + std::to_string(static_cast<int>(policy));
  o.limit = {Algorithm::kSlidingLog, 2, 60000};
  o.failure_policy = policy;
  o.breaker_failures = breaker;
  o.breaker_cooldown_ms = cooldown_ms;
  return Limiter(std::move(c), o);
}

int64_t ms_since(steady_clock::time_point t) { return duration_cast<milliseconds>(steady_clock::now() - t).count(); }

}  // namespace

TEST(FailurePolicy, EachPolicyWithPausedAndKilledServer) {
  pltest::RedisServer server;
  auto c = client_for(server);
  Limiter error = make(c, FailurePolicy::kError);
  Limiter open = make(c, FailurePolicy::kOpen);
  Limiter closed = make(c, FailurePolicy::kClosed);
  Limiter local = make(c, FailurePolicy::kLocal);
  for (Limiter* l : {&error, &open, &closed, &local}) {
    Decision d = l->check("k");
    ASSERT_TRUE(d.allowed);
    ASSERT_FALSE(d.degraded);
  }
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "paused" : "killed");
    if (round == 0)
      server.pause();
    else
      server.stop();
    EXPECT_EQ(code_of([&] { error.check("k"); }), round == 0 ? ErrorCode::kTimeout : ErrorCode::kUnavailable);
    Decision d = open.check("k");
    EXPECT_TRUE(d.allowed);
    EXPECT_TRUE(d.degraded);
    d = closed.check("k");
    EXPECT_FALSE(d.allowed);
    EXPECT_TRUE(d.degraded);
    EXPECT_EQ(d.retry_after_ms, 1000);
    // The local limiter enforces the same limit in this process.
    std::string key = "fresh-" + std::to_string(round);
    d = local.check(key);
    EXPECT_TRUE(d.allowed);
    EXPECT_TRUE(d.degraded);
    EXPECT_EQ(d.remaining, 1);
    EXPECT_TRUE(local.check(key).allowed);
    d = local.check(key);
    EXPECT_FALSE(d.allowed);
    EXPECT_TRUE(d.degraded);
    EXPECT_GT(d.retry_after_ms, 59000);
    // peek follows the policy too
    EXPECT_TRUE(open.peek("k").degraded);
    if (round == 0) server.resume();
  }
  server.start();
  Decision d = open.check("k");  // back: real answers again
  EXPECT_FALSE(d.degraded);
  EXPECT_TRUE(d.allowed);
}

TEST(FailurePolicy, ConfigErrorsAreNotOutages) {
  pltest::RedisServer server;
  Limiter open = make(client_for(server), FailurePolicy::kOpen);
  server.command({"SET", open.storage_key("k"), "not a zset"});
  EXPECT_EQ(code_of([&] { open.check("k"); }), ErrorCode::kScript);  // not hidden by the policy
}

// The breaker's cool-down and the reconnect backoff run on the client's
// clock: the test steps a ManualClock instead of sleeping through them. The
// paused server and the timeouts it causes are real.
TEST(Breaker, OpensFailsFastAndClosesWhenServerIsBack) {
  pltest::RedisServer server;
  auto clock = std::make_shared<ManualClock>();
  auto client = client_for(server, clock);
  auto attempts = [&] { return client->stats().connect_attempts; };
  Limiter l = make(client, FailurePolicy::kClosed, /*breaker=*/3, /*cooldown_ms=*/400);
  ASSERT_FALSE(l.check("k").degraded);
  ASSERT_EQ(attempts(), 1u);
  server.pause();
  // Three outages open the breaker: the first waits for the timeout on its
  // connection, the second for the timeout of a new connection's handshake,
  // the third fails fast (the reconnect backoff runs: the clock stands still).
  for (int i = 0; i < 3; ++i) {
    auto t = steady_clock::now();
    Decision d = l.check("k");
    EXPECT_TRUE(d.degraded);
    if (i < 2) EXPECT_GE(ms_since(t), kTimeoutMs - 20) << "call " << i << " should have waited for the timeout";
    EXPECT_LT(ms_since(t), kTimeoutMs + 100) << "call " << i;
  }
  EXPECT_EQ(attempts(), 2u);  // the first connection, then one reconnect
  // ...then no call waits for the timeout while it is open.
  auto t = steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    auto c = steady_clock::now();
    Decision d = l.check("k");
    EXPECT_TRUE(d.degraded);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after_ms, 400);
    ASSERT_LT(ms_since(c), kTimeoutMs / 3) << "call " << i << " waited while the breaker was open";
  }
  EXPECT_LT(ms_since(t), 200 * kTimeoutMs / 10);  // far below one timeout per call
  EXPECT_EQ(attempts(), 2u);
  // Open for exactly the cool-down: 1 ms before it, no call reaches the pool.
  clock->advance(399ms);
  auto c = steady_clock::now();
  EXPECT_TRUE(l.check("k").degraded);
  EXPECT_LT(ms_since(c), kTimeoutMs / 3);
  EXPECT_EQ(attempts(), 2u);
  // At the cool-down one probe goes to the (still paused) server (past the
  // reconnect backoff too), times out and re-opens the breaker.
  clock->advance(1ms);
  auto probe = steady_clock::now();
  EXPECT_TRUE(l.check("k").degraded);
  EXPECT_GE(ms_since(probe), kTimeoutMs - 20) << "the probe should have waited for the timeout";
  EXPECT_LT(ms_since(probe), kTimeoutMs + 100);
  EXPECT_EQ(attempts(), 3u);
  c = steady_clock::now();
  EXPECT_TRUE(l.check("k").degraded);
  EXPECT_LT(ms_since(c), kTimeoutMs / 3);  // open again
  EXPECT_EQ(attempts(), 3u);
  // The server comes back: still open until the new cool-down has passed,
  // then the next probe closes the breaker. (The timed-out calls may run now
  // that it resumes: a timeout does not mean "not done".)
  server.resume();
  clock->advance(399ms);
  Decision d = l.check("after");
  EXPECT_TRUE(d.degraded);
  EXPECT_EQ(attempts(), 3u);
  clock->advance(1ms);
  d = l.check("after");
  EXPECT_FALSE(d.degraded);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(attempts(), 4u);
  EXPECT_FALSE(l.check("other").degraded);
}

TEST(Breaker, ErrorPolicyFailsFastWithUnavailable) {
  pltest::RedisServer server;
  Limiter l = make(client_for(server), FailurePolicy::kError, 1, 5000);
  ASSERT_TRUE(l.check("k").allowed);
  server.stop();
  EXPECT_EQ(code_of([&] { l.check("k"); }), ErrorCode::kUnavailable);
  auto t = steady_clock::now();
  std::string msg;
  try {
    l.check("k");
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("circuit breaker open"), std::string::npos) << msg;
  EXPECT_LT(ms_since(t), 100);
}

TEST(FailurePolicy, BatchUsesThePolicy) {
  pltest::RedisServer server;
  Limiter l = make(client_for(server), FailurePolicy::kLocal);
  server.stop();
  auto out = l.check_many({"a", "b", "a", "a"}, 1);
  ASSERT_EQ(out.size(), 4u);
  for (auto& o : out) {
    ASSERT_FALSE(o.error);
    EXPECT_TRUE(o.decision.degraded);
  }
  EXPECT_TRUE(out[0].decision.allowed);
  EXPECT_TRUE(out[2].decision.allowed);
  EXPECT_FALSE(out[3].decision.allowed);  // limit 2, enforced locally
}

TEST(FailurePolicy, BadOptions) {
  auto c = Client::open("memory://");
  LimiterOptions o;
  o.limit = {Algorithm::kSlidingLog, 1, 1000};
  o.breaker_failures = -1;
  EXPECT_EQ(code_of([&] { Limiter l(c, o); }), ErrorCode::kInvalidArgument);
  o.breaker_failures = 1;
  o.breaker_cooldown_ms = 0;
  EXPECT_EQ(code_of([&] { Limiter l(c, o); }), ErrorCode::kInvalidArgument);
  o.breaker_cooldown_ms = 10;
  o.failure_policy = static_cast<FailurePolicy>(9);
  EXPECT_EQ(code_of([&] { Limiter l(c, o); }), ErrorCode::kInvalidArgument);
}
