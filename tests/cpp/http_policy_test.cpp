// The HTTP request policy's pieces, white-box: addresses and networks, the
// JSON reader, the blocking decide/settle path on a real limiter, per-rule
// metrics, secrets, and one policy shared by many threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "http/client_ip.h"
#include "polylimit.h"
#include "polylimit/errors.h"
#include "util/json.h"

namespace {

using polylimit::http::format_address;
using polylimit::http::parse_address;

std::string canon(const char* text) {
  auto a = parse_address(text);
  return a ? format_address(*a) : std::string("none");
}

TEST(ClientIp, ParsesWhatPeersAndHopsWrite) {
  EXPECT_EQ(canon("1.2.3.4"), "1.2.3.4");
  EXPECT_EQ(canon(" 1.2.3.4:8080 "), "1.2.3.4");
  EXPECT_EQ(canon("[::1]:80"), "::1");
  EXPECT_EQ(canon("[::1]"), "::1");
  EXPECT_EQ(canon("fe80::1%eth0"), "fe80::1");
  EXPECT_EQ(canon("::ffff:10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(canon("[::ffff:10.0.0.1]:9"), "10.0.0.1");
  for (const char* bad : {"", "unknown", "1.2.3", "01.2.3.4", "1.2.3.4:", "1.2.3.4:x", "[1.2.3.4]", "[::1]x", "[::1",
                          "host:80", "_hidden", "fe80::1%", "256.1.1.1", "1.2.3.4.5"})
    EXPECT_EQ(canon(bad), "none") << bad;
}

TEST(ClientIp, FormatsIpv6AsRfc5952) {
  EXPECT_EQ(canon("2001:0DB8:0000:0000:0000:0000:0000:0001"), "2001:db8::1");
  EXPECT_EQ(canon("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1");  // one zero group is not compressed
  EXPECT_EQ(canon("2001:0:0:1:0:0:0:1"), "2001:0:0:1::1");           // the longest run
  EXPECT_EQ(canon("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");     // the first of equal runs
  EXPECT_EQ(canon("::"), "::");
  EXPECT_EQ(canon("::1.2.3.4"), "::102:304");  // no embedded IPv4 form
  EXPECT_EQ(canon("1::"), "1::");
}

TEST(ClientIp, Networks) {
  auto n = polylimit::http::parse_network("10.1.2.3/8", "x");
  EXPECT_EQ(format_address(n.base), "10.0.0.0");
  EXPECT_TRUE(n.contains(*parse_address("10.255.0.1")));
  EXPECT_FALSE(n.contains(*parse_address("11.0.0.1")));
  EXPECT_FALSE(n.contains(*parse_address("::ffff:b00:1")));
  EXPECT_TRUE(n.contains(*parse_address("::ffff:10.9.9.9")));  // mapped: IPv4
  auto m = polylimit::http::parse_network("::ffff:192.168.0.0/112", "x");
  EXPECT_FALSE(m.base.v6);
  EXPECT_EQ(m.prefix, 16);
  auto v6 = polylimit::http::parse_network("2001:db8::/32", "x");
  EXPECT_TRUE(v6.contains(*parse_address("2001:db8:ffff::1")));
  EXPECT_FALSE(v6.contains(*parse_address("2001:db9::1")));
  auto zero = polylimit::http::parse_network("0.0.0.0/0", "x");
  EXPECT_TRUE(zero.contains(*parse_address("8.8.8.8")));
  for (const char* bad : {"10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "[::1]", "fe80::1%eth0", "host",
                          "10.0.0.0/99999999999999999999"})
    EXPECT_THROW(polylimit::http::parse_network(bad, "trusted_proxies"), polylimit::Error) << bad;
}

TEST(Json, StrictAndLineNumbered) {
  auto v = polylimit::json::parse("{\"a\": [1, -2, \"x\\u00e9\\ud83d\\ude00\", true, null], \"b\": {}}");
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.find("a")->array()[1].integer(), -2);
  EXPECT_EQ(v.find("a")->array()[2].string(), "x\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_FALSE(polylimit::json::parse("1.5").is_integer());
  struct Bad {
    const char* text;
    const char* message;
  } bad[] = {
      {"{\"a\": 1,}", "line 1: a trailing comma"},
      {"{\n\"a\": 1,\n\"a\": 2}", "line 3: \"a\" given twice"},
      {"[01]", "leading zero"},
      {"{'a': 1}", "expected a member name"},
      {"[1] x", "unexpected text after the document"},
      {"\"\\ud800\"", "lone surrogate"},
      {"[99999999999999999999]", "out of range"},
      {"\"a\nb\"", "control character"},
      {"// no\n{}", "unexpected character"},
  };
  for (const auto& b : bad) {
    try {
      polylimit::json::parse(b.text);
      ADD_FAILURE() << "accepted: " << b.text;
    } catch (const polylimit::Error& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
  std::string deep(100, '[');
  EXPECT_THROW(polylimit::json::parse(deep), polylimit::Error);
}

// A memory:// client, a 3/minute limiter and a policy over it.
struct Fixture {
  polylimit_client* client = nullptr;
  polylimit_limiter* limiter = nullptr;
  polylimit_http_policy* policy = nullptr;
  explicit Fixture(const std::string& doc) {
    polylimit_error err;
    EXPECT_EQ(polylimit_client_open("memory://", nullptr, &client, &err), POLYLIMIT_OK);
    EXPECT_EQ(polylimit_limiter_new_spec(client, "3/minute", nullptr, &limiter, &err), POLYLIMIT_OK);
    EXPECT_EQ(polylimit_http_policy_new(doc.data(), doc.size(), &limiter, 1, &policy, &err), POLYLIMIT_OK)
        << err.message;
    polylimit_limiter_free(limiter);  // the policy keeps it
  }
  ~Fixture() {
    polylimit_http_policy_free(policy);
    polylimit_client_close(client);
  }
  std::string metrics() {
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    EXPECT_EQ(polylimit_http_policy_metrics_prometheus(policy, &text, &len, &err), POLYLIMIT_OK);
    std::string out(text, len);
    polylimit_free(text);
    return out;
  }
};

polylimit_http_request request(const char* path, const char* peer, const polylimit_str* headers = nullptr,
                               size_t n = 0) {
  polylimit_http_request r{};
  r.version = POLYLIMIT_HTTP_REQUEST_VERSION;
  r.method = {"POST", 4};
  r.path = {path, std::strlen(path)};
  r.peer = {peer, std::strlen(peer)};
  r.headers = headers;
  r.header_count = n;
  return r;
}

TEST(HttpPolicy, DecideChecksAndSettleRefunds) {
  Fixture f(R"({"rules": [{"name": "login", "paths": ["/login"], "limiter": 0, "count_when": "failures"}]})");
  polylimit_http_request r = request("/login", "192.0.2.1:1");
  polylimit_http_step step;
  polylimit_decision d;
  polylimit_http_response resp;
  polylimit_error err;
  // Successful logins are refunded: they never use the budget up.
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(polylimit_http_decide(f.policy, &r, &step, &d, &resp, &err), POLYLIMIT_OK) << err.message;
    ASSERT_EQ(resp.status, 0) << i;
    int refunded = 0;
    ASSERT_EQ(polylimit_http_settle(f.policy, &step, &d, 200, &refunded, &err), POLYLIMIT_OK);
    EXPECT_EQ(refunded, 1);
  }
  // Failures count: three, then 429.
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(polylimit_http_decide(f.policy, &r, &step, &d, &resp, &err), POLYLIMIT_OK);
    EXPECT_EQ(resp.status, 0);
    int refunded = 1;
    ASSERT_EQ(polylimit_http_settle(f.policy, &step, &d, 401, &refunded, &err), POLYLIMIT_OK);
    EXPECT_EQ(refunded, 0);
  }
  ASSERT_EQ(polylimit_http_decide(f.policy, &r, &step, &d, &resp, &err), POLYLIMIT_OK);
  EXPECT_EQ(resp.status, 429);
  EXPECT_STREQ(resp.body, POLYLIMIT_HTTP_BODY_TOO_MANY_REQUESTS);
  EXPECT_NE(std::string(resp.headers).find("RateLimit: \"login\";r=0;"), std::string::npos) << resp.headers;
  EXPECT_EQ(d.allowed, 0);
  // Another client has its own budget; a path no rule matches is not checked.
  polylimit_http_request other = request("/login", "192.0.2.2");
  ASSERT_EQ(polylimit_http_decide(f.policy, &other, &step, &d, &resp, &err), POLYLIMIT_OK);
  EXPECT_EQ(resp.status, 0);
  polylimit_http_request free_path = request("/", "192.0.2.1");
  ASSERT_EQ(polylimit_http_decide(f.policy, &free_path, &step, &d, &resp, &err), POLYLIMIT_OK);
  EXPECT_EQ(step.action, POLYLIMIT_HTTP_PROCEED);
  EXPECT_EQ(resp.headers_len, 0u);
  std::string m = f.metrics();
  EXPECT_NE(m.find("polylimit_http_requests_total{rule=\"login\",outcome=\"allowed\"} 14\n"), std::string::npos) << m;
  EXPECT_NE(m.find("polylimit_http_requests_total{rule=\"login\",outcome=\"denied\"} 1\n"), std::string::npos) << m;
}

TEST(HttpPolicy, NoSecretInKeysMessagesOrMetrics) {
  const std::string secret = "sk_live_0123456789";
  Fixture f(R"({"deny": {"api_keys": ["revoked-key"]}, "rules": [{"name": "api", "limiter": 0, "key": "api_key"}]})");
  polylimit_str h[1] = {{secret.c_str(), secret.size()}};
  ASSERT_EQ(polylimit_http_policy_header_count(f.policy), 1u);
  EXPECT_STREQ(polylimit_http_policy_header_name(f.policy, 0), "x-api-key");
  polylimit_http_request r = request("/x", "192.0.2.1", h, 1);
  polylimit_http_step step;
  polylimit_decision d;
  polylimit_http_response resp;
  polylimit_error err;
  for (int i = 0; i < 5; ++i) ASSERT_EQ(polylimit_http_decide(f.policy, &r, &step, &d, &resp, &err), POLYLIMIT_OK);
  std::string everything = std::string(step.key, step.key_len) + resp.headers + resp.body + f.metrics();
  EXPECT_EQ(everything.find(secret), std::string::npos);
  EXPECT_EQ(everything.find("revoked-key"), std::string::npos);
  // A document's error never quotes a listed key either.
  polylimit_http_policy* p = nullptr;
  std::string bad = R"({"deny": {"api_keys": ["sk_live_0123456789", 7]}, "rules": []})";
  polylimit_limiter* none = nullptr;
  EXPECT_EQ(polylimit_http_policy_new(bad.data(), bad.size(), &none, 0, &p, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(std::string(err.message).find(secret), std::string::npos) << err.message;
}

TEST(HttpPolicy, BadRequestsAreErrorsNotCrashes) {
  Fixture f(R"({"rules": [{"name": "app", "limiter": 0, "key": "app"}]})");
  polylimit_http_step step;
  polylimit_error err;
  polylimit_http_request r = request("/", "192.0.2.1");
  r.version = 99;
  EXPECT_EQ(polylimit_http_prepare(f.policy, &r, &step, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("request.version"), std::string::npos);
  r.version = POLYLIMIT_HTTP_REQUEST_VERSION;
  r.header_count = 2;
  EXPECT_EQ(polylimit_http_prepare(f.policy, &r, &step, &err), POLYLIMIT_EINVALID);
  r.header_count = 0;
  std::string huge(POLYLIMIT_HTTP_KEY_MAX + 1, 'k');
  r.app_key = {huge.data(), huge.size()};
  EXPECT_EQ(polylimit_http_prepare(f.policy, &r, &step, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("request.app_key"), std::string::npos);
  EXPECT_EQ(polylimit_http_prepare(nullptr, &r, &step, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_http_prepare(f.policy, nullptr, &step, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_http_prepare(f.policy, &r, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_http_refund_due(nullptr, &step, nullptr, 200), 0);
  polylimit_http_policy_free(nullptr);
}

// One policy, many threads: every check counted once (run under TSan too).
TEST(HttpPolicy, SharedByThreads) {
  Fixture f(R"({"rules": [{"name": "all", "limiter": 0}]})");
  std::vector<std::thread> threads;
  std::atomic<int> admitted{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        polylimit_http_request r = request("/", "203.0.113.1");
        polylimit_http_step step;
        polylimit_decision d;
        polylimit_http_response resp;
        polylimit_error err;
        if (polylimit_http_decide(f.policy, &r, &step, &d, &resp, &err) == POLYLIMIT_OK && resp.status == 0) ++admitted;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 3);
  std::string m = f.metrics();
  EXPECT_NE(m.find("{rule=\"all\",outcome=\"denied\"} 397\n"), std::string::npos) << m;
}

}  // namespace

namespace {

// Redis down: decide answers 503 (the call succeeds) and says why in err.
TEST(HttpPolicy, AFailedCheckIsAnAnswerWithItsDetail) {
  polylimit_client_options o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.connect_timeout_ms = 200;
  o.command_timeout_ms = 200;
  polylimit_client* client = nullptr;
  polylimit_limiter* limiter = nullptr;
  polylimit_http_policy* policy = nullptr;
  polylimit_error err;
  // Port 1 on loopback: nothing listens, connections are refused.
  ASSERT_EQ(polylimit_client_open("redis://127.0.0.1:1", &o, &client, &err), POLYLIMIT_OK) << err.message;
  ASSERT_EQ(polylimit_limiter_new_spec(client, "3/minute", nullptr, &limiter, &err), POLYLIMIT_OK);
  const std::string doc = R"({"rules": [{"name": "all", "limiter": 0, "count_when": "failures"}]})";
  ASSERT_EQ(polylimit_http_policy_new(doc.data(), doc.size(), &limiter, 1, &policy, &err), POLYLIMIT_OK);
  EXPECT_EQ(polylimit_http_policy_rule_counts_all(policy, 0), 0);
  polylimit_http_request r = request("/", "192.0.2.1");
  polylimit_http_step step;
  polylimit_decision d;
  polylimit_http_response resp;
  ASSERT_EQ(polylimit_http_decide(policy, &r, &step, &d, &resp, &err), POLYLIMIT_OK);
  EXPECT_EQ(resp.status, 503);
  EXPECT_STREQ(resp.body, POLYLIMIT_HTTP_BODY_UNAVAILABLE);
  EXPECT_EQ(err.code, POLYLIMIT_EUNAVAILABLE) << err.message;
  EXPECT_NE(err.message[0], '\0');
  // A successful call leaves err clear.
  polylimit_http_request exempt = request("/", "not-an-address");
  ASSERT_EQ(polylimit_http_decide(policy, &exempt, &step, &d, &resp, &err), POLYLIMIT_OK);
  EXPECT_EQ(resp.status, 400);
  EXPECT_EQ(err.code, POLYLIMIT_OK);
  polylimit_http_policy_free(policy);
  polylimit_limiter_free(limiter);
  polylimit_client_close(client);
  Fixture all(R"({"rules": [{"name": "all", "limiter": 0}]})");
  EXPECT_EQ(polylimit_http_policy_rule_counts_all(all.policy, 0), 1);
  EXPECT_EQ(polylimit_http_policy_rule_counts_all(all.policy, 7), 0);
}

}  // namespace
