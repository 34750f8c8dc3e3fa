// Limiter validation (before any I/O) and storage keys.
#include <gtest/gtest.h>

#include "polylimit/errors.h"
#include "polylimit/limiter.h"

using namespace polylimit;

namespace {

LimiterOptions opts(int64_t limit, int64_t window_ms) {
  LimiterOptions o;
  o.limit = {Algorithm::kSlidingLog, limit, window_ms};
  return o;
}

void expect_invalid(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(LimiterOptions, Rejected) {
  auto c = Client::open("memory://");
  expect_invalid([&] { Limiter(c, opts(0, 1000)); }, "limit = 0");
  expect_invalid([&] { Limiter(c, opts(-5, 1000)); }, "limit = -5");
  expect_invalid([&] { Limiter(c, opts(kMaxLimit + 1, 1000)); }, "limit");
  expect_invalid([&] { Limiter(c, opts(10, 0)); }, "window_ms = 0");
  expect_invalid([&] { Limiter(c, opts(10, kMaxWindowMs + 1)); }, "window_ms");
  expect_invalid([&] { Limiter(nullptr, opts(10, 10)); }, "client");
  auto o = opts(10, 1000);
  o.prefix = "";
  expect_invalid([&] { Limiter(c, o); }, "prefix is empty");
  o.prefix = "a{b}";
  expect_invalid([&] { Limiter(c, o); }, "prefix must not contain");
  o.prefix = std::string(kMaxPrefixLength + 1, 'p');
  expect_invalid([&] { Limiter(c, o); }, "prefix is longer");
}

TEST(LimiterOptions, CallArguments) {
  Limiter l(Client::open("memory://"), opts(10, 1000));
  expect_invalid([&] { l.check("k", 0); }, "cost = 0");
  expect_invalid([&] { l.check("k", -1); }, "cost = -1");
  expect_invalid([&] { l.check("k", 11); }, "exceeds limit = 10");
  expect_invalid([&] { l.check("", 1); }, "key is empty");
  expect_invalid([&] { l.peek(""); }, "key is empty");
  expect_invalid([&] { l.reset(""); }, "key is empty");
  expect_invalid([&] { l.check_at("k", 1, 0); }, "now_us = 0");
  expect_invalid([&] { l.check_at("k", 1, kMaxTimestampUs + 1); }, "now_us");
}

TEST(StorageKey, HashTagIsDerivedNotChosen) {
  Limiter l(Client::open("memory://"), opts(10, 1000));
  std::string k = l.storage_key("user:{42}");
  // Exactly one '{' ... '}' pair placed by the library, before the caller's key.
  size_t open = k.find('{');
  size_t close = k.find('}');
  ASSERT_NE(open, std::string::npos);
  EXPECT_EQ(close - open - 1, 16u);  // 16 hex digits
  EXPECT_EQ(k.substr(0, open), "pl:sliding_log.ring:");
  EXPECT_EQ(k.substr(close + 2), "user:{42}");
  // Different keys get different tags; the same key the same one.
  EXPECT_EQ(l.storage_key("a"), l.storage_key("a"));
  EXPECT_NE(l.storage_key("a").substr(0, close + 1), l.storage_key("b").substr(0, close + 1));
}

// Storage keys never change between releases: a new name would reset every
// client's limit on upgrade. The tag is FNV-1a 64 of the key, 16 lowercase
// hex digits, zero-padded.
TEST(StorageKey, NamesAreStable) {
  Limiter l(Client::open("memory://"), opts(10, 1000));
  EXPECT_EQ(l.storage_key("user-1"), "pl:sliding_log.ring:{f84ba2aa754a4bd4}:user-1");
  EXPECT_EQ(l.storage_key("a"), "pl:sliding_log.ring:{af63dc4c8601ec8c}:a");
  EXPECT_EQ(l.storage_key(std::string_view("\0x", 2)),
            std::string("pl:sliding_log.ring:{08325007b4eb10c5}:") + std::string("\0x", 2));
}

TEST(StorageKey, MultiLimitKeysShareOneHashTag) {
  LimiterOptions o;
  o.limits = {{Algorithm::kGcra, 10, 1000}, {Algorithm::kGcra, 1000, 3600000}, {Algorithm::kGcra, 5, 100}};
  Limiter l(Client::open("memory://"), o);
  auto keys = l.storage_keys("user:{7}");
  ASSERT_EQ(keys.size(), 3u);
  auto tag = [](const std::string& k) { return k.substr(k.find('{'), k.find('}') - k.find('{') + 1); };
  EXPECT_EQ(keys[0], l.storage_key("user:{7}"));
  EXPECT_EQ(tag(keys[1]), tag(keys[0]));
  EXPECT_EQ(tag(keys[2]), tag(keys[0]));
  EXPECT_NE(keys[1], keys[2]);
  EXPECT_EQ(keys[0].substr(0, keys[0].find('{')), "pl:gcra:");
}
