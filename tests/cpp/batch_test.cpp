// check_many: one pipelined round trip for many keys, one Decision or error each.
#include <gtest/gtest.h>

#include <cstring>

#include "redis_server.h"
#include "polylimit.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"

using namespace polylimit;

namespace {

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

}  // namespace

TEST(Batch, OneRoundTripManyKeys) {
  auto client = Client::open(server().url());
  LimiterOptions o;
  o.limits = {{Algorithm::kSlidingLog, 2, 60000}, {Algorithm::kSlidingLog, 10, 3600000}};
  o.prefix = "batch1";
  Limiter l(client, o);
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i) names.push_back("user-" + std::to_string(i % 100));  // each key twice
  std::vector<std::string_view> keys(names.begin(), names.end());
  keys.push_back("");  // one bad key does not fail the others
  long before = client->backend().round_trips();
  std::vector<Outcome> out = l.check_many(keys, 1);
  EXPECT_EQ(client->backend().round_trips() - before, 1);
  ASSERT_EQ(out.size(), 201u);
  for (size_t i = 0; i < 200; ++i) {
    ASSERT_FALSE(out[i].error) << i;
    EXPECT_TRUE(out[i].decision.allowed);
    EXPECT_EQ(out[i].decision.remaining, i < 100 ? 1 : 0);  // the second use of a key sees the first
  }
  ASSERT_TRUE(out[200].error);
  // A third check of each key is denied, in one more round trip.
  out = l.check_many(std::vector<std::string_view>(keys.begin(), keys.begin() + 100), 1);
  for (auto& r : out) EXPECT_FALSE(r.decision.allowed);
  EXPECT_EQ(client->backend().round_trips() - before, 2);
  // The same decisions as one-by-one checks would give.
  EXPECT_FALSE(l.check("user-5").allowed);
}

TEST(Batch, SameAnswersInMemory) {
  LimiterOptions o;
  o.limit = {Algorithm::kGcra, 3, 1000};
  Limiter l(Client::open("memory://"), o);
  std::vector<std::string_view> keys = {"a", "b", "a", "a", "a"};
  auto out = l.check_many(keys, 1);
  std::vector<bool> allowed;
  for (auto& r : out) allowed.push_back(r.decision.allowed);
  EXPECT_EQ(allowed, (std::vector<bool>{true, true, true, true, false}));
}

TEST(Batch, CApi) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server().url().c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter* l = nullptr;
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.prefix = "batchc";
  ASSERT_EQ(polylimit_limiter_new_spec(client, "1/minute", &lo, &l, nullptr), POLYLIMIT_OK);
  const char* k[] = {"x", "y", "x", nullptr, "z\0z"};
  size_t lens[] = {1, 1, 1, 3, 3};
  polylimit_decision out[5];
  int statuses[5];
  polylimit_error key_errors[5];
  polylimit_error err;
  int rc = polylimit_limiter_check_many(l, reinterpret_cast<const void* const*>(k), lens, 5, 1, out, statuses,
                                        key_errors, &err);
  EXPECT_EQ(rc, POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "keys[3]: key is NULL");
  // Each key reports its own status and message.
  EXPECT_EQ(key_errors[3].code, POLYLIMIT_EINVALID);
  EXPECT_STREQ(key_errors[3].message, "key is NULL");
  for (int i : {0, 1, 2, 4}) {
    EXPECT_EQ(key_errors[i].code, POLYLIMIT_OK) << i;
    EXPECT_STREQ(key_errors[i].message, "") << i;
  }
  EXPECT_EQ(statuses[0], POLYLIMIT_OK);
  EXPECT_EQ(out[0].allowed, 1);
  EXPECT_EQ(out[1].allowed, 1);
  EXPECT_EQ(statuses[2], POLYLIMIT_OK);
  EXPECT_EQ(out[2].allowed, 0);
  EXPECT_EQ(statuses[3], POLYLIMIT_EINVALID);
  EXPECT_EQ(statuses[4], POLYLIMIT_OK);
  EXPECT_EQ(out[4].allowed, 1);
  // All good: POLYLIMIT_OK.
  const char* k2[] = {"p", "q"};
  size_t l2[] = {1, 1};
  EXPECT_EQ(polylimit_limiter_check_many(l, reinterpret_cast<const void* const*>(k2), l2, 2, 1, out, statuses, nullptr,
                                         &err),
            POLYLIMIT_OK);
  // An empty key among good ones: only that key fails, with its own message.
  const char* k3[] = {"r", "", "s"};
  size_t l3[] = {1, 0, 1};
  EXPECT_EQ(polylimit_limiter_check_many(l, reinterpret_cast<const void* const*>(k3), l3, 3, 1, out, statuses,
                                         key_errors, &err),
            POLYLIMIT_EINVALID);
  EXPECT_EQ(statuses[0], POLYLIMIT_OK);
  EXPECT_EQ(statuses[1], POLYLIMIT_EINVALID);
  EXPECT_STREQ(key_errors[1].message, "key is empty");
  EXPECT_EQ(statuses[2], POLYLIMIT_OK);
  EXPECT_EQ(out[2].allowed, 1);
  // Bad arguments.
  const void* const* kk = reinterpret_cast<const void* const*>(k2);
  EXPECT_EQ(polylimit_limiter_check_many(nullptr, kk, l2, 2, 1, out, statuses, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "limiter is NULL"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_many(l, nullptr, l2, 2, 1, out, statuses, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "keys is NULL"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_many(l, kk, nullptr, 2, 1, out, statuses, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "key_lens is NULL"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_many(l, kk, l2, 2, 1, nullptr, statuses, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "out is NULL"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_many(l, kk, l2, 2, 1, out, nullptr, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "statuses is NULL"), nullptr);
  EXPECT_EQ(polylimit_limiter_check_many(l, kk, l2, 2, 0, out, statuses, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::strstr(err.message, "cost = 0"), nullptr);
  EXPECT_EQ(statuses[0], POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_check_many(l, kk, l2, SIZE_MAX, 1, out, statuses, nullptr, &err), POLYLIMIT_EINVALID);
  EXPECT_STREQ(err.message, "batch = 18446744073709551615 is out of range 0..100000");
  EXPECT_EQ(polylimit_limiter_check_many(l, nullptr, nullptr, 0, 1, nullptr, nullptr, nullptr, &err), POLYLIMIT_OK);  // nothing to do
  polylimit_limiter_free(l);
  polylimit_client_close(client);
}
