// HTTP rate-limit headers from decisions: the exact text every binding sends.
#include <gtest/gtest.h>

#include <string>

#include "polylimit.h"

namespace {

constexpr int64_t kT0 = 1700000000000000;  // microseconds since the epoch

struct Memory {
  polylimit_client* client = nullptr;
  polylimit_limiter* limiter = nullptr;
  explicit Memory(const char* spec, int algorithm = POLYLIMIT_ALG_SLIDING_LOG) {
    polylimit_error err;
    EXPECT_EQ(polylimit_client_open("memory://", nullptr, &client, &err), POLYLIMIT_OK) << err.message;
    polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
    o.algorithm = algorithm;
    EXPECT_EQ(polylimit_limiter_new_spec(client, spec, &o, &limiter, &err), POLYLIMIT_OK) << err.message;
  }
  ~Memory() {
    polylimit_limiter_free(limiter);
    polylimit_client_close(client);
  }
  polylimit_decision check_at(int64_t now_us, int64_t cost = 1) {
    polylimit_decision d{};
    polylimit_error err;
    EXPECT_EQ(polylimit_limiter_check_at(limiter, "k", 1, cost, now_us, &d, &err), POLYLIMIT_OK) << err.message;
    return d;
  }
  std::string headers(const polylimit_decision& d) {
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    EXPECT_EQ(polylimit_limiter_headers(limiter, &d, &text, &len, &err), POLYLIMIT_OK) << err.message;
    std::string out(text == nullptr ? "" : text, len);
    polylimit_free(text);
    return out;
  }
};

std::string secs_up(int64_t ms) { return std::to_string((ms + 999) / 1000); }

}  // namespace

TEST(Headers, AllowedThenDenied) {
  Memory m("10/minute");
  polylimit_decision d{};
  for (int i = 0; i < 4; ++i) d = m.check_at(kT0 + i * 1000000);  // 4 units, 1 s apart
  ASSERT_TRUE(d.allowed);
  ASSERT_EQ(d.remaining, 6);
  EXPECT_EQ(m.headers(d),
            "RateLimit-Limit: 10\n"
            "RateLimit-Remaining: 6\n"
            "RateLimit-Reset: " +
                secs_up(d.reset_after_ms) +
                "\n"
                "RateLimit-Policy: \"default\";q=10;w=60\n"
                "RateLimit: \"default\";r=6;t=" +
                secs_up(d.reset_after_ms) + "\n");
  // Full capacity again once the newest unit (taken at +3 s) is a minute old.
  EXPECT_EQ(d.reset_after_ms, 60000);

  d = m.check_at(kT0 + 10000000, 6);  // the rest, at +10 s
  ASSERT_TRUE(d.allowed);
  d = m.check_at(kT0 + 10500000);  // denied until the first unit expires at +60 s
  ASSERT_FALSE(d.allowed);
  ASSERT_EQ(d.retry_after_ms, 49500);
  std::string h = m.headers(d);
  EXPECT_EQ(h.rfind("Retry-After: 50\nRateLimit-Limit: 10\nRateLimit-Remaining: 0\n", 0), 0u) << h;
  EXPECT_NE(h.find("RateLimit: \"default\";r=0;t=" + secs_up(d.reset_after_ms) + "\n"), std::string::npos) << h;
}

TEST(Headers, RetryAfterIsAtLeastOneSecond) {
  Memory m("1/200ms");
  polylimit_decision d = m.check_at(kT0);
  ASSERT_TRUE(d.allowed);
  d = m.check_at(kT0 + 150000);
  ASSERT_FALSE(d.allowed);
  ASSERT_EQ(d.retry_after_ms, 50);
  std::string h = m.headers(d);
  EXPECT_EQ(h.rfind("Retry-After: 1\n", 0), 0u) << h;                                    // never "0": that means "now"
  EXPECT_NE(h.find("RateLimit-Policy: \"default\";q=1;w=1\n"), std::string::npos) << h;  // w rounds up
}

