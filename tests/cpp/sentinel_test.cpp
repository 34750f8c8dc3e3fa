// Redis Sentinel: one master, one replica, three sentinels on loopback. The
// client follows a promotion (a demoted master answering READONLY, and a
// killed master) and reports clear errors for bad topology input.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "backend/redis_backend.h"
#include "fault_proxy.h"
#include "hammer.h"
#include "polylimit/client.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_cluster.h"
#include "transport/sentinel_transport.h"

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
// With `async`, the hammering threads go through the non-blocking path.
void through_failover(RedisSentinels& s, const char* what, const char* prefix, const std::function<void()>& cause,
                      bool demote, bool async = false) {
  auto client = open(s.url());
  auto& transport = sentinel_transport(*client);
  RedisServer& old_server = s.master();
  RedisServer& new_server = s.replica();
  const std::string old_master = "127.0.0.1:" + std::to_string(old_server.port());
  const std::string new_master = "127.0.0.1:" + std::to_string(new_server.port());
  EXPECT_EQ(transport.master_address(), old_master);
  constexpr int64_t kLimit = 5000;
  auto shared = std::make_shared<Limiter>(client, limit(kLimit, prefix));
  Limiter& l = *shared;
  // Slow enough not to reach the limit before the move.
  std::unique_ptr<Hammer> hammer =
      async ? std::make_unique<Hammer>(shared, "k", 4, 2000us) : std::make_unique<Hammer>(l, "k", 4, 2000us);
  Hammer& h = *hammer;
  ASSERT_TRUE(Hammer::wait_for([&] { return h.attempts.load() >= 20; }, 20s));
  const long jobs_before = transport.background_jobs();
  ASSERT_TRUE(Hammer::wait_for([&] { return h.admitted.load() >= 100; }, 20s));
  long at_event = h.admitted.load();
  int64_t t0 = pltest::steady_ns();
  h.unknown_since_ns.store(t0);
  cause();
  s.wait_promoted();
  int64_t promoted = pltest::steady_ns();
  if (demote) EXPECT_EQ(old_server.command({"REPLICAOF", "127.0.0.1", std::to_string(new_server.port())}), "OK");
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
  const long jobs = transport.background_jobs() - jobs_before;
  long long logged = new_server.integer(pltest::ring_units(l.storage_key("k")));
  std::printf(
      "sentinel, %s: promoted after %.0f ms, client on the new master %.0f ms after the promotion; "
      "%ld errors (first: %s); last error %.0f ms after the event; admitted %ld (%ld before the event, %ld "
      "when the client moved), new master's log holds %lld, limit %lld; %ld resolutions, %ld READONLY "
      "replies; %s: %ld of %ld calls on library threads\n",
      what, ms_since(t0, promoted), ms_since(promoted, moved), h.errors.load(), h.first_error_text().c_str(), recovered,
      h.admitted.load(), at_event, at_move, logged, static_cast<long long>(kLimit), transport.resolutions(),
      transport.readonly_replies(), async ? "check_async" : "check", jobs, h.attempts.load());
  // A call takes a library thread only when it fails, meets a READONLY
  // master, or is among the first few (the first resolution).
  if (async)
    EXPECT_LE(jobs, h.errors.load() + transport.readonly_replies() + 10)
        << "calls that went through took a library thread";
  else
    EXPECT_EQ(jobs, 0);
  EXPECT_LT(at_move, kLimit) << "the limit was reached before the move: nothing was tested";
  EXPECT_LT(recovered, 15000.0);
  EXPECT_EQ(logged, kLimit);
  // Every unit the new master holds was admitted, or taken by a call that
  // failed with an unknown outcome from the event on: one sent to the new
  // master, or one the old master ran and replicated just before a SIGKILL
  // cut its reply off.
  EXPECT_GE(h.admitted.load() + h.unknown_late.load(), kLimit);
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
  through_failover(
      s, "SENTINEL FAILOVER", "demote", [&] { s.sentinel_failover(); }, true);
}

