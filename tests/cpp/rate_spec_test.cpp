// Rate specs: what parses, what each part means, and clear errors.
#include <gtest/gtest.h>

#include <cstring>

#include "polylimit.h"
#include "polylimit/errors.h"
#include "polylimit/rate_spec.h"

using namespace polylimit;

namespace {

void expect_limit(const LimitParams& p, int64_t limit, int64_t window_ms, int64_t burst = 0) {
  EXPECT_EQ(p.limit, limit);
  EXPECT_EQ(p.window_ms, window_ms);
  EXPECT_EQ(p.burst, burst);
}

void expect_bad(const std::string& spec, const std::string& fragment, Algorithm a = Algorithm::kSlidingLog) {
  try {
    parse_rate_spec(spec, a);
    ADD_FAILURE() << "'" << spec << "' parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << spec << " -> " << e.what();
  }
}

}  // namespace

TEST(RateSpec, Parses) {
  expect_limit(parse_rate_spec("100/minute")[0], 100, 60000);
  expect_limit(parse_rate_spec("10/s")[0], 10, 1000);
  expect_limit(parse_rate_spec("5 per 2 seconds")[0], 5, 2000);
  expect_limit(parse_rate_spec("  7 / 250ms ")[0], 7, 250);
  expect_limit(parse_rate_spec("1/D")[0], 1, 86400000);
  expect_limit(parse_rate_spec("3 PER Hour")[0], 3, 3600000);
  expect_limit(parse_rate_spec("10/5m")[0], 10, 300000);
  auto two = parse_rate_spec("10/s; 1000/hour");
  ASSERT_EQ(two.size(), 2u);
  expect_limit(two[0], 10, 1000);
  expect_limit(two[1], 1000, 3600000);
  auto g = parse_rate_spec("10/s burst 20", Algorithm::kGcra);
  expect_limit(g[0], 10, 1000, 20);
  EXPECT_EQ(g[0].algorithm, Algorithm::kGcra);
}

// Every form of the `limits` string notation parses with the same meaning
// (month = 30 days, year = 360 days, as `limits` counts them).
TEST(RateSpec, LimitsNotation) {
  expect_limit(parse_rate_spec("10/second")[0], 10, 1000);
  expect_limit(parse_rate_spec("1 per second")[0], 1, 1000);
  expect_limit(parse_rate_spec("1/SECOND")[0], 1, 1000);
  expect_limit(parse_rate_spec("1 / Second")[0], 1, 1000);
  expect_limit(parse_rate_spec("10 per 2 minutes")[0], 10, 120000);
  expect_limit(parse_rate_spec("100/day, 500/7days")[1], 500, 7 * 86400000LL);
  expect_limit(parse_rate_spec("1 per month")[0], 1, 30 * 86400000LL);
  expect_limit(parse_rate_spec("3/Months")[0], 3, 30 * 86400000LL);
  expect_limit(parse_rate_spec("2000 per year")[0], 2000, 360 * 86400000LL);
  auto flask = parse_rate_spec("200 per day, 50 per hour");
  ASSERT_EQ(flask.size(), 2u);
  expect_limit(flask[0], 200, 86400000);
  expect_limit(flask[1], 50, 3600000);
  for (const char* spec : {"10/hour;100/day;2000 per year", "10/hour,100/day,2000 per year",
                           "10/hour|100/day|2000 per year", "10/hour ; 100/day | 2000 per year"}) {
    auto three = parse_rate_spec(spec);
    ASSERT_EQ(three.size(), 3u) << spec;
    expect_limit(three[0], 10, 3600000);
    expect_limit(three[1], 100, 86400000);
    expect_limit(three[2], 2000, 360 * 86400000LL);
  }
}

