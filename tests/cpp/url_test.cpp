// URL parsing: every accepted form and the malformed ones, with messages.
#include <gtest/gtest.h>

#include <chrono>

#include "polylimit/errors.h"
#include "polylimit/url.h"

using polylimit::Endpoint;
using polylimit::Error;
using polylimit::parse_url;
using polylimit::redact_url;

TEST(Url, PlainHostPort) {
  Endpoint e = parse_url("redis://127.0.0.1:6380");
  EXPECT_EQ(e.kind, Endpoint::Kind::kTcp);
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 6380);
  EXPECT_EQ(e.db, 0);
  EXPECT_TRUE(e.password.empty());
}

TEST(Url, DefaultPortAndDb) {
  Endpoint e = parse_url("redis://cache.internal/3");
  EXPECT_EQ(e.host, "cache.internal");
  EXPECT_EQ(e.port, 6379);
  EXPECT_EQ(e.db, 3);
}

TEST(Url, UserAndPassword) {
  Endpoint e = parse_url("redis://app:s3cr%40t@localhost:7000/2");
  EXPECT_EQ(e.user, "app");
  EXPECT_EQ(e.password, "s3cr@t");
  EXPECT_EQ(e.port, 7000);
  EXPECT_EQ(e.db, 2);
}

TEST(Url, PasswordOnly) {
  Endpoint a = parse_url("redis://:pw@h:1");
  EXPECT_EQ(a.user, "");
  EXPECT_EQ(a.password, "pw");
  Endpoint b = parse_url("redis://pw@h:1");
  EXPECT_EQ(b.password, "pw");
}

TEST(Url, Ipv6) {
  Endpoint e = parse_url("redis://[::1]:6390");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, 6390);
  EXPECT_EQ(e.describe(), "[::1]:6390");
}

TEST(Url, Unix) {
  Endpoint e = parse_url("unix:///run/redis/redis.sock?db=4");
  EXPECT_EQ(e.kind, Endpoint::Kind::kUnix);
  EXPECT_EQ(e.path, "/run/redis/redis.sock");
  EXPECT_EQ(e.db, 4);
}

TEST(Url, Memory) { EXPECT_EQ(parse_url("memory://").kind, Endpoint::Kind::kMemory); }

TEST(Url, SchemeIsCaseInsensitive) { EXPECT_EQ(parse_url("REDIS://h:1").kind, Endpoint::Kind::kTcp); }

