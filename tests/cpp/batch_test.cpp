// check_many: one pipelined round trip for many keys, one Decision or error
// each; checks of one limit on many keys go in keys calls
// (core/scripts/single/common/keys.lua) and decide exactly as single calls.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/memory_backend.h"
#include "polylimit.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_server.h"

using namespace polylimit;

namespace {

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

constexpr int64_t kT0 = 1700000000000000;

std::shared_ptr<Client> redis_client(bool coalesce) {
  ClientOptions o;
  o.coalesce = coalesce;
  o.pool.command_timeout_ms = 5000;
  return Client::open(server().url(), o);
}

struct KeysSpec {
  const char* name;
  LimitParams limit;
  bool grows = false;  // the limit triples half-way (the sliding log re-reads a smaller ring)
};

// One limit without a block: the checks the single-check scripts decide.
std::vector<KeysSpec> keys_specs() {
  return {
      {"sliding_log", LimitParams{Algorithm::kSlidingLog, 20, 20000}},
      {"sliding_log_big", LimitParams{Algorithm::kSlidingLog, 400, 60000}},  // read in blocks
      {"sliding_log_grows", LimitParams{Algorithm::kSlidingLog, 30, 20000}, true},
      {"fixed_window", LimitParams{Algorithm::kFixedWindow, 20, 20000}},
      {"sliding_counter", LimitParams{Algorithm::kSlidingCounter, 20, 20000}},
      {"gcra", LimitParams{Algorithm::kGcra, 20, 20000}},
      {"gcra_burst", LimitParams{Algorithm::kGcra, 20, 20000, 7}},
  };
}

Request keys_request(const std::vector<LimitParams>& limits, const std::string& key, int64_t cost, int64_t now_us) {
  Request r;
  r.op = Op::kCheck;
  r.limits = &limits;
  r.keys = {key};
  r.cost = cost;
  r.now_us = now_us;
  return r;
}

using Fields = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t>;
Fields fields(const Decision& d) {
  return {d.allowed, d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms, d.granted};
}

class KeysCalls : public ::testing::TestWithParam<size_t> {};

}  // namespace

// Batches of up to 300 checks of one limit at one instant, on 12 keys (each
// repeated, in any order; more than one keys call per batch at 128 keys
// each): every decision is the one single calls one after another and
// memory:// give, and the batches went out as keys calls.
TEST_P(KeysCalls, DecideAsSingleCallsAndMemory) {
  KeysSpec spec = keys_specs()[GetParam()];
  std::vector<LimitParams> limits = {spec.limit};
  auto keyed = redis_client(true);
  auto single = redis_client(false);
  MemoryBackend memory([] { return kT0; });
  std::mt19937_64 rng(GetParam() * 104729 + 3);
  const std::string tag = std::string("keys:") + spec.name + ":" + std::to_string(rng());
  int64_t now = kT0;
  size_t compared = 0, denied = 0;
  for (int batch = 0; batch < 30; ++batch) {
    now += static_cast<int64_t>(rng() % 3000000);  // up to 3 s between batches
    if (spec.grows && batch == 15) limits[0].limit *= 3;
    const size_t n = 2 + rng() % 300;
    std::vector<std::string> keys(n);
    std::vector<int64_t> costs(n);
    std::vector<Request> on;
    for (size_t j = 0; j < n; ++j) {
      keys[j] = std::to_string(rng() % 12);
      costs[j] = 1 + static_cast<int64_t>(rng() % (rng() % 4 == 0 ? limits[0].capacity() : 3));
      on.push_back(keys_request(limits, tag + ":on:" + keys[j], costs[j], now));
    }
    const std::vector<Outcome> got = keyed->backend().evaluate_many(on);
    ASSERT_EQ(got.size(), n);
    for (size_t j = 0; j < n; ++j) {
      ASSERT_FALSE(got[j].error) << spec.name << " batch " << batch << " check " << j;
      const Decision want = memory.evaluate(keys_request(limits, tag + ":" + keys[j], costs[j], now));
      const Decision alone = single->backend().evaluate(keys_request(limits, tag + ":off:" + keys[j], costs[j], now));
      ASSERT_EQ(fields(alone), fields(want)) << spec.name << " batch " << batch << " check " << j;
      ASSERT_EQ(fields(got[j].decision), fields(want))
          << spec.name << " batch " << batch << " check " << j << " key " << keys[j] << " cost " << costs[j];
      ++compared;
      denied += want.allowed ? 0 : 1;
    }
  }
  EXPECT_GT(compared, 2000u);
  EXPECT_GT(denied, compared / 10) << "the streams never reached the limits";
  EXPECT_LT(compared - denied, compared * 9 / 10) << "the streams never admitted";
  // 30 batches, up to 3 keys calls each; every single call one each.
  EXPECT_LE(keyed->stats().script_calls, 90u);
  EXPECT_EQ(single->stats().script_calls, compared);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, KeysCalls, ::testing::Range<size_t>(0, keys_specs().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) { return keys_specs()[i.param].name; });

