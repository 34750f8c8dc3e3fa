// Every C entry point with bad input: a status code and a message naming the
// argument, never a crash. Plus a round trip through the C ABI.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "redis_server.h"
#include "redlimit.h"

namespace {

rl_limiter_options limiter_opts(int64_t limit, int64_t window_ms) {
  rl_limiter_options o = RL_LIMITER_OPTIONS_INIT;
  o.limit = limit;
  o.window_ms = window_ms;
  return o;
}

#define EXPECT_ERR(call, status, fragment)                                         \
  do {                                                                             \
    rl_error err_;                                                                 \
    std::memset(&err_, 0x7f, sizeof err_);                                         \
    rl_error* err = &err_;                                                         \
    int rc_ = (call);                                                              \
    EXPECT_EQ(rc_, status) << #call << ": " << err_.message;                       \
    EXPECT_EQ(err_.code, rc_);                                                     \
    EXPECT_NE(std::string(err_.message).find(fragment), std::string::npos)         \
        << #call << " -> " << err_.message;                                        \
  } while (0)

struct Handles {
  rl_client* client = nullptr;
  rl_limiter* limiter = nullptr;
  explicit Handles(const std::string& url, int64_t limit = 10, int64_t window = 60000, const char* prefix = nullptr) {
    rl_error err;
    EXPECT_EQ(rl_client_open(url.c_str(), nullptr, &client, &err), RL_OK) << err.message;
    rl_limiter_options o = limiter_opts(limit, window);
    o.prefix = prefix;
    EXPECT_EQ(rl_limiter_new(client, &o, &limiter, &err), RL_OK) << err.message;
  }
  ~Handles() {
    rl_limiter_free(limiter);
    rl_client_close(client);
  }
};

}  // namespace

TEST(CApi, Version) {
  EXPECT_EQ(rl_version_number(), RL_VERSION_NUMBER);
  EXPECT_STREQ(rl_version_string(), RL_VERSION_STRING);
  EXPECT_STREQ(rl_status_name(RL_ETIMEOUT), "RL_ETIMEOUT");
  EXPECT_STREQ(rl_status_name(-999), "RL_UNKNOWN");
}

TEST(CApi, ClientOpenBadInput) {
  rl_client* c = reinterpret_cast<rl_client*>(0x1);
  EXPECT_ERR(rl_client_open(nullptr, nullptr, &c, err), RL_EINVALID, "url is NULL");
  EXPECT_EQ(c, nullptr);  // out is cleared on failure
  EXPECT_ERR(rl_client_open("memory://", nullptr, nullptr, err), RL_EINVALID, "out is NULL");
  EXPECT_ERR(rl_client_open("", nullptr, &c, err), RL_EINVALID, "expected scheme");
  EXPECT_ERR(rl_client_open("redis://h:99999", nullptr, &c, err), RL_EINVALID, "port");
  EXPECT_ERR(rl_client_open("nonsense", nullptr, &c, err), RL_EINVALID, "url");
  rl_client_options o = RL_CLIENT_OPTIONS_INIT;
  o.version = 99;
  EXPECT_ERR(rl_client_open("memory://", &o, &c, err), RL_EINVALID, "options->version");
  o = RL_CLIENT_OPTIONS_INIT;
  o.pool_size = -1;
  EXPECT_ERR(rl_client_open("memory://", &o, &c, err), RL_EINVALID, "pool_size");
  o = RL_CLIENT_OPTIONS_INIT;
  o.command_timeout_ms = -5;
  EXPECT_ERR(rl_client_open("memory://", &o, &c, err), RL_EINVALID, "command_timeout_ms");
  o = RL_CLIENT_OPTIONS_INIT;
  o.pool_size = 1 << 30;
  EXPECT_ERR(rl_client_open("memory://", &o, &c, err), RL_EINVALID, "pool_size");
  o = RL_CLIENT_OPTIONS_INIT;
  o.keepalive_s = -1;
  EXPECT_ERR(rl_client_open("memory://", &o, &c, err), RL_EINVALID, "keepalive_s");
  // NULL err is allowed everywhere.
  EXPECT_EQ(rl_client_open(nullptr, nullptr, &c, nullptr), RL_EINVALID);
}

