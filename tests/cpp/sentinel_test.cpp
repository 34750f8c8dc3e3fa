// Redis Sentinel: one master, one replica, three sentinels on loopback. The
// client follows a promotion (a demoted master answering READONLY, and a
// killed master) and reports clear errors for bad topology input.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "hammer.h"
#include "redis_backend.h"
#include "redis_cluster.h"
#include "polylimit/client.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "sentinel_transport.h"

using polylimit::Client;
using polylimit::ClientOptions;
using polylimit::Error;
using polylimit::ErrorCode;
using polylimit::Limiter;
using polylimit::LimiterOptions;
using polylimit::SentinelTransport;
using pltest::Hammer;
using pltest::RedisSentinels;
using pltest::RedisServer;

namespace {

using namespace std::chrono_literals;

std::shared_ptr<Client> open(const std::string& url) {
  ClientOptions o;
  o.pool.size = 16;
  return Client::open(url, o);
}

LimiterOptions limit(int64_t n, const char* prefix) {
  LimiterOptions o;
  o.limit.limit = n;
  o.limit.window_ms = 3600 * 1000;
  o.prefix = prefix;
  return o;
}

SentinelTransport& sentinel_transport(Client& c) {
  return dynamic_cast<SentinelTransport&>(dynamic_cast<polylimit::RedisBackend&>(c.backend()).transport());
}

double ms_since(int64_t t0_ns, int64_t t_ns) { return (t_ns - t0_ns) / 1e6; }

// Hammers a fresh key from 8 threads: exactly `n` admitted.
void expect_exact(Limiter& l, const std::string& key, int64_t n) {
  std::atomic<int> admitted{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2 * n / 8 + 5; ++i) {
        try {
          if (l.check(key).allowed) ++admitted;
        } catch (const Error&) {
          ++errors;
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(admitted.load(), n);
}

// Hammers through an event (`cause`) that ends with a promotion; prints and
// checks how the client fared. With `demote`, the old master is then turned
// into a replica of the new one at once (Sentinel itself does it seconds
// later), so that connections to it answer READONLY.
void through_failover(RedisSentinels& s, const char* what, const char* prefix, const std::function<void()>& cause,
                      bool demote) {
  auto client = open(s.url());
  auto& transport = sentinel_transport(*client);
  RedisServer& old_server = s.master();
  RedisServer& new_server = s.replica();
  const std::string old_master = "127.0.0.1:" + std::to_string(old_server.port());
  const std::string new_master = "127.0.0.1:" + std::to_string(new_server.port());
  EXPECT_EQ(transport.master_address(), old_master);
  constexpr int64_t kLimit = 5000;
  Limiter l(client, limit(kLimit, prefix));
  Hammer h(l, "k", 4, 2000us);  // slow enough not to reach the limit before the move
  ASSERT_TRUE(Hammer::wait_for([&] { return h.admitted.load() >= 100; }, 20s));
  long at_event = h.admitted.load();
  int64_t t0 = pltest::steady_ns();
  cause();
  s.wait_promoted();
  int64_t promoted = pltest::steady_ns();
  if (demote)
    EXPECT_EQ(old_server.command({"REPLICAOF", "127.0.0.1", std::to_string(new_server.port())}), "OK");
  ASSERT_TRUE(Hammer::wait_for([&] { return transport.master_address() == new_master; }, 10s));
  int64_t moved = pltest::steady_ns();
  long at_move = h.admitted.load();
  ASSERT_TRUE(Hammer::wait_for(
      [&] { return h.last_success_ns.load() > moved && pltest::steady_ns() - h.last_error_ns.load() > 500000000; },
      30s));
  double recovered = h.errors.load() ? ms_since(t0, h.last_error_ns.load()) : 0.0;
  long denied_at_move = h.denied.load();
  ASSERT_TRUE(Hammer::wait_for([&] { return h.denied.load() >= denied_at_move + 1000; }, 30s));
  h.stop();
  long long logged = new_server.integer(pltest::ring_units(l.storage_key("k")));
  std::printf("sentinel, %s: promoted after %.0f ms, client on the new master %.0f ms after the promotion; "
              "%ld errors (first: %s); last error %.0f ms after the event; admitted %ld (%ld before the event, %ld "
              "when the client moved), new master's log holds %lld, limit %lld; %ld resolutions, %ld READONLY "
              "replies\n",
              what, ms_since(t0, promoted), ms_since(promoted, moved), h.errors.load(), h.first_error_text().c_str(),
              recovered, h.admitted.load(), at_event, at_move, logged, static_cast<long long>(kLimit),
              transport.resolutions(), transport.readonly_replies());
  EXPECT_LT(at_move, kLimit) << "the limit was reached before the move: nothing was tested";
  EXPECT_LT(recovered, 15000.0);
  EXPECT_EQ(logged, kLimit);
  EXPECT_GE(h.admitted.load(), kLimit);
  if (demote) EXPECT_EQ(h.errors.load(), 0) << h.first_error_text();
  Limiter fresh(client, limit(200, prefix));
  expect_exact(fresh, "fresh", 200);
}

}  // namespace

TEST(Sentinel, DemotedMasterAnswersReadonlyAndClientMoves) {
  RedisSentinels s;
  // SENTINEL FAILOVER promotes the replica; the old master keeps accepting
  // writes until it is demoted, and what it took meanwhile is lost when it
  // resyncs: that window is what the client's re-resolution bounds.
  through_failover(s, "SENTINEL FAILOVER", "demote", [&] { s.sentinel_failover(); }, true);
}

TEST(Sentinel, KilledMasterIsReplacedByPromotedReplica) {
  RedisSentinels s;
  through_failover(s, "SIGKILL of the master", "kill", [&] { s.kill_master(); }, false);
}

// Tests that leave the deployment as they found it (no kill, no failover)
// share one, started by the first of them and stopped after the last. Its
// data nodes and its sentinels require passwords (with characters that need
// percent-encoding in a URL).
class SharedSentinels : public ::testing::Test {
 protected:
  static RedisSentinels& sentinels() {
    if (!sentinels_) sentinels_ = std::make_unique<RedisSentinels>("secured", "data&pw", "sen@pw", false);
    return *sentinels_;
  }
  // redis+sentinel://:DATA_PW@sentinels/NAME?sentinel_password=SENTINEL_PW
  static std::string url(const std::string& name, const char* data_pw = "data%26pw",
                         const char* sentinel_pw = "sen%40pw") {
    std::string hosts = sentinels().url().substr(std::string("redis+sentinel://").size());
    hosts = hosts.substr(0, hosts.find('/'));
    return std::string("redis+sentinel://:") + data_pw + "@" + hosts + "/" + name + "?sentinel_password=" + sentinel_pw;
  }
  static void TearDownTestSuite() { sentinels_.reset(); }

 private:
  static std::unique_ptr<RedisSentinels> sentinels_;
};
std::unique_ptr<RedisSentinels> SharedSentinels::sentinels_;

TEST_F(SharedSentinels, WrongMasterName) {
  auto client = open(url("nosuchmaster"));
  Limiter l(client, limit(5, "t"));
  try {
    l.check("k");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no sentinel knows a master named \"nosuchmaster\""), std::string::npos)
        << e.what();
  }
  // The right name works on the same sentinels.
  Limiter ok(open(url(sentinels().name())), limit(5, "wrong-name"));
  EXPECT_TRUE(ok.check("k").allowed);
}

