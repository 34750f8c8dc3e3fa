// The transport against faults it must survive, with real processes: a
// loopback proxy in front of redis-server that trickles, drops or adds to
// replies, a fake server with hostile reply headers, and a port nobody
// listens on. Every call returns within its deadline plus a small margin,
// no call receives another call's reply, and a dead node is not hammered.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "error_code.h"
#include "fault_proxy.h"
#include "polylimit/limiter.h"
#include "redis_server.h"
#include "short_timeouts.h"
#include "util/clock.h"

using namespace polylimit;
using namespace std::chrono;
using namespace std::chrono_literals;
using pltest::code_of;

namespace {

using pltest::client_for;
using pltest::kTimeoutMs;
using pltest::limiter;

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

int64_t ms_since(steady_clock::time_point t0) { return duration_cast<milliseconds>(steady_clock::now() - t0).count(); }

// As client_for, with the reconnect backoff on `clock`.
std::shared_ptr<Client> manual_client(const std::string& url, std::shared_ptr<const MonotonicClock> clock) {
  ClientOptions co;
  co.pool.size = 1;
  co.pool.command_timeout_ms = kTimeoutMs;
  co.pool.connect_timeout_ms = kTimeoutMs;
  co.clock = std::move(clock);
  return Client::open(url, co);
}

}  // namespace

// One byte every 150 ms: the 200 ms deadline covers the whole reply, not
// each read (it used to take 5.7 s).
TEST(Transport, ATrickledReplyEndsAtTheDeadline) {
  pltest::FaultProxy proxy(server().port());
  Limiter l = limiter(client_for(proxy.url()), "trickle");
  ASSERT_TRUE(l.check("warm").allowed);  // connected, scripts loaded
  proxy.set(pltest::FaultProxy::Mode::kTrickle, 150);
  auto t0 = steady_clock::now();
  std::string msg;
  EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kTimeout) << msg;
  const int64_t took = ms_since(t0);
  std::printf("trickled reply: timeout after %lld ms (deadline %d ms)\n", static_cast<long long>(took), kTimeoutMs);
  EXPECT_LT(took, kTimeoutMs + 150);
  proxy.set(pltest::FaultProxy::Mode::kPass);
  EXPECT_TRUE(l.check("after").allowed);  // a fresh connection: the trickled one was discarded
}

// A proxy that accepts and never answers: the call ends at its deadline.
TEST(Transport, ABlackholeEndsAtTheDeadline) {
  pltest::FaultProxy proxy(server().port());
  proxy.set(pltest::FaultProxy::Mode::kBlackhole);
  Limiter l = limiter(client_for(proxy.url()), "blackhole");
  auto t0 = steady_clock::now();
  EXPECT_EQ(code_of([&] { l.check("k"); }), ErrorCode::kTimeout);
  EXPECT_LT(ms_since(t0), kTimeoutMs + 150);
}

// Every 7th chunk from the server carries one more reply (one that looks
// exactly like a decision). Over thousands of calls, every decision is the
// one its own call asked for: a connection with bytes nobody asked for is
// never reused; the calls that met the extra reply fail or succeed, never
// with another call's answer.
TEST(Transport, AnExtraReplyNeverReachesAnotherCall) {
  pltest::FaultProxy proxy(server().port());
  auto client = client_for(proxy.url(), 2);
  Limiter l = limiter(client, "extra");
  ASSERT_TRUE(l.check("warm").allowed);
  proxy.set(pltest::FaultProxy::Mode::kExtra, 7, "*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:60000\r\n");
  int wrong = 0, errors = 0;
  const int calls = 2000;
  for (int i = 0; i < calls; ++i) {
    const int64_t cost = 1 + i % 7;
    try {
      Decision d = l.check("key-" + std::to_string(i), cost);
      if (!d.allowed || d.remaining != 10 - cost) ++wrong;
    } catch (const Error&) {
      ++errors;
    }
  }
  std::printf("extra reply after every 7th chunk: %d calls, %d wrong decisions, %d errors, %llu connects\n", calls,
              wrong, errors, static_cast<unsigned long long>(client->stats().connect_attempts));
  EXPECT_EQ(wrong, 0);
  EXPECT_LT(errors, calls / 5);  // about one call in 7 meets an extra reply
}

// Hostile headers are refused before anything is allocated for them, fast.
TEST(Transport, HostileReplyHeadersAreProtocolErrors) {
  for (const char* reply : {"*2147483647\r\n", "$2147483647\r\n", "*99999999999999999999999\r\n",
                            "$99999999999999999999\r\n", "!oops\r\n", "*1\r\n$-5x\r\n"}) {
    pltest::FakeServer fake(reply);
    Limiter l = limiter(client_for(fake.url()), "hostile");
    auto t0 = steady_clock::now();
    std::string msg;
    EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kServer) << reply;
    EXPECT_NE(msg.find("protocol error"), std::string::npos) << msg;
    EXPECT_LT(ms_since(t0), 100) << reply;
  }
}