TEST(CApi, OptionsInit) {
  rl_client_options co;
  EXPECT_EQ(rl_client_options_init(&co, RL_CLIENT_OPTIONS_VERSION), RL_OK);
  EXPECT_EQ(co.version, static_cast<unsigned>(RL_CLIENT_OPTIONS_VERSION));
  EXPECT_EQ(rl_client_options_init(&co, 42), RL_EINVALID);
  EXPECT_EQ(rl_client_options_init(nullptr, RL_CLIENT_OPTIONS_VERSION), RL_EINVALID);
  rl_limiter_options lo;
  EXPECT_EQ(rl_limiter_options_init(&lo, RL_LIMITER_OPTIONS_VERSION), RL_OK);
  EXPECT_EQ(lo.algorithm, RL_ALG_SLIDING_LOG);
  EXPECT_EQ(rl_limiter_options_init(&lo, 0), RL_EINVALID);
}

TEST(CApi, LimiterNewBadInput) {
  rl_client* client = nullptr;
  ASSERT_EQ(rl_client_open("memory://", nullptr, &client, nullptr), RL_OK);
  rl_limiter* l = nullptr;
  rl_limiter_options o = limiter_opts(10, 1000);
  EXPECT_ERR(rl_limiter_new(nullptr, &o, &l, err), RL_EINVALID, "client is NULL");
  EXPECT_ERR(rl_limiter_new(client, nullptr, &l, err), RL_EINVALID, "options is NULL");
  EXPECT_ERR(rl_limiter_new(client, &o, nullptr, err), RL_EINVALID, "out is NULL");
  o = limiter_opts(0, 1000);
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "limit = 0");
  o = limiter_opts(10, 0);
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "window_ms = 0");
  o = limiter_opts(INT64_MAX, 1000);
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "limit");
  o = limiter_opts(10, INT64_MAX);
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "window_ms");
  o = limiter_opts(10, -1);
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "window_ms = -1");
  o = limiter_opts(10, 1000);
  o.algorithm = 77;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "algorithm = 77");
  o = limiter_opts(10, 1000);
  o.clock = 5;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "clock = 5");
  o = limiter_opts(10, 1000);
  o.version = 0;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "options->version");
  o = limiter_opts(10, 1000);
  o.prefix = "";
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "prefix");
  EXPECT_EQ(l, nullptr);
  rl_client_close(client);
}

