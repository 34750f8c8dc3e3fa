// The sliding-window log on a real redis-server: decisions, expiry, recovery
// from NOSCRIPT / CLIENT KILL / restarts, errors, auth, pool limits, fork.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "backend/memory_backend.h"
#include "backend/redis_backend.h"
#include "error_code.h"
#include "net/redis_errors.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_server.h"

using namespace polylimit;
using pltest::code_of;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kT0 = 1700000000000000;

// The transport of a client opened on a standalone URL (its pool's counts).
StandaloneTransport& standalone(Client& client) {
  return dynamic_cast<StandaloneTransport&>(dynamic_cast<RedisBackend&>(client.backend()).transport());
}

pltest::RedisServer& server() {
  static pltest::RedisServer s;  // shared by the tests below; stopped at exit
  return s;
}

// A client of the shared server allowed `connections` per node.
std::shared_ptr<Client> client_with(int connections) {
  PoolOptions pool;
  pool.size = connections;
  return Client::open(server().url(), ClientOptions{pool});
}

// A sliding-log limiter on `client`, its prefix named after the running test.
Limiter make(std::shared_ptr<Client> client, int64_t limit, int64_t window_ms) {
  LimiterOptions lo;
  lo.limit = {Algorithm::kSlidingLog, limit, window_ms};
  lo.prefix = "t" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ":" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return Limiter(std::move(client), lo);
}

Limiter make(const std::string& url, int64_t limit, int64_t window_ms, PoolOptions pool = {}) {
  ClientOptions co;
  co.pool = pool;
  return make(Client::open(url, co), limit, window_ms);
}

}  // namespace

TEST(Redis, AllowThenDenyWithServerClock) {
  Limiter l = make(server().url(), 3, 10000);
  for (int i = 0; i < 3; ++i) {
    Decision d = l.check("user-1");
    ASSERT_TRUE(d.allowed);
    EXPECT_EQ(d.limit, 3);
    EXPECT_EQ(d.remaining, 2 - i);
    EXPECT_EQ(d.retry_after_ms, 0);
    EXPECT_EQ(d.reset_after_ms, 10000);
  }
  Decision d = l.check("user-1");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_GT(d.retry_after_ms, 9000);
  EXPECT_LE(d.retry_after_ms, 10000);
  EXPECT_LE(d.reset_after_ms, 10000);
  EXPECT_GE(d.reset_after_ms, d.retry_after_ms);
  EXPECT_TRUE(l.check("user-2").allowed);  // another key, its own budget
}

// The same client-clock sequence gives the same decisions from Redis and from
// the memory backend, edges included.
TEST(Redis, SameDecisionsAsMemoryBackend) {
  Limiter redis = make(server().url(), 4, 1000);
  Limiter memory = make("memory://", 4, 1000);
  const std::vector<std::pair<int64_t, int64_t>> steps = {
      // (offset us, cost)
      {0, 1},       {0, 2},       {100000, 1},  {200000, 1},  {300000, 2},  {999999, 1},  {1000000, 1},
      {1000000, 2}, {1100000, 3}, {1100001, 1}, {1999999, 1}, {2000000, 4}, {2300000, 1}, {5000000, 4}};
  for (size_t i = 0; i < steps.size(); ++i) {
    auto [offset, cost] = steps[i];
    Decision a = redis.check_at("k", cost, kT0 + offset);
    Decision b = memory.check_at("k", cost, kT0 + offset);
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_EQ(a.allowed, b.allowed);
    EXPECT_EQ(a.remaining, b.remaining);
    EXPECT_EQ(a.retry_after_ms, b.retry_after_ms);
    EXPECT_EQ(a.reset_after_ms, b.reset_after_ms);
  }
}

TEST(Redis, RetryAfterAndResetAfterValues) {
  Limiter l = make(server().url(), 2, 1000);
  ASSERT_TRUE(l.check_at("k", 1, kT0).allowed);
  ASSERT_TRUE(l.check_at("k", 1, kT0 + 600000).allowed);
  Decision d = l.check_at("k", 1, kT0 + 900000);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 100);
  EXPECT_EQ(d.reset_after_ms, 700);
  Decision p = l.peek("k");  // server clock: far later than kT0, all expired
  EXPECT_TRUE(p.allowed);
}

TEST(Redis, SameMicrosecondIsTwoEntries) {
  Limiter l = make(server().url(), 10, 60000);
  ASSERT_TRUE(l.check_at("k", 1, kT0).allowed);
  ASSERT_TRUE(l.check_at("k", 1, kT0).allowed);
  ASSERT_TRUE(l.check_at("k", 5, kT0).allowed);
  EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("k"))), 7);
  Decision d = l.check_at("k", 4, kT0);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 3);
}

