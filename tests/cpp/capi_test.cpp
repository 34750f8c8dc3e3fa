// Every C entry point with bad input: a status code and a message naming the
// argument, never a crash. Plus a round trip through the C ABI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "polylimit.h"
#include "redis_server.h"

namespace {

polylimit_limiter_options limiter_opts(int64_t limit, int64_t window_ms) {
  polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.limit = limit;
  o.window_ms = window_ms;
  return o;
}

#define EXPECT_ERR(call, status, fragment)                                                                     \
  do {                                                                                                         \
    polylimit_error err_;                                                                                      \
    std::memset(&err_, 0x7f, sizeof err_);                                                                     \
    polylimit_error* err = &err_;                                                                              \
    int rc_ = (call);                                                                                          \
    EXPECT_EQ(rc_, status) << #call << ": " << err_.message;                                                   \
    EXPECT_EQ(err_.code, rc_);                                                                                 \
    EXPECT_NE(std::string(err_.message).find(fragment), std::string::npos) << #call << " -> " << err_.message; \
  } while (0)

struct Handles {
  polylimit_client* client = nullptr;
  polylimit_limiter* limiter = nullptr;
  explicit Handles(const std::string& url, int64_t limit = 10, int64_t window = 60000, const char* prefix = nullptr) {
    polylimit_error err;
    EXPECT_EQ(polylimit_client_open(url.c_str(), nullptr, &client, &err), POLYLIMIT_OK) << err.message;
    polylimit_limiter_options o = limiter_opts(limit, window);
    o.prefix = prefix;
    EXPECT_EQ(polylimit_limiter_new(client, &o, &limiter, &err), POLYLIMIT_OK) << err.message;
  }
  ~Handles() {
    polylimit_limiter_free(limiter);
    polylimit_client_close(client);
  }
};

}  // namespace

TEST(CApi, Version) {
  EXPECT_EQ(polylimit_version_number(), POLYLIMIT_VERSION_NUMBER);
  EXPECT_STREQ(polylimit_version_string(), POLYLIMIT_VERSION_STRING);
  EXPECT_STREQ(polylimit_status_name(POLYLIMIT_ETIMEOUT), "POLYLIMIT_ETIMEOUT");
  EXPECT_STREQ(polylimit_status_name(-999), "POLYLIMIT_UNKNOWN");
}

TEST(CApi, ClientOpenBadInput) {
  polylimit_client* c = reinterpret_cast<polylimit_client*>(0x1);
  ::unsetenv("POLYLIMIT_URL");
  EXPECT_ERR(polylimit_client_open(nullptr, nullptr, &c, err), POLYLIMIT_EINVALID, "POLYLIMIT_URL is not set");
  EXPECT_EQ(c, nullptr);  // out is cleared on failure
  EXPECT_ERR(polylimit_client_open("", nullptr, &c, err), POLYLIMIT_EINVALID, "memory:// for a limiter local");
  EXPECT_ERR(polylimit_client_open("memory://", nullptr, nullptr, err), POLYLIMIT_EINVALID, "out is NULL");
  EXPECT_ERR(polylimit_client_open(" ", nullptr, &c, err), POLYLIMIT_EINVALID, "expected scheme");
  EXPECT_ERR(polylimit_client_open("redis://h:99999", nullptr, &c, err), POLYLIMIT_EINVALID, "port");
  EXPECT_ERR(polylimit_client_open("nonsense", nullptr, &c, err), POLYLIMIT_EINVALID, "url");
  polylimit_client_options o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.version = 99;
  EXPECT_ERR(polylimit_client_open("memory://", &o, &c, err), POLYLIMIT_EINVALID, "options->version");
  o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.pool_size = -1;
  EXPECT_ERR(polylimit_client_open("memory://", &o, &c, err), POLYLIMIT_EINVALID, "pool_size");
  o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.command_timeout_ms = -5;
  EXPECT_ERR(polylimit_client_open("memory://", &o, &c, err), POLYLIMIT_EINVALID, "command_timeout_ms");
  o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.pool_size = 1 << 30;
  EXPECT_ERR(polylimit_client_open("memory://", &o, &c, err), POLYLIMIT_EINVALID, "pool_size");
  o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.keepalive_s = -1;
  EXPECT_ERR(polylimit_client_open("memory://", &o, &c, err), POLYLIMIT_EINVALID, "keepalive_s");
  // NULL err is allowed everywhere.
  EXPECT_EQ(polylimit_client_open(nullptr, nullptr, &c, nullptr), POLYLIMIT_EINVALID);
}