TEST(CApi, CallsBadInput) {
  Handles h("memory://", 10, 1000);
  rl_decision d;
  EXPECT_ERR(rl_check(nullptr, "k", 1, 1, &d, err), RL_EINVALID, "limiter is NULL");
  EXPECT_ERR(rl_check(h.limiter, nullptr, 1, 1, &d, err), RL_EINVALID, "key is NULL");
  EXPECT_ERR(rl_check(h.limiter, "k", 1, 1, nullptr, err), RL_EINVALID, "out is NULL");
  EXPECT_ERR(rl_check(h.limiter, "", 0, 1, &d, err), RL_EINVALID, "key is empty");
  EXPECT_ERR(rl_check(h.limiter, nullptr, 0, 1, &d, err), RL_EINVALID, "key is empty");
  EXPECT_ERR(rl_check(h.limiter, "k", 1, 0, &d, err), RL_EINVALID, "cost = 0");
  EXPECT_ERR(rl_check(h.limiter, "k", 1, -3, &d, err), RL_EINVALID, "cost = -3");
  EXPECT_ERR(rl_check(h.limiter, "k", 1, 11, &d, err), RL_EINVALID, "exceeds limit = 10");
  EXPECT_ERR(rl_check(h.limiter, "k", 1, INT64_MAX, &d, err), RL_EINVALID, "exceeds limit");
  EXPECT_ERR(rl_check(h.limiter, "k", SIZE_MAX, 1, &d, err), RL_EINVALID, "key is");
  EXPECT_ERR(rl_check_at(h.limiter, "k", 1, 1, -1, &d, err), RL_EINVALID, "now_us = -1");
  EXPECT_ERR(rl_check_at(h.limiter, "k", 1, 1, INT64_MAX, &d, err), RL_EINVALID, "now_us");
  EXPECT_ERR(rl_check_at(nullptr, "k", 1, 1, 1, &d, err), RL_EINVALID, "limiter is NULL");
  EXPECT_ERR(rl_peek(nullptr, "k", 1, &d, err), RL_EINVALID, "limiter is NULL");
  EXPECT_ERR(rl_peek(h.limiter, nullptr, 4, &d, err), RL_EINVALID, "key is NULL");
  EXPECT_ERR(rl_peek(h.limiter, "k", 1, nullptr, err), RL_EINVALID, "out is NULL");
  EXPECT_ERR(rl_reset(nullptr, "k", 1, err), RL_EINVALID, "limiter is NULL");
  EXPECT_ERR(rl_reset(h.limiter, nullptr, 1, err), RL_EINVALID, "key is NULL");
  EXPECT_ERR(rl_reset(h.limiter, "k", 0, err), RL_EINVALID, "key is empty");
  // NULL err, and the free functions with NULL.
  EXPECT_EQ(rl_check(nullptr, "k", 1, 1, &d, nullptr), RL_EINVALID);
  rl_limiter_free(nullptr);
  rl_client_close(nullptr);
  rl_free(nullptr);
  rl_error_clear(nullptr);
}

TEST(CApi, RoundTripOnRedis) {
  rltest::RedisServer server;
  Handles h(server.url(), 2, 60000, "capi");
  std::string key("bin\0key", 7);
  rl_decision d;
  rl_error err;
  ASSERT_EQ(rl_check(h.limiter, key.data(), key.size(), 1, &d, &err), RL_OK) << err.message;
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.remaining, 1);
  ASSERT_EQ(rl_check(h.limiter, key.data(), key.size(), 1, &d, &err), RL_OK);
  ASSERT_EQ(rl_check(h.limiter, key.data(), key.size(), 1, &d, &err), RL_OK);  // denied is not an error
  EXPECT_EQ(d.allowed, 0);
  EXPECT_EQ(err.code, RL_OK);
  EXPECT_GT(d.retry_after_ms, 0);
  ASSERT_EQ(rl_peek(h.limiter, key.data(), key.size(), &d, &err), RL_OK);
  EXPECT_EQ(d.remaining, 0);
  ASSERT_EQ(rl_reset(h.limiter, key.data(), key.size(), &err), RL_OK);
  ASSERT_EQ(rl_check(h.limiter, key.data(), key.size(), 2, &d, &err), RL_OK);
  EXPECT_EQ(d.allowed, 1);
  std::string big(1 << 20, '\0');
  ASSERT_EQ(rl_check(h.limiter, big.data(), big.size(), 1, &d, &err), RL_OK) << err.message;
  EXPECT_EQ(d.allowed, 1);
}

TEST(CApi, LimiterOutlivesClientHandle) {
  rltest::RedisServer server;
  rl_client* client = nullptr;
  ASSERT_EQ(rl_client_open(server.url().c_str(), nullptr, &client, nullptr), RL_OK);
  rl_limiter_options o = limiter_opts(5, 1000);
  rl_limiter* l = nullptr;
  ASSERT_EQ(rl_limiter_new(client, &o, &l, nullptr), RL_OK);
  rl_client_close(client);
  rl_decision d;
  EXPECT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  EXPECT_EQ(d.allowed, 1);
  rl_limiter_free(l);
}