// The same through the non-blocking path. A call that meets the demoted
// master (READONLY) re-resolves and goes on through the blocking path on a
// library thread; the follower usually moves the client before any does.
TEST(Sentinel, DemotedMasterAnswersReadonlyAndAsyncChecksMove) {
  RedisSentinels s;
  through_failover(
      s, "SENTINEL FAILOVER", "demote-async", [&] { s.sentinel_failover(); }, true, true);
}

// Leases across SENTINEL FAILOVER, in failover-safe mode. The old master
// takes writes until it is demoted, and loses them when it resyncs; a lease
// opens only once its take is acknowledged by a replica (WAIT), and the old
// master's only replica is the one promoted, so no lease opens from a write
// that is lost. The documented bound holds across the failover: at most the
// limit plus one lease (one limiter object holds leases); and leases resume
// once the demoted master replicates the new one.
TEST(Sentinel, FailoverWithDurableLeases) {
  RedisSentinels s;
  auto client = open(s.url());
  RedisServer& new_server = s.replica();
  constexpr int64_t kLimit = 4000, kLease = 20;
  LimiterOptions o = limit(kLimit, "failover-lease");
  o.lease_units = kLease;
  o.lease_ms = 100;
  o.durable_replicas = 1;
  Limiter l(client, o);
  // 4 threads, 10 ms apart: the limit is 10 s away.
  Hammer h(l, "k", 4, 10000us);
  ASSERT_TRUE(Hammer::wait_for([&] { return h.admitted.load() >= 100; }, 20s));
  const int64_t t0 = pltest::steady_ns();
  s.sentinel_failover();
  s.wait_promoted();
  const int64_t promoted = pltest::steady_ns();
  const long at_promotion = h.admitted.load();
  h.set_pause(500us);
  ASSERT_TRUE(Hammer::wait_for([&] { return h.denied.load() >= 500; }, 60s));
  h.stop();
  const long long logged = new_server.integer(pltest::ring_units(l.storage_key("k")));
  const polylimit::Stats st = client->stats();
  std::printf(
      "sentinel, SENTINEL FAILOVER, durable leases of %lld: promoted after %.0f ms; admitted %ld (%ld at "
      "promotion), %ld errors (%s); new master's log holds %lld, limit %lld; leased %llu, refunded %llu, "
      "stranded %llu units\n",
      static_cast<long long>(kLease), ms_since(t0, promoted), h.admitted.load(), at_promotion, h.errors.load(),
      h.first_error_text().c_str(), logged, static_cast<long long>(kLimit),
      static_cast<unsigned long long>(st.leased_units), static_cast<unsigned long long>(st.refunded_units),
      static_cast<unsigned long long>(st.stranded_units));
  EXPECT_LT(at_promotion, kLimit) << "the limit was reached before the promotion: nothing was tested";
  EXPECT_GT(h.admitted.load(), at_promotion + 1000) << "leases did not resume on the new master";
  EXPECT_LE(h.admitted.load(), kLimit + kLease);
  EXPECT_LE(logged, kLimit);
}

TEST(Sentinel, KilledMasterIsReplacedByPromotedReplica) {
  RedisSentinels s;
  through_failover(
      s, "SIGKILL of the master", "kill", [&] { s.kill_master(); }, false);
}

// The same through the non-blocking path: a failed send re-resolves on a
// library thread before its error completes the call.
TEST(Sentinel, KilledMasterIsReplacedUnderAsyncChecks) {
  RedisSentinels s;
  through_failover(
      s, "SIGKILL of the master", "kill-async", [&] { s.kill_master(); }, false, true);
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
    EXPECT_NE(std::string(e.what()).find("no sentinel knows a master named \"nosuchmaster\": check the name at the "
                                         "end of the URL (redis+sentinel://hosts/<name>"),
              std::string::npos)
        << e.what();
  }
  // The right name works on the same sentinels.
  Limiter ok(open(url(sentinels().name())), limit(5, "wrong-name"));
  EXPECT_TRUE(ok.check("k").allowed);
}

TEST_F(SharedSentinels, DataAndSentinelPasswords) {
  Limiter ok(open(url("secured")), limit(5, "passwords"));
  EXPECT_TRUE(ok.check("k").allowed);

  for (auto [data_pw, sentinel_pw] :
       {std::pair<const char*, const char*>{"data%26pw", "wrong"}, {"wrong", "sen%40pw"}}) {
    Limiter bad(open(url("secured", data_pw, sentinel_pw)), limit(5, "passwords"));
    try {
      bad.check("k");
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kAuth) << e.what();
    }
  }
}

