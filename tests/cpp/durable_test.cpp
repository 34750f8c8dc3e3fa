// Failover-safe mode (LimiterOptions::durable_*): a check is admitted only once
// WAIT says a replica has its write. Real processes throughout: a standalone
// master without a replica (every admitted check is "not durable", and each
// failure policy answers as documented), a master with a replica (paused and
// resumed), and Sentinel deployments under load through SENTINEL FAILOVER and
// SIGKILL of the master, with and without the mode (the over-admission without
// it is printed; with it, the admitted total never exceeds the limit). The
// latency and throughput cost is printed as a table (docs/deployments.md,
// "Failover-safe mode").
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/redis_backend.h"
#include "hammer.h"
#include "polylimit.h"
#include "polylimit/client.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "transport/sentinel_transport.h"

using polylimit::Client;
using polylimit::ClientOptions;
using polylimit::Decision;
using polylimit::Error;
using polylimit::ErrorCode;
using polylimit::FailurePolicy;
using polylimit::Limiter;
using polylimit::LimiterOptions;
using pltest::RedisSentinels;
using pltest::RedisServer;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::shared_ptr<Client> open(const std::string& url, int command_timeout_ms = 1000) {
  ClientOptions o;
  o.pool.size = 16;
  o.pool.command_timeout_ms = command_timeout_ms;
  return Client::open(url, o);
}

LimiterOptions options(int64_t limit, const std::string& prefix, int replicas = 0, int timeout_ms = 100,
                       FailurePolicy policy = FailurePolicy::kError) {
  LimiterOptions o;
  o.limit.limit = limit;
  o.limit.window_ms = 3600 * 1000;  // long: nothing leaves the window during a test
  o.prefix = prefix;
  o.durable_replicas = replicas;
  o.durable_timeout_ms = timeout_ms;
  o.failure_policy = policy;
  return o;
}

bool replica_in_sync(const RedisServer& master) {
  std::string info = master.command({"INFO", "replication"});
  return pltest::info_field(info, "connected_slaves") == "1" && info.find("state=online") != std::string::npos;
}

// ------------------------------------------------------------ standalone

// No replica at all: WAIT 1 can never be satisfied.
class NoReplica : public ::testing::Test {
 protected:
  static RedisServer& server() {
    if (!server_) server_ = std::make_unique<RedisServer>();
    return *server_;
  }
  static void TearDownTestSuite() { server_.reset(); }
  static std::unique_ptr<RedisServer> server_;
};
std::unique_ptr<RedisServer> NoReplica::server_;

constexpr int kTimeoutMs = 50;
// Margin for a loopback round trip on a loaded 2-core machine.
constexpr double kMarginMs = 250;

TEST_F(NoReplica, EveryAdmittedCheckIsNotDurableWithinTheTimeout) {
  auto client = open(server().url());
  Limiter l(client, options(5, "nd_error", 1, kTimeoutMs));
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    try {
      l.check("k");
      FAIL() << "admitted without an acknowledgement";
    } catch (const Error& e) {
      const double took = ms_between(t0, Clock::now());
      EXPECT_EQ(e.code(), ErrorCode::kNotDurable) << e.what();
      EXPECT_TRUE(e.outcome_unknown()) << "the units were consumed on the master";
      EXPECT_NE(std::strstr(e.what(), "0 of 1 replicas within 50 ms (WAIT)"), nullptr) << e.what();
      EXPECT_GE(took, kTimeoutMs - 5) << "WAIT did not wait";
      EXPECT_LE(took, kTimeoutMs + kMarginMs);
      if (i == 0) std::printf("durable, no replica: %s (%.1f ms)\n", e.what(), took);
    }
  }
  // The units stay consumed on the master: documented, and what a refund
  // must not assume away.
  EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("k"))), 3);
  // Peeks, refunds and resets send no WAIT: none of them waits the timeout.
  Limiter slow(client, options(5, "nd_error", 1, 800));
  const auto t0 = Clock::now();
  Decision p = slow.peek("k");
  EXPECT_TRUE(p.allowed);
  EXPECT_EQ(p.remaining, 2);
  slow.refund("k", 1);
  slow.reset("k");
  EXPECT_LT(ms_between(t0, Clock::now()), 400.0);
}