TEST(CApi, ErrorsFromAServerThatIsGone) {
  std::string url = "redis://127.0.0.1:" + std::to_string(rltest::free_port());
  Handles h(url);
  rl_decision d;
  EXPECT_ERR(rl_check(h.limiter, "k", 1, 1, &d, err), RL_EUNAVAILABLE, "refused");
  rl_error e;
  rl_check(h.limiter, "k", 1, 1, &d, &e);
  EXPECT_NE(e.sys_errno, 0);
  EXPECT_ERR(rl_peek(h.limiter, "k", 1, &d, err), RL_EUNAVAILABLE, "connect to 127.0.0.1");
  EXPECT_ERR(rl_reset(h.limiter, "k", 1, err), RL_EUNAVAILABLE, "connect");
}

// The 1.0 layout of rl_limiter_options, as an old caller compiled it.
struct LimiterOptionsV1 {
  unsigned int version;
  int algorithm;
  int64_t limit;
  int64_t window_ms;
  const char* prefix;
  int clock;
};

TEST(CApi, LimiterOptionsVersion1StillAccepted) {
  rl_client* client = nullptr;
  ASSERT_EQ(rl_client_open("memory://", nullptr, &client, nullptr), RL_OK);
  // A version-1 struct followed by bytes the library must neither read nor write.
  struct {
    LimiterOptionsV1 v1;
    unsigned char canary[32];
  } old;
  std::memset(old.canary, 0xAB, sizeof old.canary);
  ASSERT_EQ(rl_limiter_options_init(reinterpret_cast<rl_limiter_options*>(&old.v1), 1), RL_OK);
  for (unsigned char c : old.canary) ASSERT_EQ(c, 0xAB);
  EXPECT_EQ(old.v1.version, 1u);
  old.v1.limit = 2;
  old.v1.window_ms = 1000;
  rl_limiter* l = nullptr;
  rl_error err;
  std::memset(old.canary, 0x7F, sizeof old.canary);  // garbage where `burst` would be: ignored
  ASSERT_EQ(rl_limiter_new(client, reinterpret_cast<rl_limiter_options*>(&old.v1), &l, &err), RL_OK) << err.message;
  rl_decision d;
  EXPECT_EQ(rl_check(l, "k", 1, 2, &d, nullptr), RL_OK);
  EXPECT_EQ(d.allowed, 1);
  rl_limiter_free(l);
  rl_limiter_options o;
  EXPECT_EQ(rl_limiter_options_init(&o, 3), RL_EINVALID);
  o = limiter_opts(1, 1000);
  o.version = 3;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "options->version = 3");
  rl_client_close(client);
}

TEST(CApi, EveryAlgorithmAndBurst) {
  rltest::RedisServer server;
  for (const char* url : {"memory://", "redis"}) {
    std::string u = std::string(url) == "redis" ? server.url() : url;
    rl_client* client = nullptr;
    ASSERT_EQ(rl_client_open(u.c_str(), nullptr, &client, nullptr), RL_OK);
    for (int alg : {RL_ALG_SLIDING_LOG, RL_ALG_SLIDING_COUNTER, RL_ALG_FIXED_WINDOW, RL_ALG_GCRA}) {
      rl_limiter_options o = limiter_opts(3, 60000);
      o.algorithm = alg;
      if (alg == RL_ALG_GCRA) o.burst = 2;
      rl_limiter* l = nullptr;
      rl_error err;
      ASSERT_EQ(rl_limiter_new(client, &o, &l, &err), RL_OK) << err.message;
      int64_t cap = alg == RL_ALG_GCRA ? 2 : 3;
      rl_decision d;
      for (int64_t i = 0; i < cap; ++i) {
        ASSERT_EQ(rl_check(l, "k", 1, 1, &d, &err), RL_OK) << err.message;
        EXPECT_EQ(d.allowed, 1) << alg;
        EXPECT_EQ(d.limit, cap);
      }
      ASSERT_EQ(rl_check(l, "k", 1, 1, &d, &err), RL_OK);
      EXPECT_EQ(d.allowed, 0) << alg;
      EXPECT_GT(d.retry_after_ms, 0);
      EXPECT_ERR(rl_check(l, "k", 1, cap + 1, &d, err), RL_EINVALID, "exceeds");
      rl_limiter_free(l);
    }
    rl_limiter_options o = limiter_opts(3, 60000);
    o.burst = 2;
    rl_limiter* l = nullptr;
    EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "burst = 2 is only for the gcra");
    o.algorithm = RL_ALG_GCRA;
    o.burst = -1;
    EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "burst = -1");
    o.algorithm = 4;
    EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "algorithm = 4");
    rl_client_close(client);
  }
}