namespace {

int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void store_min(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load();
  while ((cur == 0 || v < cur) && !a.compare_exchange_weak(cur, v)) {
  }
}

void store_max(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load();
  while (v > cur && !a.compare_exchange_weak(cur, v)) {
  }
}

// Reads pushed replies (SUBSCRIBE, MONITOR) on a thread, handing each to
// `on_reply`, until stopped or disconnected.
class Listener {
 public:
  Listener(int port, const std::vector<std::string>& argv, std::function<void(const polylimit::Reply*)> on_reply)
      : reader_(port, argv), on_reply_(std::move(on_reply)) {
    if (!reader_.next(std::chrono::seconds(2))) throw std::runtime_error("no reply to " + argv[0]);
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        polylimit::ReplyPtr r;
        try {
          r = reader_.next(std::chrono::milliseconds(50));
        } catch (const polylimit::Error&) {
          break;
        }
        if (r) on_reply_(r.get());
      }
    });
  }
  ~Listener() { stop(); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  pltest::PushReader reader_;
  std::function<void(const polylimit::Reply*)> on_reply_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

}  // namespace

// The first sentinel of the URL accepts connections and never answers (a
// blackhole in front of it). A client that knows the master must never wait
// on it: the periodic re-check runs on a background thread of the client, and asks the
// sentinels all at once.
TEST(SentinelFollower, HungFirstSentinelNeverStallsCallers) {
  RedisSentinels s("hungfirst", "", "", false);
  pltest::FaultProxy hung(s.sentinel_port(0));
  hung.set(pltest::FaultProxy::Mode::kBlackhole);
  const std::string url = "redis+sentinel://127.0.0.1:" + std::to_string(hung.port()) +
                          ",127.0.0.1:" + std::to_string(s.sentinel_port(1)) +
                          ",127.0.0.1:" + std::to_string(s.sentinel_port(2)) + "/hungfirst";
  constexpr int kTimeoutMs = 300;
  ClientOptions o;
  o.pool.size = 16;
  o.pool.connect_timeout_ms = kTimeoutMs;
  o.pool.command_timeout_ms = kTimeoutMs;
  auto client = Client::open(url, o);
  auto& transport = sentinel_transport(*client);
  Limiter l(client, limit(1000000, "hungfirst"));
  int64_t t0 = pltest::steady_ns();
  EXPECT_TRUE(l.check("k").allowed);
  double first_ms = ms_since(t0, pltest::steady_ns());
  // One deadline for the first resolution, whatever the hung sentinel does.
  EXPECT_LT(first_ms, 2.0 * kTimeoutMs);
  ASSERT_TRUE(Hammer::wait_for([&] { return transport.subscriptions() == 2; }, 10s));
  long resolutions_before = transport.resolutions();

  constexpr int kThreads = 4;
  std::vector<std::vector<double>> latencies(kThreads);
  std::atomic<long> errors{0};
  std::vector<std::thread> threads;
  const auto end = std::chrono::steady_clock::now() + 6s;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (std::chrono::steady_clock::now() < end) {
        int64_t a = pltest::steady_ns();
        try {
          l.check("k");
        } catch (const Error&) {
          ++errors;
        }
        latencies[t].push_back(ms_since(a, pltest::steady_ns()));
        std::this_thread::sleep_for(2ms);
      }
    });
  for (auto& t : threads) t.join();
  std::vector<double> all;
  for (auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  double p50 = percentile(all, 0.50), p99 = percentile(all, 0.99), max = percentile(all, 1.0);
  long resolutions = transport.resolutions() - resolutions_before;
  std::printf(
      "sentinel, first sentinel hung: first call %.1f ms; %zu checks from %d threads over 6 s: p50 %.3f ms, "
      "p99 %.3f ms, max %.3f ms (command timeout %d ms); %ld errors; %ld background resolutions\n",
      first_ms, all.size(), kThreads, p50, p99, max, kTimeoutMs, errors.load(), resolutions);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(all.size(), 1000u);
  EXPECT_LE(p99, 20.0);
  EXPECT_LT(max, static_cast<double>(kTimeoutMs));
  // The safety-net re-check did run meanwhile (about once a second).
  EXPECT_GE(resolutions, 4);
}

