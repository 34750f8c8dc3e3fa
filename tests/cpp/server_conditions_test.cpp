// What the scripts do when Redis is not a friendly empty server: keys of the
// wrong type, tiny windows, out of memory, ACL users, huge identifiers,
// caller-supplied time that lags real time, and replies that cannot be ours.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "error_code.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "polylimit/metrics.h"
#include "redis_server.h"

using namespace polylimit;
using pltest::code_of;
using namespace std::chrono_literals;

namespace {

const Algorithm kAll[] = {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow,
                          Algorithm::kGcra};

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

std::string unique_prefix() {
  static std::atomic<int> n{0};
  return "cond" + std::to_string(n++);
}

LimiterOptions options(std::vector<LimitParams> limits) {
  LimiterOptions o;
  o.limits = std::move(limits);
  o.prefix = unique_prefix();
  return o;
}

class Each : public ::testing::TestWithParam<Algorithm> {};

}  // namespace

// The second of two limits holds a key of the wrong type: the call fails and
// the first limit's state is exactly as before (a check, and a refund).
TEST_P(Each, AFailingLimitLeavesTheOthersUntouched) {
  auto client = Client::open(server().url());
  Limiter l(client, options({{GetParam(), 10, 60000}, {GetParam(), 100, 3600000}}));
  auto keys = l.storage_keys("k");
  ASSERT_TRUE(l.check("k", 3).allowed);
  const std::string first_before = server().command({"DUMP", keys[0]});
  server().command({"DEL", keys[1]});
  server().command({"RPUSH", keys[1], "not ours"});
  std::string msg;
  EXPECT_EQ(code_of([&] { l.check("k", 2); }, &msg), ErrorCode::kScript) << msg;
  EXPECT_EQ(server().command({"DUMP", keys[0]}), first_before);
  EXPECT_EQ(code_of([&] { l.refund("k", 2); }, &msg), ErrorCode::kScript) << msg;
  EXPECT_EQ(server().command({"DUMP", keys[0]}), first_before);
  // A fresh caller key: the first limit's key is not even created.
  auto fresh = l.storage_keys("fresh");
  server().command({"RPUSH", fresh[1], "not ours"});
  EXPECT_EQ(code_of([&] { l.check("fresh"); }), ErrorCode::kScript);
  EXPECT_EQ(server().integer({"EXISTS", fresh[0]}), 0);
}

// A 1 ms window expires keys between and during checks; no check may fail.
TEST_P(Each, OneMillisecondWindowsNeverError) {
  auto client = Client::open(server().url(), ClientOptions{{4}});
  Limiter l(client, options({{GetParam(), 1, 1}, {GetParam(), 5, 3}}));
  const int per_thread = GetParam() == Algorithm::kSlidingLog ? 25000 : 5000;
  std::atomic<long> errors{0}, admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        try {
          if (l.check("tiny").allowed) ++admitted;
        } catch (const Error& e) {
          if (errors++ == 0) ADD_FAILURE() << e.what();
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(admitted.load(), 0);
  std::printf("%s: %d checks on 1/ms, %ld admitted, %ld errors\n", algorithm_name(GetParam()), 4 * per_thread,
              admitted.load(), errors.load());
}

// Over maxmemory with noeviction, every algorithm is refused before it runs
// (the scripts' shebang): a distinct out-of-memory error, nothing consumed,
// and the failure policy does not hide it (the server answered).
TEST(OutOfMemory, RefusedUpFrontNothingConsumed) {
  pltest::RedisServer own;
  own.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  std::string blob(64 * 1024, 'x');
  for (int i = 0; i < 64; ++i) own.command({"SET", "junk:" + std::to_string(i), blob});
  own.command({"CONFIG", "SET", "maxmemory", "1mb"});
  auto client = Client::open(own.url());
  for (Algorithm a : kAll) {
    SCOPED_TRACE(algorithm_name(a));
    LimiterOptions o = options({{a, 5, 60000}, {a, 50, 3600000}});
    o.failure_policy = FailurePolicy::kOpen;
    Limiter l(client, o);
    std::string msg;
    EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kNoMemory);
    EXPECT_NE(msg.find("OOM"), std::string::npos) << msg;
    for (const std::string& k : l.storage_keys("k")) EXPECT_EQ(own.integer({"EXISTS", k}), 0) << k;
  }
  own.command({"CONFIG", "SET", "maxmemory", "0"});
  Limiter l(client, options({{Algorithm::kSlidingLog, 5, 60000}}));
  EXPECT_TRUE(l.check("k").allowed);  // the same client works once memory is back
}