TEST(CApi, DenyCacheOption) {
  rltest::RedisServer server;
  rl_client* client = nullptr;
  ASSERT_EQ(rl_client_open(server.url().c_str(), nullptr, &client, nullptr), RL_OK);
  rl_limiter_options o = limiter_opts(1, 60000);
  o.deny_cache_size = 16;
  rl_limiter* l = nullptr;
  ASSERT_EQ(rl_limiter_new(client, &o, &l, nullptr), RL_OK);
  rl_decision d;
  ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  EXPECT_EQ(d.cached, 0);
  ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  EXPECT_EQ(d.allowed, 0);
  EXPECT_EQ(d.cached, 1);
  ASSERT_EQ(rl_reset(l, "k", 1, nullptr), RL_OK);
  ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  EXPECT_EQ(d.allowed, 1);
  rl_limiter_free(l);
  o.deny_cache_size = -1;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "deny_cache_size = -1");
  EXPECT_ERR(rl_limiter_new_spec(client, "1/s", &o, &l, err), RL_EINVALID, "deny_cache_size = -1");
  o.deny_cache_size = 2000000000;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "deny_cache_size");
  rl_client_close(client);
}

TEST(CApi, FailurePolicyOptions) {
  std::string url = "redis://127.0.0.1:" + std::to_string(rltest::free_port());  // nobody listens
  rl_client* client = nullptr;
  ASSERT_EQ(rl_client_open(url.c_str(), nullptr, &client, nullptr), RL_OK);
  rl_limiter_options o = limiter_opts(3, 1000);
  rl_limiter* l = nullptr;
  rl_decision d;
  o.failure_policy = RL_FAIL_OPEN;
  ASSERT_EQ(rl_limiter_new(client, &o, &l, nullptr), RL_OK);
  ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.degraded, 1);
  rl_limiter_free(l);
  o.failure_policy = RL_FAIL_CLOSED;
  o.breaker_failures = 1;
  o.breaker_cooldown_ms = 250;
  ASSERT_EQ(rl_limiter_new(client, &o, &l, nullptr), RL_OK);
  ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  EXPECT_EQ(d.allowed, 0);
  EXPECT_EQ(d.degraded, 1);
  EXPECT_EQ(d.retry_after_ms, 250);
  rl_limiter_free(l);
  o.failure_policy = RL_FAIL_LOCAL;
  ASSERT_EQ(rl_limiter_new_spec(client, "1/minute", &o, &l, nullptr), RL_OK);
  ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.degraded, 1);
  ASSERT_EQ(rl_check(l, "k", 1, 1, &d, nullptr), RL_OK);
  EXPECT_EQ(d.allowed, 0);
  rl_limiter_free(l);
  o.failure_policy = RL_FAIL_ERROR;
  o.breaker_failures = 0;
  ASSERT_EQ(rl_limiter_new(client, &o, &l, nullptr), RL_OK);
  EXPECT_ERR(rl_check(l, "k", 1, 1, &d, err), RL_EUNAVAILABLE, "refused");
  rl_limiter_free(l);
  l = nullptr;
  o.failure_policy = 7;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "failure_policy = 7");
  o.failure_policy = RL_FAIL_OPEN;
  o.breaker_failures = -2;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "breaker_failures = -2");
  o.breaker_failures = 1;
  o.breaker_cooldown_ms = -1;
  EXPECT_ERR(rl_limiter_new(client, &o, &l, err), RL_EINVALID, "breaker_cooldown_ms = -1");
  rl_client_close(client);
}