// SENTINEL FAILOVER under load: the client stops writing to the old master
// within milliseconds of the sentinels' +switch-master announcement.
TEST(SentinelFollower, FailoverFollowedWithinMilliseconds) {
  RedisSentinels s("followfast");
  auto client = open(s.url());
  auto& transport = sentinel_transport(*client);
  RedisServer& old_server = s.master();
  RedisServer& new_server = s.replica();
  const std::string new_master = "127.0.0.1:" + std::to_string(new_server.port());
  constexpr int64_t kLimit = 5000;
  Limiter l(client, limit(kLimit, "followfast"));
  ASSERT_TRUE(l.check("warm").allowed);
  ASSERT_TRUE(Hammer::wait_for([&] { return transport.subscriptions() == 3; }, 10s));

  // The earliest +switch-master for our master, heard by the test itself.
  std::atomic<int64_t> announced_us{0};
  std::vector<std::unique_ptr<Listener>> announcers;
  for (int i = 0; i < 3; ++i)
    announcers.push_back(std::make_unique<Listener>(
        s.sentinel_port(i), std::vector<std::string>{"SUBSCRIBE", "+switch-master"}, [&](const polylimit::Reply* r) {
          if (r->type == polylimit::ReplyType::kArray && r->elements == 3 && r->element[2]->str &&
              std::string(r->element[2]->str, r->element[2]->len).rfind("followfast ", 0) == 0)
            store_min(announced_us, wall_us());
        }));
  // The last script call the old master executed (MONITOR: server time).
  std::atomic<int64_t> last_write_us{0};
  std::atomic<long> monitored{0};
  Listener monitor(old_server.port(), {"MONITOR"}, [&](const polylimit::Reply* r) {
    if (r->type != polylimit::ReplyType::kStatus || !r->str) return;
    std::string line(r->str, r->len);
    if (line.find("\"EVALSHA\"") == std::string::npos && line.find("\"EVAL\"") == std::string::npos) return;
    ++monitored;
    store_max(last_write_us, static_cast<int64_t>(std::atof(line.c_str()) * 1e6));
  });

  Hammer h(l, "k", 4, 2000us);
  ASSERT_TRUE(Hammer::wait_for([&] { return h.admitted.load() >= 100 && monitored.load() >= 100; }, 20s));
  s.sentinel_failover();
  ASSERT_TRUE(Hammer::wait_for([&] { return announced_us.load() != 0; }, 30s)) << "no +switch-master";
  ASSERT_TRUE(Hammer::wait_for([&] { return transport.master_address() == new_master; }, 10s));
  long at_move = h.admitted.load();
  // Late writes to the old master would show within this second.
  int64_t settle = pltest::steady_ns();
  ASSERT_TRUE(Hammer::wait_for([&] { return pltest::steady_ns() - settle > 1000000000; }, 5s));
  monitor.stop();
  long denied_then = h.denied.load();
  ASSERT_TRUE(Hammer::wait_for([&] { return h.denied.load() >= denied_then + 1000; }, 30s));
  h.stop();
  for (auto& a : announcers) a->stop();
  const double gap_ms = (last_write_us.load() - announced_us.load()) / 1000.0;
  std::printf(
      "sentinel, SENTINEL FAILOVER under load: the client's last write to the old master came %.1f ms after "
      "the first +switch-master (%ld switch messages acted upon, %ld resolutions); admitted %ld for a limit "
      "of %lld: over-admission %lld (no failover-safe mode); %ld errors (first: %s)\n",
      gap_ms, transport.switch_messages(), transport.resolutions(), h.admitted.load(), static_cast<long long>(kLimit),
      static_cast<long long>(h.admitted.load() - kLimit), h.errors.load(), h.first_error_text().c_str());
  EXPECT_LT(at_move, kLimit) << "the limit was reached before the move: nothing was tested";
  EXPECT_GT(last_write_us.load(), 0);
  EXPECT_LE(gap_ms, 50.0);
  EXPECT_GE(transport.switch_messages(), 1);
  EXPECT_EQ(h.errors.load(), 0) << h.first_error_text();
  EXPECT_GE(h.admitted.load(), kLimit);
}