// A WAIT holds its connection until the replicas answer (here: its 2 s
// timeout). Checks made meanwhile on the same client must not queue behind
// it: the pool counts that connection as full (Mux::load) and sends them
// over its other one.
TEST_F(NoReplica, OtherChecksDoNotQueueBehindAWait) {
  ClientOptions co;
  co.pool.size = 2;
  co.pool.command_timeout_ms = 5000;
  auto client = Client::open(server().url(), co);
  Limiter durable(client, options(5, "hol_durable", 1, 2000));
  Limiter plain(client, options(1000, "hol_plain"));
  ASSERT_TRUE(plain.check("warm").allowed);  // one connection open
  std::atomic<bool> waited{false};
  std::thread holder([&] {
    try {
      durable.check("k");
    } catch (const Error&) {  // not durable after 2 s: expected
    }
    waited = true;
  });
  // The WAIT is on the server when CLIENT LIST shows it.
  ASSERT_TRUE(pltest::wait_until(
      [&] {
        return server().command({"CLIENT", "LIST"}).find("cmd=wait") != std::string::npos;
      },
      5s));
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(plain.check("k" + std::to_string(i)).allowed);
  EXPECT_FALSE(waited.load()) << "the checks made during the WAIT completed only after it";
  holder.join();
  EXPECT_TRUE(waited.load());
}

TEST_F(NoReplica, ADenialNeedsNoAcknowledgement) {
  auto client = open(server().url());
  Limiter plain(client, options(2, "nd_deny"));
  Limiter durable(client, options(2, "nd_deny", 1, kTimeoutMs));
  ASSERT_TRUE(plain.check("k").allowed);
  ASSERT_TRUE(plain.check("k").allowed);
  Decision d = durable.check("k");  // WAIT still rides along (and times out): the denial stands
  EXPECT_FALSE(d.allowed);
  EXPECT_FALSE(d.degraded);
  EXPECT_GT(d.retry_after_ms, 0);
}

TEST_F(NoReplica, EachFailurePolicyAnswersTheNotDurableOutcome) {
  auto client = open(server().url());
  struct Case {
    FailurePolicy policy;
    const char* prefix;
  };
  for (Case c : {Case{FailurePolicy::kOpen, "nd_open"}, Case{FailurePolicy::kClosed, "nd_closed"},
                 Case{FailurePolicy::kLocal, "nd_local"}}) {
    Limiter l(client, options(2, c.prefix, 1, kTimeoutMs, c.policy));
    std::vector<Decision> ds;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      ds.push_back(l.check("k"));
      EXPECT_LE(ms_between(t0, Clock::now()), kTimeoutMs + kMarginMs);
    }
    // The first two were admitted by the master but not acknowledged: the
    // policy answers them.
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(ds[i].degraded) << c.prefix;
      switch (c.policy) {
        case FailurePolicy::kOpen:   // admits: the guarantee is given up for availability
        case FailurePolicy::kLocal:  // the in-process limiter (limit 2) admits
          EXPECT_TRUE(ds[i].allowed) << c.prefix;
          break;
        default: EXPECT_FALSE(ds[i].allowed); EXPECT_EQ(ds[i].retry_after_ms, 1000);  // no breaker: 1 s
      }
    }
    // Their units stay consumed on the master, whatever the policy said: the
    // third check is a plain denial from Redis (which needs no acknowledgement).
    EXPECT_FALSE(ds[2].degraded) << c.prefix;
    EXPECT_FALSE(ds[2].allowed) << c.prefix;
    EXPECT_GT(ds[2].retry_after_ms, 3500 * 1000);
    EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("k"))), 2) << c.prefix;
  }
}