// Each malformed URL is rejected with kInvalidArgument and a message that
// contains the given fragment.
TEST(Url, Malformed) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "expected scheme"},
      {"localhost:6379", "expected scheme"},
      {"http://h:1", "unknown scheme"},
      {"redis://", "missing host"},
      {"redis://:6379", "missing host"},
      {"redis://h:", "empty port"},
      {"redis://h:0", "port 0 is out of range"},
      {"redis://h:65536", "out of range"},
      {"redis://h:12ab", "not a number"},
      {"redis://h:1/x", "database \"x\" is not a number"},
      {"redis://h:1/-1", "not a number"},
      {"redis://u:@h:1", "empty password"},
      {"redis://u:p%zz@h:1", "percent escape"},
      {"redis://[::1:1", "unclosed"},
      {"redis://h:1?x=1", "query"},
      {"unix://relative.sock", "absolute"},
      {"unix:///s.sock?timeout=1", "db=N"},
      {"unix:///", "names a directory"},
      {"unix:///run/redis/", "names a directory"},
      {"unix:///tmp/a\tb.sock", "control character"},
      {"memory://x", "memory://"},
      {"redis+cluster://", "missing host"},
      {"redis+cluster://h:1,,h:2", "empty entry"},
      {"redis+cluster://h:1,h:x", "not a number"},
      {"redis+cluster://h:1/3", "no database"},
      {"redis+cluster://h:1?x=1", "query"},
      {"redis+sentinel://h:1", "missing master name"},
      {"redis+sentinel://h:1/", "missing master name"},
      {"redis+sentinel://h:1/m?password=x", "unknown query parameter"},
      {"redis+sentinel://h:1/m?sentinel_password=", "empty sentinel_password"},
      {"redis+sentinel://h:1/m?sentinel_user=u", "needs sentinel_password"},
      {"redis+sentinel://h:1/m/x", "database"},
      {"rediss://h:1?x=1", "query"},
      {"rediss+cluster://h:1/3", "no database"},
      {"rediss+sentinel://h:1", "missing master name"},
      {"redisss://h:1", "unknown scheme"},
      {"redis://h h:1", "invalid character"},
      // A second ':' is not a port inside the host, in every kind of URL.
      {"redis://h:1:2", "host \"h:1\" contains ':'"},
      {"rediss://u:p@h:1:2/0", "host \"h:1\" contains ':'"},
      {"redis+cluster://a:1,b:2:3", "host \"b:2\" contains ':'"},
      {"redis+sentinel://s:1:2/m", "host \"s:1\" contains ':'"},
      // Control characters in a host name.
      {"redis://h\x01st:1", "control character in host"},
      {"redis://h\x7f:1", "control character in host"},
      {"redis+cluster://a:1,b\x1f:2", "control character in host"},
      {"redis+sentinel://s\n:1/m", "control character in host"},
  };
  for (const auto& [url, fragment] : cases) {
    try {
      parse_url(url);
      ADD_FAILURE() << "accepted: " << url;
    } catch (const polylimit::Error& e) {
      EXPECT_EQ(e.code(), polylimit::ErrorCode::kInvalidArgument) << url;
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << url << " -> " << e.what();
      EXPECT_NE(std::string(e.what()).find("url"), std::string::npos) << e.what();
    }
  }
}

TEST(Url, UnixSocketPathFitsSockaddr) {
  EXPECT_EQ(parse_url("unix:///" + std::string(106, 's')).path.size(), 107u);
  try {
    parse_url("unix:///" + std::string(107, 's'));
    ADD_FAILURE() << "a 108-byte socket path was accepted";
  } catch (const polylimit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("108 bytes long; at most 107"), std::string::npos) << e.what();
  }
}

TEST(Url, TlsForms) {
  Endpoint ep = parse_url("rediss://u:p%40ss@cache.example:6380/2");
  EXPECT_TRUE(ep.tls);
  EXPECT_EQ(ep.kind, Endpoint::Kind::kTcp);
  EXPECT_EQ(ep.host, "cache.example");
  EXPECT_EQ(ep.port, 6380);
  EXPECT_EQ(ep.user, "u");
  EXPECT_EQ(ep.password, "p@ss");
  EXPECT_EQ(ep.db, 2);
  EXPECT_EQ(parse_url("REDISS://[::1]").port, 6379);
  EXPECT_FALSE(parse_url("redis://h:1").tls);

  ep = parse_url("rediss+cluster://:pw@a:7000,b:7001");
  EXPECT_TRUE(ep.tls);
  EXPECT_EQ(ep.kind, Endpoint::Kind::kCluster);
  ASSERT_EQ(ep.seeds.size(), 2u);
  EXPECT_EQ(ep.seeds[1].host, "b");
  EXPECT_EQ(ep.password, "pw");

  ep = parse_url("rediss+sentinel://s1,s2:26380/mymaster/3?sentinel_password=x");
  EXPECT_TRUE(ep.tls);
  EXPECT_EQ(ep.kind, Endpoint::Kind::kSentinel);
  EXPECT_EQ(ep.seeds[0].port, 26379);
  EXPECT_EQ(ep.master_name, "mymaster");
  EXPECT_EQ(ep.db, 3);
  EXPECT_EQ(ep.sentinel_password, "x");
  EXPECT_EQ(redact_url("rediss://u:secret@h:1"), "rediss://u:***@h:1");
}