TEST(Redis, KeyExpiresAfterWindow) {
  Limiter l = make(server().url(), 5, 300);
  ASSERT_TRUE(l.check("k").allowed);
  long long pttl = server().integer({"PTTL", l.storage_key("k")});
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 300);
  // Redis expires the key in real time: wait for it (PTTL <= 300 ms above).
  EXPECT_TRUE(pltest::wait_until(
      [&] {
        return server().integer({"EXISTS", l.storage_key("k")}) == 0;
      },
      2s))
      << "the key outlived its PTTL";
  EXPECT_EQ(l.peek("k").remaining, 5);
}

TEST(Redis, PeekAndReset) {
  Limiter l = make(server().url(), 2, 60000);
  EXPECT_EQ(l.peek("k").remaining, 2);
  ASSERT_TRUE(l.check("k").allowed);
  ASSERT_TRUE(l.check("k").allowed);
  EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("k"))), 2);
  Decision p = l.peek("k");
  EXPECT_FALSE(p.allowed);
  EXPECT_EQ(p.remaining, 0);
  EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("k"))), 2);  // nothing consumed
  l.reset("k");
  EXPECT_EQ(server().integer({"EXISTS", l.storage_key("k")}), 0);
  EXPECT_TRUE(l.check("k").allowed);
}

TEST(Redis, BinaryAndLargeKeys) {
  Limiter l = make(server().url(), 1, 60000);
  std::string a("\0\xff{}\n", 5), b("\0\xff{}\r", 5);
  EXPECT_TRUE(l.check(a).allowed);
  EXPECT_TRUE(l.check(b).allowed);
  EXPECT_FALSE(l.check(a).allowed);
  std::string big(1 << 20, 'x');
  EXPECT_TRUE(l.check(big).allowed);
  EXPECT_FALSE(l.check(big).allowed);
}

TEST(Redis, RecoversFromScriptFlush) {
  Limiter l = make(server().url(), 100, 60000);
  ASSERT_TRUE(l.check("k").allowed);
  server().command({"SCRIPT", "FLUSH"});
  Decision d = l.check("k");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 98);
}

// A connection the server closed while it was idle is found closed before
// the next call is written to it (a poll() for connections idle longer than
// Mux::kProbeAfter, 100 us): the call goes out on a new connection, outcome
// known, no error. Five times over, on one pooled connection each time.
TEST(Redis, RecoversFromClientKill) {
  Limiter l = make(server().url(), 100, 60000);
  ASSERT_TRUE(l.check("k").allowed);
  for (int round = 1; round <= 5; ++round) {
    server().command({"CLIENT", "KILL", "TYPE", "normal"});
    // Gone on the server's side: only the connection asking is left.
    ASSERT_TRUE(pltest::wait_until([] { return pltest::normal_clients(server()) == 1; }, 2s));
    std::this_thread::sleep_for(1ms);  // idle for longer than kProbeAfter, whatever the waiting took
    Decision d = l.check("k");         // the pooled connection is stale; a new one is made
    EXPECT_TRUE(d.allowed) << "round " << round;
    EXPECT_EQ(d.remaining, 99 - round) << "round " << round;
  }
}

TEST(Redis, ClearErrorWhenServerIsDown) {
  pltest::RedisServer own;
  Limiter l = make(own.url(), 10, 60000);
  ASSERT_TRUE(l.check("k").allowed);
  own.stop();
  std::string msg;
  EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kUnavailable);
  EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(own.port())), std::string::npos) << msg;
  own.start();
  Decision d = l.check("k");
  EXPECT_TRUE(d.allowed);  // a fresh server: state is gone, the client recovers
}

TEST(Redis, TimeoutWhenServerIsStopped) {
  pltest::RedisServer own;
  PoolOptions pool;
  pool.command_timeout_ms = 200;
  pool.connect_timeout_ms = 200;
  Limiter l = make(own.url(), 10, 60000, pool);
  ASSERT_TRUE(l.check("k").allowed);
  own.pause();
  auto start = std::chrono::steady_clock::now();
  std::string msg;
  EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kTimeout) << msg;
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_LT(waited, 2s);
  own.resume();
  EXPECT_TRUE(l.check("k").allowed);
}

TEST(Redis, RefusedConnection) {
  int port = pltest::free_port();
  Limiter l = make("redis://127.0.0.1:" + std::to_string(port), 1, 1000);
  std::string msg;
  EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kUnavailable);
  EXPECT_NE(msg.find("refused"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(nothing listens there: is redis-server running, and are the host and port of the URL right?)"),
            std::string::npos)
      << msg;
}