TEST(RateSpec, ClearErrors) {
  expect_bad("", "rate spec is empty");
  expect_bad("   ", "rate spec is empty");
  expect_bad("10/s;", "rate spec '': empty limit");
  expect_bad("10/s;;5/m", "empty limit");
  expect_bad("abc", "rate spec 'abc': expected count");
  expect_bad("10", "expected '/' or 'per'");
  expect_bad("10 every second", "expected '/' or 'per'");
  expect_bad("10/", "expected a time unit");
  expect_bad("10/fortnight", "unknown time unit 'fortnight'");
  expect_bad("10/s; 5/fortnight", "rate spec ' 5/fortnight'");
  expect_bad("10/s, 5/fortnight", "rate spec ' 5/fortnight'");
  expect_bad("10/s|", "rate spec '': empty limit");
  expect_bad("1/2 years", "period is longer");
  expect_bad("0/s", "count must be at least 1");
  expect_bad("2000000/s", "count 2000000 is larger than 1000000");
  expect_bad("99999999999999999999/s", "larger than");
  expect_bad("10/0s", "period length must be at least 1");
  expect_bad("10/400d", "period is longer");
  expect_bad("10/s extra", "unexpected 'extra'");
  expect_bad("10/s burst 5", "only for the gcra");
  expect_bad("10/s burst", "expected burst", Algorithm::kGcra);
  expect_bad("10/s burst 5 more", "after the burst", Algorithm::kGcra);
  expect_bad("-5/s", "expected count");
  std::string many;
  for (int i = 0; i < 17; ++i) many += "1/s;";
  many += "1/s";
  expect_bad(many, "at most 16");
}

TEST(RateSpec, CApi) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter* l = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_new_spec(client, "2/s; 3/minute", nullptr, &l, &err), POLYLIMIT_OK) << err.message;
  polylimit_decision d;
  ASSERT_EQ(polylimit_limiter_check_at(l, "k", 1, 2, 1700000000000000, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.limit, 2);
  ASSERT_EQ(polylimit_limiter_check_at(l, "k", 1, 2, 1700000002000000, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 0);  // the per-minute limit has 1 left
  EXPECT_EQ(d.limit, 3);
  EXPECT_EQ(d.remaining, 1);
  polylimit_limiter_free(l);

  polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.algorithm = POLYLIMIT_ALG_GCRA;
  o.limit = -5;  // ignored
  ASSERT_EQ(polylimit_limiter_new_spec(client, "10/s burst 4", &o, &l, &err), POLYLIMIT_OK) << err.message;
  ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 4, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.allowed, 1);
  EXPECT_EQ(d.limit, 4);
  polylimit_limiter_free(l);

  l = reinterpret_cast<polylimit_limiter*>(0x1);
  EXPECT_EQ(polylimit_limiter_new_spec(client, "10/parsec", nullptr, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "unknown time unit 'parsec'"), nullptr) << err.message;
  EXPECT_EQ(l, nullptr);
  EXPECT_EQ(polylimit_limiter_new_spec(nullptr, "1/s", nullptr, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "client is NULL"), nullptr);
  EXPECT_EQ(polylimit_limiter_new_spec(client, nullptr, nullptr, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "spec is NULL"), nullptr);
  EXPECT_EQ(polylimit_limiter_new_spec(client, "1/s", nullptr, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "out is NULL"), nullptr);
  o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.version = 9;
  EXPECT_EQ(polylimit_limiter_new_spec(client, "1/s", &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "options->version = 9"), nullptr);
  o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.algorithm = 42;
  EXPECT_EQ(polylimit_limiter_new_spec(client, "1/s", &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "algorithm = 42"), nullptr);
  o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  o.prefix = "{bad}";
  EXPECT_EQ(polylimit_limiter_new_spec(client, "1/s", &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "prefix"), nullptr);
  EXPECT_EQ(polylimit_limiter_new_spec(client, "1/s", nullptr, &l, nullptr), POLYLIMIT_OK);  // NULL err
  polylimit_limiter_free(l);
  polylimit_client_close(client);
}