TEST(Url, ClusterSeeds) {
  Endpoint e = parse_url("redis+cluster://app:pw@10.0.0.1:7000,10.0.0.2,[::1]:7002");
  EXPECT_EQ(e.kind, Endpoint::Kind::kCluster);
  ASSERT_EQ(e.seeds.size(), 3u);
  EXPECT_EQ(e.seeds[0].describe(), "10.0.0.1:7000");
  EXPECT_EQ(e.seeds[1].describe(), "10.0.0.2:6379");
  EXPECT_EQ(e.seeds[2].describe(), "[::1]:7002");
  EXPECT_EQ(e.user, "app");
  EXPECT_EQ(e.password, "pw");
  EXPECT_EQ(e.describe(), "cluster 10.0.0.1:7000,10.0.0.2:6379,[::1]:7002");
}

TEST(Url, SentinelMasterAndCredentials) {
  Endpoint e = parse_url("redis+sentinel://:data%40pw@s1:5000,s2/mymaster/2?sentinel_user=sen&sentinel_password=s%26p");
  EXPECT_EQ(e.kind, Endpoint::Kind::kSentinel);
  ASSERT_EQ(e.seeds.size(), 2u);
  EXPECT_EQ(e.seeds[0].describe(), "s1:5000");
  EXPECT_EQ(e.seeds[1].describe(), "s2:26379");
  EXPECT_EQ(e.master_name, "mymaster");
  EXPECT_EQ(e.db, 2);
  EXPECT_EQ(e.password, "data@pw");
  EXPECT_EQ(e.sentinel_user, "sen");
  EXPECT_EQ(e.sentinel_password, "s&p");
}

// No message quotes a password: the URL is redacted, and so is any fragment
// a parse error quotes.
// A password of one-character pieces that the mask itself contains
// ("*&*&..."): hiding them one after another in the message so far tripled
// its quoted fragment per piece (14 pieces took 12 s). Each piece is now
// looked for in the message as it was.
TEST(Url, RepeatedShortSecretsAreHiddenOnce) {
  std::string pw = "*";
  for (int i = 0; i < 40; ++i) pw += "&*";
  const auto t0 = std::chrono::steady_clock::now();
  std::string message;
  try {
    parse_url("redis://:" + pw + "@h:1*");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    message = e.what();
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(message, "url \"redis://:***@h:1*\": port \"1***\" is not a number");
  EXPECT_LT(ms, 100);
}

TEST(Url, PasswordsNeverAppearInErrors) {
  const std::string pw = "S3cretMarker";
  const std::vector<std::string> urls = {
      "redis://user:" + pw + "@h:99999",
      "redis://user:" + pw + "@h:notaport",
      "redis://:" + pw + "@h:1:2",
      "redis://" + pw + "@h:0",
      "redis://user:" + pw + "@h:6379/notadb",
      "redis://user:" + pw + "@h:6379?x=1",
      "redis+cluster://user:" + pw + "@h:1,h:99999",
      "redis+sentinel://user:" + pw + "@h:26379",
      "redis+sentinel://h:26379/m?sentinel_password=" + pw + "&bogus=1",
      "redis+sentinel://h:26379/m?sentinel_user=u&sentinel_password=" + pw + "&x",
      "unix://user:" + pw + "@/tmp/x.sock?db=x",
      "bogus://user:" + pw + "@h:1",
      "redis://user:" + pw + "%zz@h:1",
  };
  for (const std::string& url : urls) {
    try {
      parse_url(url);
      ADD_FAILURE() << "accepted: " << redact_url(url);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find(pw), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("S3cret"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(redact_url("redis://bob:" + pw + "@host:6379/2"), "redis://bob:***@host:6379/2");
  EXPECT_EQ(redact_url("redis+sentinel://h:1/m?sentinel_user=u&sentinel_password=" + pw),
            "redis+sentinel://h:1/m?sentinel_user=u&sentinel_password=***");
  EXPECT_EQ(redact_url("redis://host:6379"), "redis://host:6379");
}