// No silent local default: without a URL the client comes from POLYLIMIT_URL.
TEST(CApi, UrlFromEnvironment) {
  pltest::RedisServer server;
  ASSERT_EQ(::setenv("POLYLIMIT_URL", server.url().c_str(), 1), 0);
  polylimit_client* c = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_client_open(nullptr, nullptr, &c, &err), POLYLIMIT_OK) << err.message;
  polylimit_limiter_options o = limiter_opts(3, 60000);
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new(c, &o, &l, &err), POLYLIMIT_OK) << err.message;
  polylimit_decision d;
  ASSERT_EQ(polylimit_limiter_check(l, "env", 3, 3, &d, &err), POLYLIMIT_OK) << err.message;
  EXPECT_TRUE(d.allowed);
  // It went to that server, not to an in-process store.
  EXPECT_EQ(server.command({"DBSIZE"}), "1");
  polylimit_limiter_free(l);
  polylimit_client_close(c);
  // An explicit URL wins over the environment.
  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &c, &err), POLYLIMIT_OK);
  polylimit_client_close(c);
  ::unsetenv("POLYLIMIT_URL");
}

TEST(CApi, ClientOptionsVersion2) {
  polylimit_client* c = nullptr;
  polylimit_client_options o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  EXPECT_EQ(o.version, 3u);
  o.name = "bad name";
  EXPECT_ERR(polylimit_client_open("memory://", &o, &c, err), POLYLIMIT_EINVALID, "name 'bad name'");
  std::string long_name(129, 'a');
  o.name = long_name.c_str();
  EXPECT_ERR(polylimit_client_open("memory://", &o, &c, err), POLYLIMIT_EINVALID, "name is 129 bytes");
  o.name = "api-1";
  o.tls_ca_file = "/nonexistent/ca.pem";
  EXPECT_ERR(polylimit_client_open("redis://127.0.0.1:1", &o, &c, err), POLYLIMIT_EINVALID, "tls");
  o.tls_ca_file = nullptr;
  o.tls_insecure = 1;
  EXPECT_ERR(polylimit_client_open("memory://", &o, &c, err), POLYLIMIT_EINVALID, "tls");
  // A version-1 struct ends before name: whatever follows it is never read.
  o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.version = 1;
  o.name = reinterpret_cast<const char*>(0x1);
  o.tls_ca_file = reinterpret_cast<const char*>(0x1);
  o.tls_insecure = 7;
  polylimit_error e;
  ASSERT_EQ(polylimit_client_open("memory://", &o, &c, &e), POLYLIMIT_OK) << e.message;
  polylimit_client_close(c);
  polylimit_client_options v1;
  std::memset(&v1, 0x5a, sizeof v1);
  EXPECT_EQ(polylimit_client_options_init(&v1, 1), POLYLIMIT_OK);
  EXPECT_EQ(v1.version, 1u);
  EXPECT_EQ(v1.idle_check_ms, 0);
  unsigned char tail[sizeof v1 - offsetof(polylimit_client_options, name)];
  std::memcpy(tail, reinterpret_cast<const unsigned char*>(&v1) + offsetof(polylimit_client_options, name),
              sizeof tail);
  for (unsigned char b : tail) EXPECT_EQ(b, 0x5a);  // only version 1's fields were written
}

