// The transport against faults it must survive, with real processes: a
// loopback proxy in front of redis-server that trickles, drops or adds to
// replies, a fake server with hostile reply headers, and a port nobody
// listens on. Every call returns within its deadline plus a small margin,
// no call receives another call's reply, and a dead node is not hammered.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "error_code.h"
#include "fault_proxy.h"
#include "redis_server.h"
#include "short_timeouts.h"
#include "polylimit/limiter.h"

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

// Nobody listens: calls fail fast with UNAVAILABLE, and the connect rate is
// bounded by the backoff (10 ms doubling to 1 s), not one connect per call.
TEST(Transport, ADeadPortIsNotHammered) {
  auto client = client_for("redis://127.0.0.1:" + std::to_string(pltest::free_port()));
  Limiter l = limiter(client, "dead");
  long calls = 0;
  auto t0 = steady_clock::now();
  while (ms_since(t0) < 1500) {
    EXPECT_EQ(code_of([&] { l.check("k"); }), ErrorCode::kUnavailable);
    ++calls;
  }
  const uint64_t connects = client->stats().connect_attempts;
  std::printf("dead port for 1.5 s: %ld calls, %llu connect attempts\n", calls,
              static_cast<unsigned long long>(connects));
  EXPECT_GT(calls, 1000);      // failing fast
  EXPECT_LE(connects, 20u);    // ~9 expected; one connect per call would be `calls`
  EXPECT_GE(connects, 3u);     // but it keeps trying
}

// A server that comes back is used again within the backoff's cap (1 s).
TEST(Transport, RecoversWhenTheServerComesBack) {
  pltest::RedisServer own;
  Limiter l = limiter(client_for(own.url()), "back");
  ASSERT_TRUE(l.check("k").allowed);
  own.stop();
  for (int i = 0; i < 20; ++i) EXPECT_NE(code_of([&] { l.check("k"); }), ErrorCode::kInternal);
  own.start();
  auto t0 = steady_clock::now();
  bool ok = false;
  while (!ok && ms_since(t0) < 3000) {
    try {
      ok = l.check("k").allowed;
    } catch (const Error&) {
      std::this_thread::sleep_for(5ms);
    }
  }
  EXPECT_TRUE(ok);
  std::printf("recovered %lld ms after the restart\n", static_cast<long long>(ms_since(t0)));
  EXPECT_LT(ms_since(t0), 1500);
}