TEST_F(NoReplica, CheckManyReportsNotDurablePerKey) {
  auto client = open(server().url());
  Limiter plain(client, options(1, "nd_many"));
  ASSERT_TRUE(plain.check("full").allowed);
  Limiter l(client, options(1, "nd_many", 1, kTimeoutMs));
  const auto t0 = Clock::now();
  std::vector<polylimit::Outcome> out = l.check_many({"a", "full", "b"});
  // One pipeline, one WAIT: one timeout for the whole batch.
  EXPECT_LE(ms_between(t0, Clock::now()), kTimeoutMs + kMarginMs);
  ASSERT_EQ(out.size(), 3u);
  for (size_t i : {0u, 2u}) {
    ASSERT_TRUE(out[i].error) << i;
    try {
      std::rethrow_exception(out[i].error);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotDurable);
      EXPECT_TRUE(e.outcome_unknown());
    }
  }
  EXPECT_FALSE(out[1].error);
  EXPECT_FALSE(out[1].decision.allowed);  // the denial stands
}

TEST_F(NoReplica, TheBreakerStopsWaitingForAcknowledgements) {
  auto client = open(server().url());
  LimiterOptions o = options(1000, "nd_breaker", 1, 400, FailurePolicy::kClosed);
  o.breaker_failures = 3;
  o.breaker_cooldown_ms = 60000;
  Limiter l(client, o);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.check("k").degraded);
  const auto t0 = Clock::now();
  Decision d = l.check("k");  // fails fast: no round trip, no 400 ms wait
  EXPECT_LT(ms_between(t0, Clock::now()), 200.0);
  EXPECT_TRUE(d.degraded);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 60000);
  EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("k"))), 3);
}

TEST_F(NoReplica, OptionsAreValidatedBeforeAnyIo) {
  auto client = open(server().url(), /*command_timeout_ms=*/200);
  auto expect_invalid = [&](LimiterOptions o, const char* fragment) {
    try {
      Limiter l(client, o);
      ADD_FAILURE() << "accepted: " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::strstr(e.what(), fragment), nullptr) << e.what();
    }
  };
  expect_invalid(options(1, "v", -1), "durable_replicas = -1 is out of range 0..100");
  expect_invalid(options(1, "v", 101), "durable_replicas = 101 is out of range 0..100");
  expect_invalid(options(1, "v", 1, 0), "durable_timeout_ms = 0 is out of range 1..3600000");
  // WAIT's answer must come within the command's deadline.
  expect_invalid(options(1, "v", 1, 200),
                 "durable_timeout_ms = 200 must be below the client's command_timeout_ms = 200");
  Limiter ok(client, options(1, "v", 1, 199));
  // Off: the timeout is not looked at.
  Limiter off(client, options(1, "v", 0, 5000));
}

TEST(DurableMemory, InProcessDecisionsAreDurable) {
  auto client = Client::open("memory://");
  Limiter l(client, options(2, "m", 1, 100));
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_FALSE(l.check("k").allowed);
}

// WAITAOF (durable_aof) needs Redis 7.2 and appendonly yes; anything else is
// refused by the server, and the refusal is reported (a configuration error,
// not an outage), never taken for an acknowledgement.
TEST_F(NoReplica, DurableAofNeedsWaitaofAndAnAof) {
  auto client = open(server().url());
  LimiterOptions o = options(5, "nd_aof", 0, kTimeoutMs, FailurePolicy::kOpen);
  o.durable_aof = true;
  Limiter l(client, o);
  try {
    Decision d = l.check("k");
    FAIL() << "admitted: allowed " << d.allowed << " degraded " << d.degraded;
  } catch (const Error& e) {
    std::printf("durable_aof on %s: %s\n",
                pltest::info_field(server().command({"INFO", "server"}), "redis_version").c_str(), e.what());
    EXPECT_EQ(e.code(), ErrorCode::kServer) << e.what();
    EXPECT_NE(std::strstr(e.what(), "WAITAOF"), nullptr) << e.what();
    EXPECT_TRUE(e.outcome_unknown());  // admitted by the script: consumed
  }
}