TEST(CApi, OptionsInit) {
  polylimit_client_options co;
  EXPECT_EQ(polylimit_client_options_init(&co, POLYLIMIT_CLIENT_OPTIONS_VERSION), POLYLIMIT_OK);
  EXPECT_EQ(co.version, static_cast<unsigned>(POLYLIMIT_CLIENT_OPTIONS_VERSION));
  EXPECT_EQ(polylimit_client_options_init(&co, 42), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_client_options_init(nullptr, POLYLIMIT_CLIENT_OPTIONS_VERSION), POLYLIMIT_EINVALID);
  polylimit_limiter_options lo;
  EXPECT_EQ(polylimit_limiter_options_init(&lo, POLYLIMIT_LIMITER_OPTIONS_VERSION), POLYLIMIT_OK);
  EXPECT_EQ(lo.algorithm, POLYLIMIT_ALG_SLIDING_LOG);
  EXPECT_EQ(polylimit_limiter_options_init(&lo, 0), POLYLIMIT_EINVALID);
}

TEST(CApi, LimiterNewBadInput) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter* l = nullptr;
  polylimit_limiter_options o = limiter_opts(10, 1000);
  EXPECT_ERR(polylimit_limiter_new(nullptr, &o, &l, err), POLYLIMIT_EINVALID, "client is NULL");
  EXPECT_ERR(polylimit_limiter_new(client, nullptr, &l, err), POLYLIMIT_EINVALID, "options is NULL");
  EXPECT_ERR(polylimit_limiter_new(client, &o, nullptr, err), POLYLIMIT_EINVALID, "out is NULL");
  o = limiter_opts(0, 1000);
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "limit = 0");
  o = limiter_opts(10, 0);
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "window_ms = 0");
  o = limiter_opts(INT64_MAX, 1000);
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "limit");
  o = limiter_opts(10, INT64_MAX);
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "window_ms");
  o = limiter_opts(10, -1);
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "window_ms = -1");
  o = limiter_opts(10, 1000);
  o.algorithm = 77;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "algorithm = 77");
  o = limiter_opts(10, 1000);
  o.clock = 5;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "clock = 5");
  o = limiter_opts(10, 1000);
  o.version = 0;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "options->version");
  o = limiter_opts(10, 1000);
  o.prefix = "";
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "prefix");
  EXPECT_EQ(l, nullptr);
  polylimit_client_close(client);
}