// Nobody listens: calls fail fast with UNAVAILABLE, and connects follow the
// backoff (10 ms doubling to 1 s, each wait jittered within [base/2, base])
// on the client's clock, which the test steps: not one connect per call.
TEST(Transport, ADeadPortIsNotHammered) {
  auto clock = std::make_shared<ManualClock>();
  auto client = manual_client("redis://127.0.0.1:" + std::to_string(pltest::free_port()), clock);
  Limiter l = limiter(client, "dead");
  auto attempts = [&] { return client->stats().connect_attempts; };
  long calls = 0;
  int64_t slowest_us = 0;
  auto fails_fast = [&] {
    auto t = steady_clock::now();
    std::string msg;
    EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kUnavailable) << msg;
    slowest_us = std::max<int64_t>(slowest_us, duration_cast<microseconds>(steady_clock::now() - t).count());
    ++calls;
    return msg;
  };
  fails_fast();
  ASSERT_EQ(attempts(), 1u);
  std::set<int64_t> capped_waits;  // n >= 8: the base is the cap
  for (uint64_t n = 1; n <= 10; ++n) {
    SCOPED_TRACE("after " + std::to_string(n) + " failed connects");
    const microseconds base = n >= 8 ? microseconds(1000000) : microseconds(10000 << (n - 1));
    // Before half the base: never, however many calls.
    clock->advance(base / 2 - 1us);
    for (int i = 0; i < 50; ++i) {
      std::string msg = fails_fast();
      EXPECT_NE(msg.find(std::to_string(n) + " failed connects in a row; next try in"), std::string::npos) << msg;
    }
    ASSERT_EQ(attempts(), n);
    // Then in 1 ms steps: one connect as soon as the jittered wait is over,
    // and by the base at the latest.
    microseconds waited = base / 2 - 1us;
    while (attempts() == n && waited < base) {
      const microseconds step = std::min<microseconds>(1ms, base - waited);
      clock->advance(step);
      waited += step;
      fails_fast();
    }
    ASSERT_EQ(attempts(), n + 1);
    EXPECT_GE(waited, base / 2);
    EXPECT_LE(waited, base);
    if (n >= 8) capped_waits.insert(waited.count());
  }
  std::printf("dead port: %ld calls, %llu connect attempts, slowest call %lld us\n", calls,
              static_cast<unsigned long long>(attempts()), static_cast<long long>(slowest_us));
  EXPECT_EQ(attempts(), 11u);  // one connect per backoff period, not one per call
  EXPECT_GT(calls, 500);
  EXPECT_LT(slowest_us, 50000);        // failing fast: no call waits for a connect timeout
  EXPECT_GE(capped_waits.size(), 2u);  // jittered: the three capped waits are not all alike
}

// A server that comes back is used again when the backoff's wait is over
// (at most its cap, 1 s), and not before: the client's clock is stepped.
TEST(Transport, RecoversWhenTheServerComesBack) {
  pltest::RedisServer own;
  auto clock = std::make_shared<ManualClock>();
  auto client = manual_client(own.url(), clock);
  Limiter l = limiter(client, "back");
  ASSERT_TRUE(l.check("k").allowed);
  own.stop();
  for (int i = 0; i < 20; ++i) EXPECT_NE(code_of([&] { l.check("k"); }), ErrorCode::kInternal);
  // Ten more refused connects, a second apart: the backoff reaches its cap.
  for (int i = 0; i < 10; ++i) {
    const uint64_t before = client->stats().connect_attempts;
    clock->advance(1s);
    EXPECT_EQ(code_of([&] { l.check("k"); }), ErrorCode::kUnavailable);
    EXPECT_EQ(client->stats().connect_attempts, before + 1);
  }
  own.start();
  const uint64_t before = client->stats().connect_attempts;
  // Up, but the wait (within [500 ms, 1 s]) is not over: no connect yet.
  EXPECT_EQ(code_of([&] { l.check("k"); }), ErrorCode::kUnavailable);
  clock->advance(499ms);
  EXPECT_EQ(code_of([&] { l.check("k"); }), ErrorCode::kUnavailable);
  EXPECT_EQ(client->stats().connect_attempts, before);
  clock->advance(501ms);
  Decision d = l.check("k");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(client->stats().connect_attempts, before + 1);
}
