// The headline guarantee: 16 threads in each of 4 processes hammer one key
// with limit 500, and exactly 500 are admitted, with the server's clock and
// with every request carrying the same client timestamp.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "polylimit.h"
#include "redis_server.h"

namespace {

constexpr int kProcesses = 4;
constexpr int kThreads = 16;
constexpr int kAttemptsPerThread = 20;  // 1280 attempts in all, for 500 slots
constexpr int64_t kLimit = 500;
constexpr int64_t kFixedNowUs = 1700000000123456;

enum class Mode { kServerClock, kSameClientTimestamp };

// Runs the threads of one process; returns how many were admitted.
int hammer(polylimit_limiter* limiter, Mode mode) {
  std::atomic<int> admitted{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kAttemptsPerThread; ++i) {
        polylimit_decision d;
        polylimit_error err;
        int rc = mode == Mode::kServerClock ? polylimit_limiter_check(limiter, "hot", 3, 1, &d, &err)
                                            : polylimit_limiter_check_at(limiter, "hot", 3, 1, kFixedNowUs, &d, &err);
        if (rc != POLYLIMIT_OK) {
          std::fprintf(stderr, "check failed: %s\n", err.message);
          ++errors;
        } else if (d.allowed) {
          ++admitted;
        }
      }
    });
  for (auto& t : threads) t.join();
  return errors ? -1 : admitted.load();
}

polylimit_limiter* open_limiter(const std::string& url, const char* prefix, polylimit_client** client) {
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  co.pool_size = kThreads;
  if (polylimit_client_open(url.c_str(), &co, client, nullptr) != POLYLIMIT_OK) return nullptr;
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.limit = kLimit;
  lo.window_ms = 3600 * 1000;
  lo.prefix = prefix;
  polylimit_limiter* l = nullptr;
  if (polylimit_limiter_new(*client, &lo, &l, nullptr) != POLYLIMIT_OK) return nullptr;
  return l;
}

// Forks kProcesses children; each reports its admitted count through a pipe.
// With `shared`, the children inherit one limiter made before the fork.
int run(const std::string& url, const char* prefix, Mode mode, polylimit_limiter* shared) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      polylimit_client* client = nullptr;
      polylimit_limiter* l = shared ? shared : open_limiter(url, prefix, &client);
      int n = l ? hammer(l, mode) : -1;
      if (::write(fds[1], &n, sizeof n) != sizeof n) std::_Exit(2);
      std::_Exit(0);
    }
    pids.push_back(pid);
  }
  ::close(fds[1]);
  int total = 0;
  for (int p = 0; p < kProcesses; ++p) {
    int n = -1;
    if (::read(fds[0], &n, sizeof n) != sizeof n || n < 0) total = -1000000;
    std::printf("  process %d admitted %d\n", p, n);
    total += n;
  }
  ::close(fds[0]);
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return total;
}

}  // namespace

TEST(Exactness, ServerClockFourProcesses) {
  pltest::RedisServer server;
  int total = run(server.url(), "exact-server", Mode::kServerClock, nullptr);
  std::printf("  total admitted %d of %d attempts (limit %lld)\n", total, kProcesses * kThreads * kAttemptsPerThread,
              static_cast<long long>(kLimit));
  EXPECT_EQ(total, kLimit);
  EXPECT_EQ(server.integer(pltest::ring_units(server.command({"KEYS", "exact-server:*"}))), kLimit);
}

TEST(Exactness, SameClientTimestampFourProcesses) {
  pltest::RedisServer server;
  int total = run(server.url(), "exact-client", Mode::kSameClientTimestamp, nullptr);
  std::printf("  total admitted %d (every request at t=%lld us)\n", total, static_cast<long long>(kFixedNowUs));
  EXPECT_EQ(total, kLimit);
  EXPECT_EQ(server.integer(pltest::ring_units(server.command({"KEYS", "exact-client:*"}))), kLimit);
}

TEST(Exactness, ClientMadeBeforeFork) {
  pltest::RedisServer server;
  polylimit_client* client = nullptr;
  polylimit_limiter* l = open_limiter(server.url(), "exact-fork", &client);
  ASSERT_NE(l, nullptr);
  polylimit_decision d;
  ASSERT_EQ(polylimit_limiter_check(l, "warm", 4, 1, &d, nullptr), POLYLIMIT_OK);  // the parent holds a live connection
  int total = run(server.url(), nullptr, Mode::kSameClientTimestamp, l);
  EXPECT_EQ(total, kLimit);
  ASSERT_EQ(polylimit_limiter_check(l, "warm", 4, 1, &d, nullptr), POLYLIMIT_OK);  // still usable in the parent
  EXPECT_EQ(d.remaining, kLimit - 2);
  polylimit_limiter_free(l);
  polylimit_client_close(client);
}