TEST(CApi, CallsBadInput) {
  Handles h("memory://", 10, 1000);
  polylimit_decision d;
  EXPECT_ERR(polylimit_limiter_check(nullptr, "k", 1, 1, &d, err), POLYLIMIT_EINVALID, "limiter is NULL");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, nullptr, 1, 1, &d, err), POLYLIMIT_EINVALID, "key is NULL");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, "k", 1, 1, nullptr, err), POLYLIMIT_EINVALID, "out is NULL");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, "", 0, 1, &d, err), POLYLIMIT_EINVALID, "key is empty");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, nullptr, 0, 1, &d, err), POLYLIMIT_EINVALID, "key is empty");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, "k", 1, 0, &d, err), POLYLIMIT_EINVALID, "cost = 0");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, "k", 1, -3, &d, err), POLYLIMIT_EINVALID, "cost = -3");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, "k", 1, 11, &d, err), POLYLIMIT_EINVALID, "exceeds limit = 10");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, "k", 1, INT64_MAX, &d, err), POLYLIMIT_EINVALID, "exceeds limit");
  EXPECT_ERR(polylimit_limiter_check(h.limiter, "k", SIZE_MAX, 1, &d, err), POLYLIMIT_EINVALID, "key is");
  EXPECT_ERR(polylimit_limiter_check_at(h.limiter, "k", 1, 1, -1, &d, err), POLYLIMIT_EINVALID, "now_us = -1");
  EXPECT_ERR(polylimit_limiter_check_at(h.limiter, "k", 1, 1, INT64_MAX, &d, err), POLYLIMIT_EINVALID, "now_us");
  EXPECT_ERR(polylimit_limiter_check_at(nullptr, "k", 1, 1, 1, &d, err), POLYLIMIT_EINVALID, "limiter is NULL");
  EXPECT_ERR(polylimit_limiter_peek(nullptr, "k", 1, &d, err), POLYLIMIT_EINVALID, "limiter is NULL");
  EXPECT_ERR(polylimit_limiter_peek(h.limiter, nullptr, 4, &d, err), POLYLIMIT_EINVALID, "key is NULL");
  EXPECT_ERR(polylimit_limiter_peek(h.limiter, "k", 1, nullptr, err), POLYLIMIT_EINVALID, "out is NULL");
  EXPECT_ERR(polylimit_limiter_reset(nullptr, "k", 1, err), POLYLIMIT_EINVALID, "limiter is NULL");
  EXPECT_ERR(polylimit_limiter_reset(h.limiter, nullptr, 1, err), POLYLIMIT_EINVALID, "key is NULL");
  EXPECT_ERR(polylimit_limiter_reset(h.limiter, "k", 0, err), POLYLIMIT_EINVALID, "key is empty");
  // NULL err, and the free functions with NULL.
  EXPECT_EQ(polylimit_limiter_check(nullptr, "k", 1, 1, &d, nullptr), POLYLIMIT_EINVALID);
  polylimit_limiter_free(nullptr);
  polylimit_client_close(nullptr);
  polylimit_free(nullptr);
  polylimit_error_clear(nullptr);
}

TEST(CApi, RoundTripOnRedis) {
  pltest::RedisServer server;
  Handles h(server.url(), 2, 60000, "capi");
  std::string key("bin\0key", 7);
  polylimit_decision d;
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_check(h.limiter, key.data(), key.size(), 1, &d, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.remaining, 1);
  ASSERT_EQ(polylimit_limiter_check(h.limiter, key.data(), key.size(), 1, &d, &err), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(h.limiter, key.data(), key.size(), 1, &d, &err),
            POLYLIMIT_OK);  // denied is not an error
  EXPECT_EQ(d.allowed, 0);
  EXPECT_EQ(err.code, POLYLIMIT_OK);
  EXPECT_GT(d.retry_after_ms, 0);
  ASSERT_EQ(polylimit_limiter_peek(h.limiter, key.data(), key.size(), &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.remaining, 0);
  ASSERT_EQ(polylimit_limiter_reset(h.limiter, key.data(), key.size(), &err), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(h.limiter, key.data(), key.size(), 2, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  std::string big(1 << 20, '\0');
  ASSERT_EQ(polylimit_limiter_check(h.limiter, big.data(), big.size(), 1, &d, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(d.allowed, 1);
}

// Closing a client closes its limiters: their calls return POLYLIMIT_ECLOSED
// (and its connections are gone), while the limiter handle stays valid until
// it is freed.
TEST(CApi, ClosingTheClientClosesItsLimiters) {
  pltest::RedisServer server;
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server.url().c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = limiter_opts(5, 1000);
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, nullptr), POLYLIMIT_OK);
  polylimit_decision d;
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  auto clients = [&] {
    std::string list = server.command({"CLIENT", "LIST"});
    return std::count(list.begin(), list.end(), '\n');
  };
  const auto before = clients();
  polylimit_client_close(client);
  EXPECT_EQ(clients(), before - 1);  // our pooled connection was closed
  polylimit_error err;
  EXPECT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, &err), POLYLIMIT_ECLOSED);
  EXPECT_STREQ(err.message, "the client is closed");
  EXPECT_EQ(polylimit_limiter_peek(l, "k", 1, &d, &err), POLYLIMIT_ECLOSED);
  EXPECT_EQ(polylimit_limiter_reset(l, "k", 1, &err), POLYLIMIT_ECLOSED);
  const void* keys[] = {"a", "b"};
  size_t lens[] = {1, 1};
  polylimit_decision out[2];
  int statuses[2];
  EXPECT_EQ(polylimit_limiter_check_many(l, keys, lens, 2, 1, out, statuses, nullptr, &err), POLYLIMIT_ECLOSED);
  EXPECT_EQ(statuses[0], POLYLIMIT_ECLOSED);
  EXPECT_EQ(statuses[1], POLYLIMIT_ECLOSED);
  polylimit_limiter_free(l);  // after the client: still safe
}

TEST(CApi, NoLimiterFromAClosedClient) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = limiter_opts(5, 1000);
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, nullptr), POLYLIMIT_OK);
  polylimit_client_close(client);
  // The limiter keeps the core client alive; a second limiter cannot be made
  // from the closed client's handle (it is gone), so check the core rule
  // through the first limiter instead: memory:// closes too.
  polylimit_decision d;
  polylimit_error err;
  EXPECT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, &err), POLYLIMIT_ECLOSED);
  EXPECT_STREQ(polylimit_status_name(err.code), "POLYLIMIT_ECLOSED");
  polylimit_limiter_free(l);
}