TEST(Redis, PasswordAndAclUser) {
  pltest::RedisServer own({"--requirepass", "hunter2"});
  std::string base = "127.0.0.1:" + std::to_string(own.port());
  EXPECT_TRUE(make("redis://:hunter2@" + base, 5, 1000).check("k").allowed);
  std::string msg;
  EXPECT_EQ(code_of([&] { make("redis://:wrong@" + base, 5, 1000).check("k"); }, &msg), ErrorCode::kAuth) << msg;
  EXPECT_EQ(code_of([&] { make("redis://" + base, 5, 1000).check("k"); }, &msg), ErrorCode::kAuth) << msg;

  // An ACL user with access to its keys only.
  ASSERT_EQ(
      pltest::raw_command(own.port(), {"ACL", "SETUSER", "app", "on", ">apppw", "~app:*", "+@all"}, 2000, "hunter2")
          ->type,
      polylimit::ReplyType::kStatus);
  ClientOptions co;
  LimiterOptions lo;
  lo.limit = {Algorithm::kSlidingLog, 5, 1000};
  lo.prefix = "app";
  Limiter ok(Client::open("redis://app:apppw@" + base, co), lo);
  EXPECT_TRUE(ok.check("k").allowed);
  lo.prefix = "other";
  Limiter denied(Client::open("redis://app:apppw@" + base, co), lo);
  EXPECT_EQ(code_of([&] { denied.check("k"); }, &msg), ErrorCode::kPermission) << msg;
}

// Authentication failures say what to do, whichever reply the server sent,
// and never repeat the password.
TEST(Redis, AuthenticationMessagesSayWhatToDo) {
  pltest::RedisServer own({"--requirepass", "hunter2"});
  std::string base = "127.0.0.1:" + std::to_string(own.port());
  const std::string needs = "the server requires authentication: give a password (and user) in the URL";
  std::string msg;
  // One limit: the script call has 9 words, and Redis answers NOAUTH.
  EXPECT_EQ(code_of([&] { make("redis://" + base, 5, 1000).check("k"); }, &msg), ErrorCode::kAuth) << msg;
  EXPECT_EQ(msg.rfind("script ", 0), 0u) << msg;
  EXPECT_NE(msg.find(needs), std::string::npos) << msg;
  EXPECT_NE(msg.find("(the server said: NOAUTH"), std::string::npos) << msg;
  // Three limits: more than 10 words, which Redis answers with a protocol
  // error before authentication (the reply this message was first reported
  // with): the same advice.
  LimiterOptions three;
  three.limits = {
      {Algorithm::kSlidingLog, 5, 1000}, {Algorithm::kSlidingLog, 50, 60000}, {Algorithm::kSlidingLog, 500, 3600000}};
  three.prefix = "auth";
  EXPECT_EQ(code_of([&] { Limiter(Client::open("redis://" + base), three).check("k"); }, &msg), ErrorCode::kAuth)
      << msg;
  EXPECT_EQ(msg.rfind("script ", 0), 0u) << msg;
  EXPECT_NE(msg.find(needs), std::string::npos) << msg;
  EXPECT_NE(msg.find("(the server said: ERR Protocol error: unauthenticated"), std::string::npos) << msg;

  // A short command gets NOAUTH: the same message.
  polylimit::ReplyPtr r = pltest::raw_command(own.port(), {"GET", "x"}, 2000);
  ASSERT_EQ(r->type, polylimit::ReplyType::kError);
  const std::string reply(r->text());
  ASSERT_EQ(reply.rfind("NOAUTH", 0), 0u) << reply;
  EXPECT_EQ(code_of([&] { polylimit::throw_reply_error(reply, "GET"); }, &msg), ErrorCode::kAuth);
  EXPECT_EQ(msg, "GET: " + needs + ", redis://[user:]password@host:port (the server said: " + reply + ")");

  EXPECT_EQ(code_of([&] { make("redis://:wrong@" + base, 5, 1000).check("k"); }, &msg), ErrorCode::kAuth) << msg;
  EXPECT_NE(msg.find("the server refused the user or password of the URL: check both"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("wrong"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { make("redis://nobody:hunter2@" + base, 5, 1000).check("k"); }, &msg), ErrorCode::kAuth);
  EXPECT_NE(msg.find("refused the user or password"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;

  // A password for a server that has none.
  EXPECT_EQ(
      code_of([&] { make("redis://:hunter2@127.0.0.1:" + std::to_string(server().port()), 5, 1000).check("k"); }, &msg),
      ErrorCode::kAuth);
  EXPECT_NE(msg.find("the server has no password configured: remove the password from the URL"), std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
}

TEST(Redis, SelectsDatabase) {
  Limiter l = make(server().url() + "/5", 5, 60000);
  ASSERT_TRUE(l.check("k").allowed);
  EXPECT_EQ(server().integer({"EXISTS", l.storage_key("k")}), 0);  // not in db 0
  EXPECT_EQ(server().integer(
                {"EVAL", "redis.call('SELECT', 5) return redis.call('EXISTS', KEYS[1])", "1", l.storage_key("k")}),
            1);
}

TEST(Redis, UnixSocket) {
  char tmpl[] = "/tmp/polylimit-sock-XXXXXX";
  ASSERT_TRUE(::mkdtemp(tmpl));
  std::string sock = std::string(tmpl) + "/redis.sock";
  {
    pltest::RedisServer own({"--unixsocket", sock, "--unixsocketperm", "700"});
    Limiter l = make("unix://" + sock, 2, 60000);
    EXPECT_TRUE(l.check("k").allowed);
    EXPECT_TRUE(l.check("k").allowed);
    EXPECT_FALSE(l.check("k").allowed);
  }
  ::rmdir(tmpl);
}

TEST(Redis, WrongTypeIsAScriptError) {
  Limiter l = make(server().url(), 5, 60000);
  server().command({"SET", l.storage_key("k"), "not a zset"});
  std::string msg;
  EXPECT_EQ(code_of([&] { l.check("k"); }, &msg), ErrorCode::kScript) << msg;
}

// Concurrent callers share the connection (auto-pipelining): with one
// connection allowed, 32 threads are served exactly, through that one.
TEST(Redis, ThreadsShareOneConnection) {
  auto client = client_with(1);
  auto& backend = standalone(*client);
  Limiter l = make(client, 1000, 60000);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 32; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) admitted += l.check("k").allowed ? 1 : 0;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 1000);
  EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("k"))), 1000);
  EXPECT_EQ(backend.pool().connections_made(), 1);
  EXPECT_EQ(backend.pool().open_connections(), 1);
}