TEST_F(SharedSentinels, DataAndSentinelPasswords) {
  Limiter ok(open(url("secured")), limit(5, "passwords"));
  EXPECT_TRUE(ok.check("k").allowed);

  for (auto [data_pw, sentinel_pw] : {std::pair<const char*, const char*>{"data%26pw", "wrong"}, {"wrong", "sen%40pw"}}) {
    Limiter bad(open(url("secured", data_pw, sentinel_pw)), limit(5, "passwords"));
    try {
      bad.check("k");
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kAuth) << e.what();
    }
  }
}

TEST(SentinelTopology, UnreachableSentinels) {
  int a = pltest::free_port();
  auto client = open("redis+sentinel://127.0.0.1:" + std::to_string(a) + "/m");
  Limiter l(client, limit(5, "t"));
  try {
    l.check("k");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("sentinel 127.0.0.1:" + std::to_string(a)), std::string::npos) << e.what();
  }
}

TEST(SentinelTopology, NotASentinel) {
  pltest::RedisServer plain;
  auto client = open("redis+sentinel://127.0.0.1:" + std::to_string(plain.port()) + "/m");
  Limiter l(client, limit(5, "t"));
  try {
    l.check("k");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("not sentinels"), std::string::npos) << e.what();
  }
}

TEST(SentinelTopology, MalformedUrls) {
  for (const char* url : {"redis+sentinel://h:1", "redis+sentinel://h:1/", "redis+sentinel:///m",
                          "redis+sentinel://h:1/m?sentinel_pass=x"}) {
    try {
      open(url);
      ADD_FAILURE() << "accepted " << url;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << url;
    }
  }
}