// The other order: the limiter freed first, then the client.
TEST(CApi, FreeingInEitherOrderIsSafe) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = limiter_opts(5, 1000);
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, nullptr), POLYLIMIT_OK);
  polylimit_limiter_free(l);
  polylimit_client_close(client);
  polylimit_client_close(nullptr);
  polylimit_limiter_free(nullptr);
}

TEST(CApi, ErrorsFromAServerThatIsGone) {
  std::string url = "redis://127.0.0.1:" + std::to_string(pltest::free_port());
  Handles h(url);
  polylimit_decision d;
  EXPECT_ERR(polylimit_limiter_check(h.limiter, "k", 1, 1, &d, err), POLYLIMIT_EUNAVAILABLE, "refused");
  polylimit_error e;
  polylimit_limiter_check(h.limiter, "k", 1, 1, &d, &e);
  EXPECT_NE(e.sys_errno, 0);
  EXPECT_ERR(polylimit_limiter_peek(h.limiter, "k", 1, &d, err), POLYLIMIT_EUNAVAILABLE, "connect to 127.0.0.1");
  EXPECT_ERR(polylimit_limiter_reset(h.limiter, "k", 1, err), POLYLIMIT_EUNAVAILABLE, "connect");
}

// The 1.0 layout of polylimit_limiter_options, as an old caller compiled it.
struct LimiterOptionsV1 {
  unsigned int version;
  int algorithm;
  int64_t limit;
  int64_t window_ms;
  const char* prefix;
  int clock;
};

TEST(CApi, LimiterOptionsVersion1StillAccepted) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &client, nullptr), POLYLIMIT_OK);
  // A version-1 struct followed by bytes the library must neither read nor write.
  struct {
    LimiterOptionsV1 v1;
    unsigned char canary[32];
  } old;
  std::memset(old.canary, 0xAB, sizeof old.canary);
  ASSERT_EQ(polylimit_limiter_options_init(reinterpret_cast<polylimit_limiter_options*>(&old.v1), 1), POLYLIMIT_OK);
  for (unsigned char c : old.canary) ASSERT_EQ(c, 0xAB);
  EXPECT_EQ(old.v1.version, 1u);
  old.v1.limit = 2;
  old.v1.window_ms = 1000;
  polylimit_limiter* l = nullptr;
  polylimit_error err;
  std::memset(old.canary, 0x7F, sizeof old.canary);  // garbage where `burst` would be: ignored
  ASSERT_EQ(polylimit_limiter_new(client, reinterpret_cast<polylimit_limiter_options*>(&old.v1), &l, &err),
            POLYLIMIT_OK)
      << err.message;
  polylimit_decision d;
  EXPECT_EQ(polylimit_limiter_check(l, "k", 1, 2, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  polylimit_limiter_free(l);
  polylimit_limiter_options o;
  EXPECT_EQ(polylimit_limiter_options_init(&o, 5), POLYLIMIT_EINVALID);
  o = limiter_opts(1, 1000);
  o.version = 5;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "options->version = 5");
  polylimit_client_close(client);
}