// Calls fill the first connection before the next is opened: up to
// ConnectionPool::kFill waiting, so that batches stay large. Fewer callers
// than that never need a second connection (the least busy choice opened
// one as soon as the first had a call in flight).
TEST(Redis, CallsFillTheFirstConnection) {
  auto client = client_with(2);
  auto& backend = standalone(*client);
  Limiter l = make(client, 100000, 60000);
  l.check("warm");  // the first connection is open before the callers race for one
  const int threads_n = 12;
  static_assert(ConnectionPool::kFill > 12, "fewer callers than a connection takes");
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_n; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) admitted += l.check("k" + std::to_string(t)).allowed ? 1 : 0;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), threads_n * 1000);
  EXPECT_EQ(backend.pool().connections_made(), 1);
}

TEST(Redis, PoolIsBoundedUnderLoad) {
  auto client = client_with(3);
  auto& backend = standalone(*client);
  Limiter l = make(client, 100000, 60000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 12; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) l.check("k");
    });
  for (auto& t : threads) t.join();
  EXPECT_LE(backend.pool().connections_made(), 3);
  EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("k"))), 1200);
}

// Writing to a socket the server closed must not raise SIGPIPE in the host.
TEST(Redis, NoSigpipeOnClosedSocket) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);  // what a host that never touched SIGPIPE has
    PoolOptions options;
    Connection conn(parse_url(server().url()), options);
    server().command({"CLIENT", "KILL", "TYPE", "normal"});
    // Closed on the server's side (only the connection asking is left).
    if (!pltest::wait_until([] { return pltest::normal_clients(server()) == 1; }, 2s)) std::_Exit(3);
    std::string payload(8 << 20, 'x');  // larger than any socket buffer
    int code = 1;
    try {
      conn.command({"ECHO", payload});
    } catch (const Error& e) {
      code = e.code() == ErrorCode::kUnavailable ? 0 : 2;
    }
    std::_Exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFSIGNALED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A client made before fork() keeps working in parent and child, and the
// child never touches the parent's sockets.
TEST(Redis, ForkedChildUsesItsOwnConnections) {
  auto client = Client::open(server().url());
  auto& backend = standalone(*client);
  LimiterOptions lo;
  lo.limit = {Algorithm::kSlidingLog, 1000, 60000};
  lo.prefix = "fork";
  Limiter l(client, lo);
  ASSERT_TRUE(l.check("k").allowed);
  ASSERT_EQ(backend.pool().connections_made(), 1);
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 0;
    for (int i = 0; i < 10; ++i)
      if (!l.check("k").allowed) code = 3;
    // The child made its own connection: the made-counter restarted at the
    // inherited value and grew by one.
    if (backend.pool().open_connections() != 1) code = 4;
    if (backend.pool().connections_made() != 2) code = 5;
    std::_Exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's connection survived the child (no QUIT, no shutdown).
  Decision d = l.check("k");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 1000 - 12);
  EXPECT_EQ(backend.pool().connections_made(), 1);
}

TEST(Redis, ExactUnderThreads) {
  Limiter l = make(server().url(), 300, 60000);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 40; ++i)
        if (l.check("hot").allowed) ++admitted;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 300);
  EXPECT_EQ(server().integer(pltest::ring_units(l.storage_key("hot"))), 300);
}