// A memory policy that can evict limiter keys is reported (a stats gauge and
// the Prometheus export), read through CONFIG or, when CONFIG is denied, INFO.
TEST(Eviction, AnEvictingPolicyIsReported) {
  pltest::RedisServer own;
  own.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  own.command({"CONFIG", "SET", "maxmemory", "4mb"});
  std::string blob(64 * 1024, 'x');
  for (int i = 0; i < 200; ++i) own.command({"SET", "junk:" + std::to_string(i), blob});  // evicts as it goes
  ASSERT_EQ(own.command({"ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "+@all", "-config"}), "OK");
  for (const std::string user : {"", "noconfig:pw@"}) {
    SCOPED_TRACE(user.empty() ? "default user" : "CONFIG denied");
    auto client = Client::open("redis://" + user + "127.0.0.1:" + std::to_string(own.port()));
    EXPECT_EQ(client->stats().evicting_nodes, 0u);  // nothing connected yet
    Limiter l(client, options({{Algorithm::kSlidingLog, 5, 60000}}));
    l.check("k");
    EXPECT_EQ(client->stats().evicting_nodes, 1u);
    EXPECT_NE(to_prometheus(client->stats()).find("\npolylimit_evicting_nodes 1\n"), std::string::npos);
  }
  // noeviction (the configuration docs/deployments.md asks for): no warning.
  own.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  auto client = Client::open(own.url());
  Limiter l(client, options({{Algorithm::kGcra, 5, 60000}}));
  l.peek("k");
  EXPECT_EQ(client->stats().evicting_nodes, 0u);
}

// The least-privilege ACL user of docs/deployments.md runs everything; with
// one command revoked, the script's denial comes back as kPermission.
TEST(Acl, LeastPrivilegeUserThenARevokedCommand) {
  pltest::RedisServer own;
  const std::string rules =
      "on >s3cret resetkeys ~pl:* -@all +evalsha +script|load +ping "
      "+time +get +set +del +getrange +setrange +strlen +pexpire +hmget +hset";
  std::vector<std::string> argv = {"ACL", "SETUSER", "limiter"};
  for (size_t p = 0, q; p < rules.size(); p = q + 1) {
    q = rules.find(' ', p);
    if (q == std::string::npos) q = rules.size();
    argv.push_back(rules.substr(p, q - p));
  }
  ASSERT_EQ(own.command(argv), "OK");
  auto client = Client::open("redis://limiter:s3cret@127.0.0.1:" + std::to_string(own.port()));
  for (Algorithm a : kAll) {
    SCOPED_TRACE(algorithm_name(a));
    LimiterOptions o;
    o.limits = {{a, 3, 60000}, {a, 30, 3600000}};
    o.block_ms = 1000;
    Limiter l(client, o);  // the default prefix "pl"
    EXPECT_TRUE(l.check("user").allowed);
    EXPECT_TRUE(l.peek("user").allowed);
    EXPECT_TRUE(l.refund("user", 1).allowed);
    auto many = l.check_many({"a", "b", "c"});
    for (auto& outcome : many) EXPECT_FALSE(outcome.error);
    EXPECT_TRUE(l.check("user", 3).allowed);
    EXPECT_FALSE(l.check("user").allowed);  // denied: starts the block (SET)
    l.reset("user");
    EXPECT_TRUE(l.check("user").allowed);
  }
  own.command({"ACL", "SETUSER", "limiter", "-pexpire", "-set"});
  for (Algorithm a : kAll) {
    Limiter l(client, options({{a, 3, 60000}}));
    std::string msg;
    EXPECT_EQ(code_of([&] { l.check("again"); }, &msg), ErrorCode::kPermission) << algorithm_name(a) << ": " << msg;
  }
}

// A 1 MiB identifier: the Redis key name stays short, the limit is exact, and
// memory:// decides the same; a verbatim key can never name a digest's state.
TEST(Identifiers, LongOnesAreStoredUnderTheirDigest) {
  const std::string huge(1 << 20, 'i');
  // A day's window: the fixed window's boundary (a multiple of the window
  // since the epoch) falls inside the loop below once in ~10^4 runs of a slow
  // sanitizer build, not once in 20 as with a minute.
  constexpr int64_t kDay = 86400000;
  for (Algorithm a : kAll) {
    SCOPED_TRACE(algorithm_name(a));
    Limiter redis(Client::open(server().url()), options({{a, 5, kDay}}));
    Limiter memory(Client::open("memory://"), options({{a, 5, kDay}}));
    const std::string skey = redis.storage_key(huge);
    EXPECT_LT(skey.size(), 128u) << skey;
    EXPECT_NE(skey.find("}#"), std::string::npos);
    int admitted = 0;
    for (int i = 0; i < 10; ++i) {
      Decision r = redis.check(huge), m = memory.check(huge);
      EXPECT_EQ(r.allowed, m.allowed) << i;
      admitted += r.allowed;
    }
    EXPECT_EQ(admitted, 5);
    EXPECT_EQ(server().integer({"EXISTS", skey}), 1);
    // Another long key (one byte differs) is another limit.
    std::string other = huge;
    other.back() = 'j';
    EXPECT_TRUE(redis.check(other).allowed);
    EXPECT_NE(redis.storage_key(other), skey);
  }
  Limiter l(Client::open("memory://"), options({{Algorithm::kGcra, 5, 60000}}));
  std::string at_threshold(kMaxVerbatimKeyLength, 'v');
  EXPECT_NE(l.storage_key(at_threshold).find("}:" + at_threshold), std::string::npos);
  EXPECT_NE(l.storage_key(at_threshold + "v").find("}#"), std::string::npos);
  // Over the absolute maximum: an error, not a silent truncation.
  std::string msg;
  EXPECT_EQ(code_of([&] { l.check(std::string(kMaxKeyLength + 1, 'x')); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("at most"), std::string::npos) << msg;
}

// Caller-supplied time may lag the server's clock: state written at T lives one
// window of real time longer, so "3 per 2 s" at T, T, T, then T + 2 ms after
// 2.1 s of real time is still denied, on Redis and on memory://.
TEST(ExplicitTime, StateOutlivesOneWindowOfRealTime) {
  const int64_t window_ms = 2000;
  const int64_t t0 = (int64_t{1700000000000000} / (window_ms * 1000)) * window_ms * 1000 + 1000;
  std::vector<std::pair<std::string, std::unique_ptr<Limiter>>> limiters;
  for (Algorithm a : kAll)
    for (const char* url : {"redis", "memory"}) {
      auto c = std::string(url) == "redis" ? Client::open(server().url()) : Client::open("memory://");
      limiters.emplace_back(std::string(algorithm_name(a)) + "/" + url,
                            std::make_unique<Limiter>(c, options({{a, 3, window_ms}})));
    }
  for (auto& [name, l] : limiters)
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(l->check_at("k", 1, t0).allowed) << name;
  // Not a wait for a condition: 2.1 s of real time passing (one window and a
  // bit, by the server's clock) is the thing under test.
  std::this_thread::sleep_for(2100ms);
  for (auto& [name, l] : limiters) {
    Decision d = l->check_at("k", 1, t0 + 2000);
    EXPECT_FALSE(d.allowed) << name;
    EXPECT_GT(d.retry_after_ms, 0) << name;
  }
}

// Every number of a script reply is range-checked: a server that answers
// with numbers that cannot be ours gets a protocol error, never a Decision.
TEST(Replies, OutOfRangeNumbersAreProtocolErrors) {
  struct Case {
    const char* reply;
    const char* what;
  };
  const Case cases[] = {
      {"*5\r\n:1\r\n:-9223372036854775808\r\n:0\r\n:0\r\n:0\r\n", "limit = -9223372036854775808"},
      {"*5\r\n:1\r\n:5\r\n:6\r\n:0\r\n:0\r\n", "remaining = 6"},
      {"*5\r\n:2\r\n:5\r\n:1\r\n:0\r\n:0\r\n", "allowed = 2"},
      {"*5\r\n:0\r\n:5\r\n:0\r\n:-1\r\n:0\r\n", "retry_after_ms = -1"},
      {"*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:9223372036854775807\r\n", "reset_after_ms = 9223372036854775807"},
  };
  for (const Case& c : cases) {
    // A fake server: every read gets the canned reply.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::listen(fd, 4);
    std::thread fake([fd, reply = std::string(c.reply)] {
      int conn = ::accept(fd, nullptr, nullptr);
      char buf[4096];
      while (conn >= 0 && ::read(conn, buf, sizeof buf) > 0)
        if (::write(conn, reply.data(), reply.size()) < 0) break;
      if (conn >= 0) ::close(conn);
    });
    {
      auto client = Client::open("redis://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));
      Limiter l(client, options({{Algorithm::kSlidingLog, 5, 60000}}));
      std::string msg;
      EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kServer) << c.what;
      EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
      client->close();
    }
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    fake.join();
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, Each, ::testing::ValuesIn(kAll),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(algorithm_name(info.param));
                         });