TEST(Headers, SeveralLimitsNameEachPolicy) {
  Memory m("3/s; 100 per minute");
  polylimit_decision d{};
  for (int i = 0; i < 3; ++i) d = m.check_at(kT0);
  ASSERT_TRUE(d.allowed);
  ASSERT_EQ(d.limit, 3);  // the per-second limit has the least left
  std::string h = m.headers(d);
  EXPECT_NE(h.find("RateLimit-Policy: \"3-per-1s\";q=3;w=1, \"100-per-60s\";q=100;w=60\n"), std::string::npos) << h;
  EXPECT_NE(h.find("RateLimit: \"3-per-1s\";r=0;t="), std::string::npos) << h;
  d = m.check_at(kT0 + 100000);
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(m.headers(d).rfind("Retry-After: 1\nRateLimit-Limit: 3\n", 0), 0u);
}

TEST(Headers, DynamicLimitHasNoPolicy) {
  Memory m("10/minute");
  polylimit_decision d{};
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_check_limit(m.limiter, "k", 1, 1, 7, 1000, &d, &err), POLYLIMIT_OK) << err.message;
  std::string h = m.headers(d);
  EXPECT_NE(h.find("RateLimit-Limit: 7\nRateLimit-Remaining: 6\n"), std::string::npos) << h;
  EXPECT_EQ(h.find("RateLimit-Policy"), std::string::npos) << h;
  EXPECT_NE(h.find("RateLimit: \"default\";r=6;t=1\n"), std::string::npos) << h;
}

// GCRA reports against its burst (what remaining counts down from), so the
// policy's quota is the burst too: r and q must describe the same units.
TEST(Headers, GcraPolicyQuotesTheBurst) {
  Memory m("10/s burst 20", POLYLIMIT_ALG_GCRA);
  polylimit_decision d = m.check_at(kT0);
  ASSERT_TRUE(d.allowed);
  std::string h = m.headers(d);
  ASSERT_EQ(d.limit, 20);
  EXPECT_NE(h.find("RateLimit-Limit: 20\nRateLimit-Remaining: 19\n"), std::string::npos) << h;
  EXPECT_NE(h.find("RateLimit-Policy: \"default\";q=20;w=1\n"), std::string::npos) << h;
}

TEST(Headers, BadInput) {
  Memory m("10/minute");
  polylimit_decision d = m.check_at(kT0);
  char* text = reinterpret_cast<char*>(0x1);
  size_t len = 99;
  polylimit_error err;
  EXPECT_EQ(polylimit_limiter_headers(nullptr, &d, &text, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "limiter is NULL");
  EXPECT_EQ(text, nullptr);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(polylimit_limiter_headers(m.limiter, nullptr, &text, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "decision is NULL");
  EXPECT_EQ(polylimit_limiter_headers(m.limiter, &d, nullptr, &len, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "out is NULL");
  ASSERT_EQ(polylimit_limiter_headers(m.limiter, &d, &text, nullptr, nullptr), POLYLIMIT_OK);  // len, err optional
  EXPECT_NE(std::string(text).find("RateLimit-Remaining: 9\n"), std::string::npos);
  polylimit_free(text);
}

// "200 per day, 50 per hour": the hour limit decides, so its reset is at most
// an hour, although the key as a whole is full again only after a day.
TEST(Headers, ResetIsTheDecidingLimits) {
  Memory m("200 per day, 50 per hour");
  polylimit_decision d = m.check_at(kT0);
  ASSERT_EQ(d.limit, 50);
  ASSERT_EQ(d.reset_after_ms, 86400000);
  std::string h = m.headers(d);
  EXPECT_NE(h.find("RateLimit-Reset: 3600\n"), std::string::npos) << h;
  EXPECT_NE(h.find("RateLimit: \"50-per-3600s\";r=49;t=3600\n"), std::string::npos) << h;
  EXPECT_NE(h.find("RateLimit-Policy: \"200-per-86400s\";q=200;w=86400, \"50-per-3600s\";q=50;w=3600\n"),
            std::string::npos)
      << h;
}