TEST(CApi, EveryAlgorithmAndBurst) {
  pltest::RedisServer server;
  for (const char* url : {"memory://", "redis"}) {
    std::string u = std::string(url) == "redis" ? server.url() : url;
    polylimit_client* client = nullptr;
    ASSERT_EQ(polylimit_client_open(u.c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
    for (int alg :
         {POLYLIMIT_ALG_SLIDING_LOG, POLYLIMIT_ALG_SLIDING_COUNTER, POLYLIMIT_ALG_FIXED_WINDOW, POLYLIMIT_ALG_GCRA}) {
      polylimit_limiter_options o = limiter_opts(3, 60000);
      o.algorithm = alg;
      if (alg == POLYLIMIT_ALG_GCRA) o.burst = 2;
      polylimit_limiter* l = nullptr;
      polylimit_error err;
      ASSERT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_OK) << err.message;
      int64_t cap = alg == POLYLIMIT_ALG_GCRA ? 2 : 3;
      polylimit_decision d;
      for (int64_t i = 0; i < cap; ++i) {
        ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, &err), POLYLIMIT_OK) << err.message;
        EXPECT_EQ(d.allowed, 1) << alg;
        EXPECT_EQ(d.limit, cap);
      }
      ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, &err), POLYLIMIT_OK);
      EXPECT_EQ(d.allowed, 0) << alg;
      EXPECT_GT(d.retry_after_ms, 0);
      EXPECT_ERR(polylimit_limiter_check(l, "k", 1, cap + 1, &d, err), POLYLIMIT_EINVALID, "exceeds");
      polylimit_limiter_free(l);
    }
    polylimit_limiter_options o = limiter_opts(3, 60000);
    o.burst = 2;
    polylimit_limiter* l = nullptr;
    EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "burst = 2 is only for the gcra");
    o.algorithm = POLYLIMIT_ALG_GCRA;
    o.burst = -1;
    EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "burst = -1");
    o.algorithm = 4;
    EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "algorithm = 4");
    polylimit_client_close(client);
  }
}

TEST(CApi, DenyCacheOption) {
  pltest::RedisServer server;
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server.url().c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = limiter_opts(1, 60000);
  o.deny_cache_size = 16;
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, nullptr), POLYLIMIT_OK);
  polylimit_decision d;
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.cached, 0);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 0);
  EXPECT_EQ(d.cached, 1);
  ASSERT_EQ(polylimit_limiter_reset(l, "k", 1, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  polylimit_limiter_free(l);
  o.deny_cache_size = -1;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "deny_cache_size = -1");
  EXPECT_ERR(polylimit_limiter_new_spec(client, "1/s", &o, &l, err), POLYLIMIT_EINVALID, "deny_cache_size = -1");
  o.deny_cache_size = 2000000000;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "deny_cache_size");
  polylimit_client_close(client);
}