TEST(DurableAof, AcknowledgedByTheLocalAofOnRedis72) {
  RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
  const std::string version = pltest::info_field(server.command({"INFO", "server"}), "redis_version");
  int major = 0, minor = 0;
  std::sscanf(version.c_str(), "%d.%d", &major, &minor);
  if (major < 7 || (major == 7 && minor < 2)) GTEST_SKIP() << "WAITAOF needs Redis 7.2; this is " << version;
  auto client = open(server.url());
  LimiterOptions o = options(2, "aof", 0, 500);
  o.durable_aof = true;
  Limiter l(client, o);
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_FALSE(l.check("k").allowed);
  // With a replica required and none attached: fsynced locally, not replicated.
  o.durable_replicas = 1;
  o.durable_timeout_ms = kTimeoutMs;
  o.prefix = "aof2";
  Limiter r(client, o);
  try {
    r.check("k");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotDurable) << e.what();
    EXPECT_NE(std::strstr(e.what(), "fsynced locally, 0 of 1 replicas"), nullptr) << e.what();
  }
}

// The C ABI: version 3 of polylimit_limiter_options added the mode; 0 for
// the timeout means the default; version 2 callers keep it off.
TEST_F(NoReplica, CApi) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server().url().c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  EXPECT_EQ(o.version, 4u);  // version 4 appended the lease options
  EXPECT_EQ(o.durable_replicas, 0);
  o.limit = 5;
  o.window_ms = 60000;
  o.prefix = "nd_capi";
  o.durable_replicas = 1;  // durable_timeout_ms 0: POLYLIMIT_DEFAULT_DURABLE_TIMEOUT_MS
  polylimit_limiter* l = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_OK) << err.message;
  polylimit_decision d;
  const auto t0 = Clock::now();
  EXPECT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, &err), POLYLIMIT_ENOTDURABLE);
  const double took = ms_between(t0, Clock::now());
  EXPECT_GE(took, POLYLIMIT_DEFAULT_DURABLE_TIMEOUT_MS - 5);
  EXPECT_LE(took, POLYLIMIT_DEFAULT_DURABLE_TIMEOUT_MS + kMarginMs);
  EXPECT_EQ(err.code, POLYLIMIT_ENOTDURABLE);
  EXPECT_EQ(err.outcome_unknown, 1);
  EXPECT_STREQ(polylimit_status_name(POLYLIMIT_ENOTDURABLE), "POLYLIMIT_ENOTDURABLE");
  EXPECT_EQ(d.allowed, 0);
  polylimit_limiter_free(l);

  o.failure_policy = POLYLIMIT_FAIL_CLOSED;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(polylimit_limiter_check(l, "k2", 2, 1, &d, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(d.allowed, 0);
  EXPECT_EQ(d.degraded, 1);
  polylimit_limiter_free(l);

  // A version-2 caller's struct ends before the durable fields: they are
  // neither read nor written.
  struct alignas(polylimit_limiter_options) {
    unsigned char v2[offsetof(polylimit_limiter_options, durable_replicas)];
    unsigned char canary[16];
  } old;
  std::memset(old.canary, 0xAB, sizeof old.canary);
  auto* v2 = reinterpret_cast<polylimit_limiter_options*>(old.v2);
  ASSERT_EQ(polylimit_limiter_options_init(v2, 2), POLYLIMIT_OK);
  for (unsigned char c : old.canary) ASSERT_EQ(c, 0xAB);
  v2->limit = 5;
  v2->window_ms = 60000;
  std::memset(old.canary, 0x7F, sizeof old.canary);  // garbage where durable_* would be
  ASSERT_EQ(polylimit_limiter_new(client, v2, &l, &err), POLYLIMIT_OK) << err.message;
  const auto t1 = Clock::now();
  EXPECT_EQ(polylimit_limiter_check(l, "k3", 2, 1, &d, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(d.allowed, 1);
  EXPECT_LT(ms_between(t1, Clock::now()), 50.0);
  polylimit_limiter_free(l);

  o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.limit = 5;
  o.window_ms = 60000;
  o.durable_replicas = 101;
  EXPECT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "durable_replicas = 101"), nullptr) << err.message;
  polylimit_client_close(client);
}

// ------------------------------------------------------------ one replica

TEST(DurableReplica, AcknowledgedWhileTheReplicaFollowsNotDurableWhileItIsPaused) {
  RedisServer master;
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  ASSERT_TRUE(pltest::wait_until([&] { return replica_in_sync(master); }, 20s));
  // A generous timeout: on a loaded machine an acknowledgement can take
  // longer than 50 ms, and this phase is about a replica that keeps up.
  auto client = open(master.url(), /*command_timeout_ms=*/3000);
  Limiter l(client, options(1000, "rep", 1, 1000));
  // Healthy: every check is acknowledged, exactly the limit is admitted.
  std::atomic<long> admitted{0}, denied{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        try {
          (l.check("k").allowed ? admitted : denied).fetch_add(1);
        } catch (const Error&) {
          errors.fetch_add(1);
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(admitted.load(), 1000);
  EXPECT_EQ(denied.load(), 200);
  EXPECT_EQ(replica.integer(pltest::ring_units(l.storage_key("k"))), 1000);

  // A replica that stops answering: checks are not durable (not admitted).
  Limiter quick(client, options(1000, "rep", 1, kTimeoutMs));
  replica.pause();
  int not_durable = 0;
  for (int i = 0; i < 3; ++i) {
    try {
      quick.check("fresh");
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kNotDurable) ++not_durable;
    }
  }
  replica.resume();
  EXPECT_EQ(not_durable, 3);
  // It catches up, and checks are admitted again.
  EXPECT_TRUE(pltest::wait_until(
      [&] {
        try {
          return l.check("fresh").allowed;
        } catch (const Error&) {
          return false;
        }
      },
      10s));
}

// ------------------------------------------------------------ Cluster

// Each master's pipeline ends with its own WAIT: a batch over three masters
// with a replica each is acknowledged everywhere; without replicas, no
// admitted key is.
TEST(DurableCluster, EveryMasterWaitsForItsReplica) {
  for (int replicas : {1, 0}) {
    pltest::RedisCluster cluster(3, replicas);
    // With replicas, a timeout that a loaded machine cannot miss.
    auto client = open(cluster.url(), /*command_timeout_ms=*/3000);
    Limiter l(client, options(1, "dc", 1, replicas ? 1000 : kTimeoutMs));
    std::vector<std::string> names;
    for (int i = 0; i < 30; ++i) names.push_back("key" + std::to_string(i));
    std::vector<std::string_view> keys(names.begin(), names.end());
    std::vector<polylimit::Outcome> out = l.check_many(keys);
    int admitted = 0, not_durable = 0;
    for (const auto& o : out) {
      if (!o.error) {
        admitted += o.decision.allowed ? 1 : 0;
        continue;
      }
      try {
        std::rethrow_exception(o.error);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kNotDurable) ++not_durable;
      }
    }
    EXPECT_EQ(admitted, replicas ? 30 : 0);
    EXPECT_EQ(not_durable, replicas ? 0 : 30);
    if (replicas) {
      EXPECT_TRUE(l.check("single").allowed);
      EXPECT_FALSE(l.check("single").allowed);
    } else {
      EXPECT_THROW(l.check("single"), Error);
    }
  }
}

// ------------------------------------------------------------ Sentinel, under load

// Threads that check one key until stopped, counting what callers saw:
// admitted (allowed, not degraded: what the caller acts on), denied, degraded
// answers of the failure policy, and errors (not-durable ones apart).
class Load {
 public:
  Load(Limiter& l, int threads, std::chrono::microseconds pause) {
    for (int t = 0; t < threads; ++t)
      threads_.emplace_back([this, &l, pause] {
        while (!stop_.load()) {
          try {
            Decision d = l.check("k");
            if (d.degraded)
              degraded.fetch_add(1);
            else
              (d.allowed ? admitted : denied).fetch_add(1);
          } catch (const Error& e) {
            const bool nd = e.code() == ErrorCode::kNotDurable;
            (nd ? not_durable : errors).fetch_add(1);
            std::lock_guard<std::mutex> lock(mu_);
            std::string& first = nd ? first_not_durable_ : first_error_;
            if (first.empty()) first = std::string(polylimit::error_code_name(e.code())) + ": " + e.what();
          }
          std::this_thread::sleep_for(pause);
        }
      });
  }
  ~Load() { stop(); }
  void stop() {
    stop_.store(true);
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  std::string first_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error_;
  }
  std::string first_not_durable() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_not_durable_;
  }
  std::atomic<long> admitted{0}, denied{0}, degraded{0}, errors{0}, not_durable{0};

 private:
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string first_error_, first_not_durable_;
  std::vector<std::thread> threads_;
};