// A master without persistence (the fixture runs every server with --save ''
// and --appendonly no) killed with SIGKILL and restarted before the sentinels
// fail it over (down-after-milliseconds 1000): it comes back empty, stays the
// master, and its replica resyncs from it and empties too. Every limit it held
// is admitted again in full. Nothing in the client can prevent this; the
// server's persistence or a failover before the restart can.
TEST(SentinelRestart, MasterWithoutPersistenceRestartedBeforeFailover) {
  RedisSentinels s("norestore");
  auto client = open(s.url());
  auto& transport = sentinel_transport(*client);
  RedisServer& master = s.master();
  RedisServer& replica = s.replica();
  const std::string master_address = "127.0.0.1:" + std::to_string(master.port());
  EXPECT_EQ(master.command({"CONFIG", "GET", "appendonly"}), "appendonly\nno");
  EXPECT_EQ(master.command({"CONFIG", "GET", "save"}), "save\n");
  constexpr int64_t kLimit = 1000;
  Limiter l(client, limit(kLimit, "norestore"));
  const std::string skey = l.storage_key("k");
  Hammer h(l, "k", 4, 1000us);
  // The limit is used up, and the replica has all of it.
  ASSERT_TRUE(Hammer::wait_for([&] { return h.denied.load() >= 100; }, 30s));
  ASSERT_TRUE(Hammer::wait_for([&] { return replica.integer(pltest::ring_units(skey)) == kLimit; }, 10s));
  const long admitted_before = h.admitted.load();
  const long errors_before = h.errors.load();
  const std::string old_log = replica.command({"GET", skey});

  const int64_t t0 = pltest::steady_ns();
  ::kill(pltest::server_pid(master), SIGKILL);
  master.stop();   // reaps it
  master.start();  // same port and arguments, empty
  const int64_t restarted = pltest::steady_ns();
  ASSERT_TRUE(Hammer::wait_for(
      [&] { return h.last_success_ns.load() > restarted && pltest::steady_ns() - h.last_error_ns.load() > 500000000; },
      30s));
  const double recovered = h.errors.load() > errors_before ? ms_since(t0, h.last_error_ns.load()) : 0.0;
  const long denied_then = h.denied.load();
  ASSERT_TRUE(Hammer::wait_for([&] { return h.denied.load() >= denied_then + 500; }, 30s));
  h.stop();
  const long long stored = master.integer(pltest::ring_units(skey));
  const long admitted_after = h.admitted.load() - admitted_before;
  // The replica followed the empty master (a full resync): its copy of the
  // old log is gone too.
  const std::string new_log = master.command({"GET", skey});
  const bool replica_emptied = Hammer::wait_for(
                                   [&] {
                                     return replica.command({"GET", skey}) == new_log;
                                   },
                                   10s) &&
                               new_log != old_log;
  std::printf(
      "sentinel, SIGKILL + restart of a master without persistence (%.0f ms down): %ld admitted before "
      "the kill, %ld after the restart, limit %lld: over-admission %ld (a whole limit); %ld errors (first: "
      "%s), last error %.0f ms after the kill; the master's log holds %lld, the replica %s; master still "
      "%s\n",
      ms_since(t0, restarted), admitted_before, admitted_after, static_cast<long long>(kLimit),
      h.admitted.load() - kLimit, h.errors.load() - errors_before, h.first_error_text().c_str(), recovered, stored,
      replica_emptied ? "resynced from it (old log gone)" : "kept the old log", transport.master_address().c_str());
  EXPECT_EQ(transport.master_address(), master_address) << "a failover happened: the restart case was not tested";
  EXPECT_EQ(admitted_before, kLimit);
  EXPECT_EQ(admitted_after, kLimit);  // the whole limit again
  EXPECT_EQ(stored, kLimit);
  EXPECT_TRUE(replica_emptied);
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