TEST(CApi, FailurePolicyOptions) {
  std::string url = "redis://127.0.0.1:" + std::to_string(pltest::free_port());  // nobody listens
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(url.c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = limiter_opts(3, 1000);
  polylimit_limiter* l = nullptr;
  polylimit_decision d;
  o.failure_policy = POLYLIMIT_FAIL_OPEN;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.degraded, 1);
  polylimit_limiter_free(l);
  o.failure_policy = POLYLIMIT_FAIL_CLOSED;
  o.breaker_failures = 1;
  o.breaker_cooldown_ms = 250;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 0);
  EXPECT_EQ(d.degraded, 1);
  EXPECT_EQ(d.retry_after_ms, 250);
  polylimit_limiter_free(l);
  o.failure_policy = POLYLIMIT_FAIL_LOCAL;
  ASSERT_EQ(polylimit_limiter_new_spec(client, "1/minute", &o, &l, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.degraded, 1);
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 0);
  polylimit_limiter_free(l);
  o.failure_policy = POLYLIMIT_FAIL_ERROR;
  o.breaker_failures = 0;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, nullptr), POLYLIMIT_OK);
  EXPECT_ERR(polylimit_limiter_check(l, "k", 1, 1, &d, err), POLYLIMIT_EUNAVAILABLE, "refused");
  polylimit_limiter_free(l);
  l = nullptr;
  o.failure_policy = 7;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "failure_policy = 7");
  o.failure_policy = POLYLIMIT_FAIL_OPEN;
  o.breaker_failures = -2;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "breaker_failures = -2");
  o.breaker_failures = 1;
  o.breaker_cooldown_ms = -1;
  EXPECT_ERR(polylimit_limiter_new(client, &o, &l, err), POLYLIMIT_EINVALID, "breaker_cooldown_ms = -1");
  polylimit_client_close(client);
}

// Bounds are checked once, in the core, with one message: the Python, Go and
// Java suites assert these same strings.
TEST(CApi, BoundsHaveOneMessage) {
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  co.pool_size = 5000;
  polylimit_client* client = nullptr;
  polylimit_error err;
  EXPECT_EQ(polylimit_client_open("memory://", &co, &client, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "pool_size = 5000 is out of range 1..4096");
  EXPECT_EQ(client, nullptr);
  co.pool_size = 0;  // 0: the default
  co.keepalive_s = -1;
  EXPECT_EQ(polylimit_client_open("memory://", &co, &client, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "keepalive_s = -1 is out of range 0..86400");

  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &client, &err), POLYLIMIT_OK);
  polylimit_limiter_options o = limiter_opts(5, 1000);
  o.deny_cache_size = 20000000;
  polylimit_limiter* l = nullptr;
  EXPECT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "deny_cache_size = 20000000 is out of range 0..10000000");
  o = limiter_opts(POLYLIMIT_MAX_LIMIT + 1, 1000);
  EXPECT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "limit = 1000001 is out of range 1..1000000");
  o = limiter_opts(5, 1000);
  o.algorithm = 7;
  EXPECT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "algorithm = 7 is unknown (0..3)");
  o = limiter_opts(5, 1000);
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_OK);
  polylimit_decision d;
  EXPECT_EQ(polylimit_limiter_acquire(l, "k", 1, 1, -1, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "timeout_ms = -1 is out of range 0..31622400000");
  EXPECT_EQ(polylimit_limiter_refund(l, "k", 1, 0, &d, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "units = 0 is out of range 1..1000000");
  polylimit_limiter_free(l);
  polylimit_client_close(client);
}

// Every status of the header has a name, and the names come from the table.
TEST(CApi, StatusNames) {
  EXPECT_STREQ(polylimit_status_name(POLYLIMIT_OK), "POLYLIMIT_OK");
  EXPECT_STREQ(polylimit_status_name(POLYLIMIT_ETIMEOUT), "POLYLIMIT_ETIMEOUT");
  EXPECT_STREQ(polylimit_status_name(POLYLIMIT_ECLOSED), "POLYLIMIT_ECLOSED");
  EXPECT_STREQ(polylimit_status_name(-1000), "POLYLIMIT_UNKNOWN");
  for (int code = POLYLIMIT_OK; code >= POLYLIMIT_ECLOSED; --code)
    EXPECT_STRNE(polylimit_status_name(code), "POLYLIMIT_UNKNOWN") << code;
}