enum class Event { kSentinelFailover, kKillMaster, kKillMasterLaggingReplica };

const char* event_name(Event e) {
  switch (e) {
    case Event::kSentinelFailover: return "SENTINEL FAILOVER";
    case Event::kKillMaster: return "SIGKILL of the master";
    default: return "SIGKILL of the master, its replica cut off while the master stored 100 more units";
  }
}

struct Params {
  Event event;
  bool durable;
};

class SentinelUnderLoad : public ::testing::TestWithParam<Params> {};

// Loads one key through `event`, then until the new master's log is full and
// checks are denied; counts what callers were told.
TEST_P(SentinelUnderLoad, AdmittedVersusLimit) {
  const Params p = GetParam();
  const std::string name = std::string("dur") + std::to_string(static_cast<int>(p.event)) + (p.durable ? "on" : "off");
  RedisSentinels s(name);
  auto client = open(s.url());
  auto& transport = dynamic_cast<polylimit::SentinelTransport&>(
      dynamic_cast<polylimit::RedisBackend&>(client->backend()).transport());
  RedisServer& old_server = s.master();
  RedisServer& new_server = s.replica();
  const std::string new_master = "127.0.0.1:" + std::to_string(new_server.port());
  constexpr int64_t kLimit = 3000;
  // With the mode, SENTINEL FAILOVER runs with policy "error" and the kills
  // with "closed" (both keep the guarantee; "open" would give it up).
  const FailurePolicy policy = p.event == Event::kSentinelFailover ? FailurePolicy::kError : FailurePolicy::kClosed;
  Limiter l(client, options(kLimit, name, p.durable ? 1 : 0, 100, policy));
  Load load(l, 4, 2000us);  // ~1 500 checks/s: the limit is reached only after the event
  const std::string skey = l.storage_key("k");
  ASSERT_TRUE(pltest::wait_until([&] { return load.admitted.load() >= 200; }, 20s)) << load.first_error();
  const long at_event = load.admitted.load();
  auto t0 = Clock::now();  // the promotion is timed from the failover or the kill
  switch (p.event) {
    case Event::kSentinelFailover: s.sentinel_failover(); break;
    case Event::kKillMaster: s.kill_master(); break;
    case Event::kKillMasterLaggingReplica:
      // The replication link breaks (the replica, stopped, cannot come back):
      // what the master admits meanwhile exists nowhere else when it dies.
      new_server.pause();
      EXPECT_EQ(old_server.command({"CLIENT", "KILL", "TYPE", "replica"}), "1");
      {
        // Until the master holds kLagUnits units the replica never got: as
        // many lost writes with the mode as without (~70 ms of checks without
        // it, ~2.5 s with it, where each waits durable_timeout_ms for an
        // acknowledgement that cannot come).
        constexpr long long kLagUnits = 100;
        const long long at_cut = old_server.integer(pltest::ring_units(skey));
        EXPECT_TRUE(
            pltest::wait_until([&] { return old_server.integer(pltest::ring_units(skey)) >= at_cut + kLagUnits; }, 20s))
            << "the master stored " << old_server.integer(pltest::ring_units(skey)) - at_cut
            << " units after the replica was cut off, not " << kLagUnits;
      }
      t0 = Clock::now();
      s.kill_master();
      new_server.resume();
      break;
  }
  // On a loaded machine a SENTINEL FAILOVER is now and then abandoned (no
  // promotion within the failover timeout): ask once more. That is the
  // server's business, not what is measured here.
  for (int attempt = 1;; ++attempt) {
    try {
      s.wait_promoted(15s);
      break;
    } catch (const std::exception& e) {
      if (p.event != Event::kSentinelFailover || attempt == 3) throw;
      std::printf("  (no promotion after 15 s: %s; SENTINEL FAILOVER again)\n", e.what());
      try {
        s.sentinel_failover();
      } catch (const std::exception&) {
      }
    }
  }
  const double promoted_ms = ms_between(t0, Clock::now());
  ASSERT_TRUE(pltest::wait_until([&] { return transport.master_address() == new_master; }, 10s));
  // Give the new master a replica again, as Sentinel does seconds later (or an
  // operator restarting the crashed host): the old master, emptied by a full
  // resync. Until then, with the mode, no check can be acknowledged.
  if (p.event != Event::kSentinelFailover) {
    old_server.stop();   // reaps the killed process
    old_server.start();  // empty: no persistence
  }
  // Sentinel may be making it a replica at the same moment: its
  // reconfiguration ends with CLIENT KILL TYPE normal, which can close this
  // command's connection before the reply. REPLICAOF is idempotent: again.
  for (int attempt = 1;; ++attempt) {
    try {
      EXPECT_EQ(old_server.command({"REPLICAOF", "127.0.0.1", std::to_string(new_server.port())}), "OK");
      break;
    } catch (const std::exception& e) {
      if (attempt == 5) throw;
      std::printf("  (REPLICAOF: %s; again)\n", e.what());
      std::this_thread::sleep_for(100ms);
    }
  }
  ASSERT_TRUE(pltest::wait_until([&] { return new_server.integer(pltest::ring_units(skey)) == kLimit; }, 60s))
      << "the new master's log never filled: " << new_server.integer(pltest::ring_units(skey)) << "; "
      << load.first_error();
  const long denied_full = load.denied.load();
  ASSERT_TRUE(pltest::wait_until([&] { return load.denied.load() >= denied_full + 300; }, 30s));
  load.stop();
  const long admitted = load.admitted.load();
  std::printf(
      "sentinel, %s, failover-safe mode %s: promoted after %.0f ms; admitted %ld (%ld before the event) for "
      "a limit of %lld: over-admission %lld; not durable %ld, degraded %ld, other errors %ld (first: %s)\n",
      event_name(p.event), p.durable ? "ON (1 replica, 100 ms)" : "off", promoted_ms, admitted, at_event,
      static_cast<long long>(kLimit), static_cast<long long>(std::max<int64_t>(0, admitted - kLimit)),
      load.not_durable.load(), load.degraded.load(), load.errors.load(), load.first_error().c_str());
  if (load.not_durable.load()) std::printf("  first not durable: %s\n", load.first_not_durable().c_str());
  EXPECT_LT(at_event, kLimit) << "the limit was reached before the event: nothing was tested";
  if (p.durable) {
    EXPECT_LE(admitted, kLimit) << "failover-safe mode over-admitted";
  } else {
    // Printed, not asserted: how much a failover over-admits depends on
    // timing (and a check cut off by the kill may have consumed a unit
    // without being admitted).
    EXPECT_EQ(load.not_durable.load(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Durable, SentinelUnderLoad,
                         ::testing::Values(Params{Event::kSentinelFailover, false},
                                           Params{Event::kSentinelFailover, true}, Params{Event::kKillMaster, false},
                                           Params{Event::kKillMaster, true},
                                           Params{Event::kKillMasterLaggingReplica, false},
                                           Params{Event::kKillMasterLaggingReplica, true}),
                         [](const ::testing::TestParamInfo<Params>& info) {
                           const char* e = info.param.event == Event::kSentinelFailover ? "SentinelFailover"
                                           : info.param.event == Event::kKillMaster     ? "KillMaster"
                                                                                        : "KillMasterLaggingReplica";
                           return std::string(e) + (info.param.durable ? "_ModeOn" : "_ModeOff");
                         });

// ------------------------------------------------------------ cost

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(i), v.end());
  return v[i];
}

// Latency and throughput with and without the mode, on a master with one
// replica on loopback (random keys, so that most checks admit and write).
TEST(DurableCost, LatencyAndThroughputTable) {
  RedisServer master;
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  ASSERT_TRUE(pltest::wait_until([&] { return replica_in_sync(master); }, 20s));
  // The timeout only matters when a replica is missing or late; it is large
  // here so that a loaded machine does not turn a slow acknowledgement into
  // an error.
  auto client = open(master.url(), /*command_timeout_ms=*/3000);
  const auto kRun = 3s;
  std::printf("\n%-40s %9s %9s %11s %7s\n", "failover-safe mode", "p50 ms", "p99 ms", "checks/s", "errors");
  for (int threads_n : {1, 8}) {
    for (int replicas : {0, 1}) {
      const std::string prefix = "cost" + std::to_string(threads_n) + (replicas ? "on" : "off");
      Limiter l(client, options(100, prefix, replicas, 1000));
      std::vector<std::vector<double>> lat(static_cast<size_t>(threads_n));
      std::atomic<long> errors{0};
      std::atomic<bool> stop{false};
      std::vector<std::thread> threads;
      const auto t0 = Clock::now();
      for (int t = 0; t < threads_n; ++t)
        threads.emplace_back([&, t] {
          std::mt19937 rng(static_cast<unsigned>(t));
          std::vector<double>& mine = lat[static_cast<size_t>(t)];
          mine.reserve(200000);
          while (!stop.load()) {
            const std::string key = "u" + std::to_string(rng() % 100000);
            const auto a = Clock::now();
            try {
              l.check(key);
            } catch (const Error&) {
              errors.fetch_add(1);
            }
            mine.push_back(ms_between(a, Clock::now()));
          }
        });
      std::this_thread::sleep_for(kRun);
      stop.store(true);
      for (auto& th : threads) th.join();
      const double secs = ms_between(t0, Clock::now()) / 1000.0;
      std::vector<double> all;
      for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
      const double n = static_cast<double>(all.size());
      const double p50 = percentile(all, 0.50), p99 = percentile(all, 0.99);
      const std::string label = std::string(replicas ? "on (WAIT 1 replica), " : "off, ") + std::to_string(threads_n) +
                                (threads_n == 1 ? " thread" : " threads");
      std::printf("%-40s %9.3f %9.3f %11.0f %7ld\n", label.c_str(), p50, p99, n / secs, errors.load());
      EXPECT_EQ(errors.load(), 0) << label;
      EXPECT_GT(all.size(), 100u);
    }
  }
  std::printf("\n");
}

}  // namespace