// A key of another type in keys calls: that key gets the error its own
// call gets, every other check the decision single calls in a row give.
TEST(Batch, KeyOfAnotherTypeFailsAloneInAKeysCall) {
  for (const KeysSpec& spec : keys_specs()) {
    std::vector<LimitParams> limits = {spec.limit};
    auto keyed = redis_client(true);
    auto single = redis_client(false);
    const std::string tag = std::string("keys-bad:") + spec.name;
    for (const char* side : {":on:", ":off:"}) server().command({"RPUSH", tag + side + "bad", "x"});
    // 300 checks (three keys calls), each key repeated across them.
    std::vector<std::string> keys;
    for (size_t j = 0; j < 300; ++j)
      keys.push_back(std::vector<std::string>{"a", "b", "bad", "c"}[(j * 7 + j / 3) % 4]);
    std::vector<Request> on;
    for (const std::string& k : keys) on.push_back(keys_request(limits, tag + ":on:" + k, 1, kT0));
    const std::vector<Outcome> got = keyed->backend().evaluate_many(on);
    for (size_t j = 0; j < keys.size(); ++j) {
      const Request alone = keys_request(limits, tag + ":off:" + keys[j], 1, kT0);
      if (keys[j] == "bad") {
        ASSERT_TRUE(got[j].error) << spec.name << " " << j;
        std::string want;
        ErrorCode want_code = ErrorCode::kInternal;
        try {
          single->backend().evaluate(alone);
        } catch (const Error& e) {
          want = e.what();
          want_code = e.code();
        }
        ASSERT_FALSE(want.empty()) << spec.name << ": a single call on a list did not fail";
        try {
          std::rethrow_exception(got[j].error);
        } catch (const Error& e) {
          std::string mine = e.what();
          const std::string on = ":on:", off = ":off:";
          for (size_t at; (at = mine.find(on)) != std::string::npos;) mine.replace(at, on.size(), off);
          EXPECT_EQ(mine, want) << spec.name;
          EXPECT_EQ(e.code(), want_code) << spec.name;
          EXPECT_FALSE(e.outcome_unknown()) << spec.name;
        }
      } else {
        ASSERT_FALSE(got[j].error) << spec.name << " " << j;
        EXPECT_EQ(fields(got[j].decision), fields(single->backend().evaluate(alone))) << spec.name << " " << j;
      }
    }
  }
}

// coalesce off: one call per check, as in 1.0.
TEST(Batch, CoalesceOffSendsOneCallPerCheck) {
  auto client = redis_client(false);
  LimiterOptions o;
  o.limit = {Algorithm::kGcra, 5, 60000};
  o.prefix = "keys-off";
  Limiter l(client, o);
  std::vector<std::string_view> keys = {"a", "b", "c", "a"};
  const uint64_t before = client->stats().script_calls;
  for (const Outcome& r : l.check_many(keys, 1)) ASSERT_FALSE(r.error);
  EXPECT_EQ(client->stats().script_calls - before, 4u);
  auto keyed = redis_client(true);
  Limiter k(keyed, o);
  for (const Outcome& r : k.check_many(keys, 1)) ASSERT_FALSE(r.error);
  EXPECT_EQ(keyed->stats().script_calls, 1u);
}

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
  EXPECT_EQ(
      polylimit_limiter_check_many(l, reinterpret_cast<const void* const*>(k2), l2, 2, 1, out, statuses, nullptr, &err),
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
  EXPECT_EQ(polylimit_limiter_check_many(l, nullptr, nullptr, 0, 1, nullptr, nullptr, nullptr, &err),
            POLYLIMIT_OK);  // nothing to do
  polylimit_limiter_free(l);
  polylimit_client_close(client);
}
