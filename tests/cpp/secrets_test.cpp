// secrets_test.cpp - no password reaches a message, through the C ABI.
//
// A unique marker password is fed through every error path a C caller can
// reach: URLs that do not parse (each kind, each part wrong, malformed forms
// where a password may still be present), TLS option errors, a wrong
// password and a wrong ACL user password against a real redis-server, a
// server that echoes AUTH's arguments, refused ports and an unresolvable
// host, Cluster seeds refused, a wrong sentinel_password and a wrong data
// password against real sentinels. The marker must never appear in an error
// message, a per-key batch error, the Prometheus text or
// polylimit_redact_url's output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "polylimit.h"
#include "redis_cluster.h"
#include "redis_server.h"

namespace {

std::string make_marker() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(gen()));
  return std::string("s3cr3t-MARKER-") + buf;
}

const std::string& marker() {
  static const std::string m = make_marker();
  return m;
}

// Every text any call produced, checked once more at the end.
std::vector<std::string>& seen() {
  static std::vector<std::string> all;
  return all;
}

void expect_clean(const std::string& text, const std::string& context) {
  seen().push_back(text);
  EXPECT_EQ(text.find(marker()), std::string::npos) << context << ": the marker leaked: " << text;
  // The random part alone, too (a message may cut the marker's head).
  EXPECT_EQ(text.find(marker().substr(14)), std::string::npos) << context << ": part of the marker leaked: " << text;
}

std::string redacted(const std::string& url) {
  char* out = nullptr;
  size_t len = 0;
  polylimit_error err;
  EXPECT_EQ(polylimit_redact_url(url.c_str(), &out, &len, &err), POLYLIMIT_OK) << err.message;
  std::string text = out == nullptr ? std::string() : std::string(out, len);
  polylimit_free(out);
  return text;
}

std::string prometheus(polylimit_client* client) {
  char* out = nullptr;
  size_t len = 0;
  polylimit_error err;
  EXPECT_EQ(polylimit_client_stats_prometheus(client, &out, &len, &err), POLYLIMIT_OK) << err.message;
  std::string text = out == nullptr ? std::string() : std::string(out, len);
  polylimit_free(out);
  return text;
}

struct Outcome {
  int open_status = POLYLIMIT_OK;   // polylimit_client_open
  int check_status = POLYLIMIT_OK;  // the first check, when it opened
  std::string message;              // the failing call's message
};

// Opens `url`, and when it opens, makes one check and one batch of two keys;
// every message, the Prometheus text and the redaction are checked.
Outcome run(const std::string& url, const polylimit_client_options* options = nullptr) {
  const std::string shown = redacted(url);
  expect_clean(shown, "polylimit_redact_url(" + shown + ")");
  EXPECT_NE(shown.find("***"), std::string::npos) << "nothing redacted in " << shown;
  // Idempotent.
  EXPECT_EQ(redacted(shown), shown);

  Outcome o;
  polylimit_client* client = nullptr;
  polylimit_error err;
  o.open_status = polylimit_client_open(url.c_str(), options, &client, &err);
  if (o.open_status != POLYLIMIT_OK) {
    o.message = err.message;
    expect_clean(o.message, "open " + shown);
    return o;
  }
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.limit = 5;
  lo.window_ms = 1000;
  polylimit_limiter* limiter = nullptr;
  EXPECT_EQ(polylimit_limiter_new(client, &lo, &limiter, &err), POLYLIMIT_OK) << err.message;
  if (limiter != nullptr) {
    polylimit_decision d;
    o.check_status = polylimit_limiter_check(limiter, "k", 1, 1, &d, &err);
    o.message = err.message;
    expect_clean(o.message, "check " + shown);
    const void* keys[2] = {"a", "b"};
    size_t lens[2] = {1, 1};
    polylimit_decision out[2];
    int statuses[2];
    polylimit_error key_errors[2];
    polylimit_limiter_check_many(limiter, keys, lens, 2, 1, out, statuses, key_errors, &err);
    expect_clean(err.message, "check_many " + shown);
    for (const polylimit_error& e : key_errors) expect_clean(e.message, "check_many key " + shown);
    polylimit_limiter_free(limiter);
  }
  expect_clean(prometheus(client), "prometheus " + shown);
  polylimit_client_close(client);
  return o;
}

std::string refused_port() { return std::to_string(pltest::free_port()); }

TEST(Secrets, RedactionHidesEveryPasswordForm) {
  const std::string m = marker();
  EXPECT_EQ(redacted("redis://user:" + m + "@host:6379/2"), "redis://user:***@host:6379/2");
  EXPECT_EQ(redacted("rediss://:" + m + "@host"), "rediss://:***@host");
  EXPECT_EQ(redacted("redis://" + m + "@host"), "redis://***@host");
  EXPECT_EQ(redacted("redis+cluster://u:" + m + "@a:1,b:2"), "redis+cluster://u:***@a:1,b:2");
  EXPECT_EQ(redacted("redis+sentinel://u:" + m + "@s1,s2/mymaster?sentinel_user=sen&sentinel_password=" + m),
            "redis+sentinel://u:***@s1,s2/mymaster?sentinel_user=sen&sentinel_password=***");
  EXPECT_EQ(redacted("redis://host:6379"), "redis://host:6379");
  EXPECT_EQ(redacted("memory://"), "memory://");
  // Unencoded separators in the password: still all hidden.
  EXPECT_EQ(redacted("redis://u:" + m + "/x#y@host:1"), "redis://u:***@host:1");
  EXPECT_EQ(redacted("redis://u:" + m + "?x@host:1"), "redis://u:***@host:1");
  EXPECT_EQ(redacted("redis://u:" + m + "@x@host:1"), "redis://u:***@host:1");
  EXPECT_EQ(redacted("redis+sentinel://h/m?sentinel_password=" + m + "&more&sentinel_user=u"),
            "redis+sentinel://h/m?sentinel_password=***&sentinel_user=u");
  EXPECT_EQ(redacted("u:" + m + "@h://x"), "u:***@h://x");

  polylimit_error err;
  char* out = reinterpret_cast<char*>(1);
  EXPECT_EQ(polylimit_redact_url(nullptr, &out, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(out, nullptr);
  EXPECT_STREQ(err.message, "url is NULL");
  EXPECT_EQ(polylimit_redact_url("redis://h", nullptr, nullptr, &err), POLYLIMIT_EINVALID);
}

TEST(Secrets, UrlsThatDoNotParse) {
  const std::string m = marker();
  const std::vector<std::string> urls = {
      // redis:// and rediss://: each part wrong
      "redis://user:" + m + "@h:99999",
      "redis://user:" + m + "@h:notaport",
      "redis://:" + m + "@h:1:2",
      "redis://" + m + "@h:0",
      "redis://user:" + m + "@h:6379/notadb",
      "redis://user:" + m + "@h:6379?x=1",
      "redis://user:" + m + "@:6379",
      "redis://user:" + m + "@h\x01st:1",
      "redis://user:" + m + "@[::1:1",
      "rediss://user:" + m + "@h:99999",
      "rediss://:" + m + "@h:1/x",
      // percent-encoded, badly encoded and unencoded separators
      "redis://user:" + m + "%zz@h:1",
      "redis://user:" + m + "%2Fx@h:99999",
      "redis://user:" + m + "/x@h:1",
      "redis://user:" + m + "?x@h:1",
      "redis://user:" + m + "#x@h:99999",
      "redis://user:" + m + "@x@h:99999",
      "redis://user:" + m + "?a=b@h:1",
      // cluster
      "redis+cluster://user:" + m + "@h:1,h:99999",
      "redis+cluster://user:" + m + "@h:1/3",
      "redis+cluster://u:" + m + "@h:1?x=1",
      "rediss+cluster://:" + m + "@h:1,,h:2",
      // sentinel
      "redis+sentinel://user:" + m + "@h:26379",
      "redis+sentinel://h:26379/m?sentinel_password=" + m + "&bogus=1",
      "redis+sentinel://h:26379/m?sentinel_user=u&sentinel_password=" + m + "&x",
      "redis+sentinel://u:" + m + "@h:0/m",
      "rediss+sentinel://:" + m + "@h/m/notadb",
      "redis+sentinel://h/m?sentinel_password=" + m + "&x=1&sentinel_user=u%zz",
      "redis+sentinel://h/m?Sentinel_Password=" + m,
      // unix
      "unix://user:" + m + "@/tmp/x.sock",
      "unix:///tmp/x.sock?db=x&password=" + m,
      "unix:///tmp/" + m + "@x.sock",
      // no or a bad scheme
      "bogus://user:" + m + "@h:1",
      "user:" + m + "@h://x",
      "redis:/user:" + m + "@h",
      "redis//user:" + m + "@h",
      "://user:" + m + "@h",
      "memory://u:" + m + "@",
      // long enough for the 256-byte message to be cut inside the password
      "redis://user:" + m + std::string(300, 'x') + m + "@h:99999",
  };
  for (const std::string& url : urls) {
    Outcome o = run(url);
    EXPECT_EQ(o.open_status, POLYLIMIT_EINVALID) << redacted(url) << ": " << o.message;
    EXPECT_NE(o.message.find("url"), std::string::npos) << o.message;
  }
}

TEST(Secrets, TlsOptionErrors) {
  const std::string m = marker();
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  co.tls_insecure = 1;
  Outcome o = run("redis://u:" + m + "@127.0.0.1:1", &co);  // tls options without TLS
  EXPECT_EQ(o.open_status, POLYLIMIT_EINVALID) << o.message;
  polylimit_client_options bad_ca = POLYLIMIT_CLIENT_OPTIONS_INIT;
  bad_ca.tls_ca_file = "/nonexistent/polylimit-ca.pem";
  o = run("rediss://u:" + m + "@127.0.0.1:1", &bad_ca);
  EXPECT_EQ(o.open_status, POLYLIMIT_EINVALID) << o.message;
  // TLS to a server that does not speak it: the handshake fails.
  pltest::RedisServer plain;
  o = run("rediss://u:" + m + "@127.0.0.1:" + std::to_string(plain.port()), &co);
  EXPECT_EQ(o.open_status, POLYLIMIT_OK);
  EXPECT_NE(o.check_status, POLYLIMIT_OK) << o.message;
}

TEST(Secrets, WrongPasswordsAgainstARealServer) {
  const std::string m = marker();
  pltest::RedisServer secured({"--requirepass", "right-password"});
  const std::string base = "127.0.0.1:" + std::to_string(secured.port());
  Outcome o = run("redis://:" + m + "@" + base);
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;
  o = run("redis://default:" + m + "@" + base + "/3");
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;
  o = run("redis://nosuchuser:" + m + "@" + base);
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;
  o = run("redis://:" + m + "%40x@" + base);
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;

  // An ACL user with another password.
  pltest::RedisServer acl;
  acl.command({"ACL", "SETUSER", "alice", "on", ">right-password", "~*", "+@all"});
  o = run("redis://alice:" + m + "@127.0.0.1:" + std::to_string(acl.port()));
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;
  // A password sent to a server that has none.
  o = run("redis://:" + m + "@127.0.0.1:" + std::to_string(acl.port()));
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;
}

// A server that does not know AUTH echoes its arguments in the error reply.
TEST(Secrets, ServerThatEchoesAuthArguments) {
  const std::string m = marker();
  pltest::RedisServer renamed({"--rename-command", "AUTH", ""});
  Outcome o = run("redis://:" + m + "@127.0.0.1:" + std::to_string(renamed.port()));
  EXPECT_NE(o.check_status, POLYLIMIT_OK);
  EXPECT_NE(o.message.find("unknown command"), std::string::npos) << o.message;
  o = run("redis://alice:" + m + std::string(200, 'y') + "@127.0.0.1:" + std::to_string(renamed.port()));
  EXPECT_NE(o.check_status, POLYLIMIT_OK);
  EXPECT_EQ(o.message.find("yyyy"), std::string::npos) << "the echoed password's tail: " << o.message;
}

TEST(Secrets, UnreachableHosts) {
  const std::string m = marker();
  Outcome o = run("redis://u:" + m + "@127.0.0.1:" + refused_port());
  EXPECT_EQ(o.check_status, POLYLIMIT_EUNAVAILABLE) << o.message;
  o = run("redis://u:" + m + "@host.invalid:6379");
  EXPECT_NE(o.check_status, POLYLIMIT_OK) << o.message;
  o = run("redis+cluster://u:" + m + "@127.0.0.1:" + refused_port() + ",127.0.0.1:" + refused_port());
  EXPECT_NE(o.check_status, POLYLIMIT_OK) << o.message;
  o = run("redis+sentinel://u:" + m + "@127.0.0.1:" + refused_port() + "/mymaster?sentinel_password=" + m);
  EXPECT_NE(o.check_status, POLYLIMIT_OK) << o.message;
  o = run("rediss+sentinel://:" + m + "@127.0.0.1:" + refused_port() + "/mymaster");
  EXPECT_NE(o.check_status, POLYLIMIT_OK) << o.message;
}

TEST(Secrets, ClusterAgainstAServerThatIsNotOne) {
  const std::string m = marker();
  pltest::RedisServer secured({"--requirepass", "right-password"});
  Outcome o = run("redis+cluster://:" + m + "@127.0.0.1:" + std::to_string(secured.port()));
  EXPECT_NE(o.check_status, POLYLIMIT_OK) << o.message;
}

TEST(Secrets, SentinelCredentials) {
  const std::string m = marker();
  pltest::RedisSentinels s("secretmaster", "data-password", "sentinel-password", false);
  const std::string hosts = s.url().substr(std::string("redis+sentinel://").size());  // h1,h2,h3/name
  // The sentinels refuse the sentinel_password.
  Outcome o = run("redis+sentinel://:data-password@" + hosts + "?sentinel_password=" + m);
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;
  o = run("redis+sentinel://:data-password@" + hosts + "?sentinel_user=default&sentinel_password=" + m);
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;
  // The sentinels accept theirs; the master refuses the data password.
  o = run("redis+sentinel://:" + m + "@" + hosts + "?sentinel_password=sentinel-password");
  EXPECT_EQ(o.check_status, POLYLIMIT_EAUTH) << o.message;
  // An unknown master, with both passwords marked.
  const std::string seeds = hosts.substr(0, hosts.find('/'));
  o = run("redis+sentinel://:" + m + "@" + seeds + "/nosuchmaster?sentinel_password=" + m);
  EXPECT_NE(o.check_status, POLYLIMIT_OK) << o.message;
}

TEST(Secrets, NothingSeenHeldTheMarker) {
  // Every test above ran and produced text (gtest runs them in order).
  for (const std::string& text : seen()) EXPECT_EQ(text.find(marker()), std::string::npos) << text;
}

}  // namespace
