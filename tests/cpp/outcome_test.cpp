// Unknown outcome: an error after a command was sent says so
// (Error::outcome_unknown, polylimit_error.outcome_unknown), because the
// server may have run the script and consumed units; an error before the send
// does not. Checked against a refused port, a proxy that swallows the request,
// and a CLIENT KILL storm whose stored state is read back afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fault_proxy.h"
#include "polylimit.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_server.h"
#include "short_timeouts.h"

using namespace polylimit;
using namespace std::chrono;

namespace {

using pltest::client_for;
using pltest::kTimeoutMs;
using pltest::limiter;

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

// The Error a call throws; a call that does not throw fails the test.
Error error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorCode::kInternal, "no error");
}

// C ABI handles for `url`, freed on destruction.
struct CHandles {
  polylimit_client* client = nullptr;
  polylimit_limiter* limiter = nullptr;
  explicit CHandles(const std::string& url, const char* prefix) {
    polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
    co.pool_size = 1;
    co.command_timeout_ms = kTimeoutMs;
    co.connect_timeout_ms = kTimeoutMs;
    polylimit_error err;
    EXPECT_EQ(polylimit_client_open(url.c_str(), &co, &client, &err), POLYLIMIT_OK) << err.message;
    polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
    lo.limit = 10;
    lo.window_ms = 600000;
    lo.prefix = prefix;
    EXPECT_EQ(polylimit_limiter_new(client, &lo, &limiter, &err), POLYLIMIT_OK) << err.message;
  }
  ~CHandles() {
    polylimit_limiter_free(limiter);
    polylimit_client_close(client);
  }
  int check(const char* key, polylimit_error* err) {
    polylimit_decision d;
    return polylimit_limiter_check(limiter, key, std::strlen(key), 1, &d, err);
  }
  int check_many(const std::vector<std::string>& keys, std::vector<int>& statuses,
                 std::vector<polylimit_error>& key_errors, polylimit_error* err) {
    std::vector<const void*> ptrs;
    std::vector<size_t> lens;
    for (const auto& k : keys) {
      ptrs.push_back(k.data());
      lens.push_back(k.size());
    }
    std::vector<polylimit_decision> out(keys.size());
    statuses.assign(keys.size(), -1);
    key_errors.assign(keys.size(), polylimit_error{});
    return polylimit_limiter_check_many(limiter, ptrs.data(), lens.data(), keys.size(), 1, out.data(), statuses.data(),
                                        key_errors.data(), err);
  }
};

}  // namespace

TEST(Outcome, TheFieldTakesTheFirstReservedSlot) {
  static_assert(sizeof(polylimit_error) == 272, "polylimit_error changed size");
  EXPECT_EQ(offsetof(polylimit_error, outcome_unknown), 8u);
  polylimit_error err;
  std::memset(&err, 0xff, sizeof err);
  polylimit_error_clear(&err);
  EXPECT_EQ(err.outcome_unknown, 0);
}

// Nothing listens: the call fails before anything is sent.
TEST(Outcome, ConnectRefusedIsKnown) {
  const std::string url = "redis://127.0.0.1:" + std::to_string(pltest::free_port());
  Limiter l = limiter(client_for(url), "refused");
  Error e = error_of([&] { l.check("k"); });
  EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  EXPECT_FALSE(e.outcome_unknown()) << e.what();

  CHandles c(url, "refused");
  polylimit_error err;
  std::memset(&err, 0xff, sizeof err);
  EXPECT_EQ(c.check("k", &err), POLYLIMIT_EUNAVAILABLE) << err.message;
  EXPECT_EQ(err.outcome_unknown, 0) << err.message;
  std::vector<int> statuses;
  std::vector<polylimit_error> key_errors;
  EXPECT_EQ(c.check_many({"a", "b"}, statuses, key_errors, &err), POLYLIMIT_EUNAVAILABLE);
  EXPECT_EQ(err.outcome_unknown, 0);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(statuses[i], POLYLIMIT_EUNAVAILABLE);
    EXPECT_EQ(key_errors[i].outcome_unknown, 0) << i;
  }
}

// A proxy that swallows everything from the first byte: the connect
// handshake (CONFIG GET, before any script call) times out, so nothing of
// the caller's was sent and the timeout has a known outcome.
TEST(Outcome, ATimeoutBeforeTheSendIsKnown) {
  pltest::FaultProxy proxy(server().port());
  proxy.set(pltest::FaultProxy::Mode::kBlackhole);
  Limiter l = limiter(client_for(proxy.url()), "early");
  Error e = error_of([&] { l.check("k"); });
  EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
  EXPECT_FALSE(e.outcome_unknown()) << e.what();
}

// Connected and warm, then the proxy swallows the request and its reply: the
// script call was sent, so the timeout may have consumed units.
TEST(Outcome, ABlackholedReplyIsATimeoutWithUnknownOutcome) {
  pltest::FaultProxy proxy(server().port());
  Limiter l = limiter(client_for(proxy.url()), "blackhole");
  ASSERT_TRUE(l.check("warm").allowed);
  proxy.set(pltest::FaultProxy::Mode::kBlackhole);
  Error e = error_of([&] { l.check("k"); });
  EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
  EXPECT_TRUE(e.outcome_unknown()) << e.what();

  // The same through the C ABI, for one call and for every key of a batch.
  proxy.set(pltest::FaultProxy::Mode::kPass);
  CHandles c(proxy.url(), "blackhole-c");
  polylimit_error err;
  ASSERT_EQ(c.check("warm", &err), POLYLIMIT_OK) << err.message;
  proxy.set(pltest::FaultProxy::Mode::kBlackhole);
  EXPECT_EQ(c.check("k", &err), POLYLIMIT_ETIMEOUT) << err.message;
  EXPECT_EQ(err.outcome_unknown, 1) << err.message;

  proxy.set(pltest::FaultProxy::Mode::kPass);
  std::vector<int> statuses;
  std::vector<polylimit_error> key_errors;
  ASSERT_EQ(c.check_many({"warm"}, statuses, key_errors, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(key_errors[0].outcome_unknown, 0);
  proxy.set(pltest::FaultProxy::Mode::kBlackhole);
  EXPECT_EQ(c.check_many({"a", "b", "c"}, statuses, key_errors, &err), POLYLIMIT_ETIMEOUT) << err.message;
  EXPECT_EQ(err.outcome_unknown, 1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(statuses[i], POLYLIMIT_ETIMEOUT) << i;
    EXPECT_EQ(key_errors[i].outcome_unknown, 1) << i;
  }
}

// An error reply is an answer: the script did not run, the outcome is known.
TEST(Outcome, AnErrorReplyIsKnown) {
  Limiter l = limiter(client_for(server().url()), "wrongtype");
  server().command({"SET", l.storage_key("k"), "not a ring"});
  Error e = error_of([&] { l.check("k"); });
  EXPECT_EQ(e.code(), ErrorCode::kScript) << e.what();
  EXPECT_FALSE(e.outcome_unknown()) << e.what();
}

// Threads check (single calls and batches) while another thread kills every
// normal client again and again. Afterwards the stored rings, read through
// a separate connection, hold every admitted unit plus at most one unit per
// error with an unknown outcome: errors with a known outcome consumed nothing.
TEST(Outcome, ClientKillStormConsumesOnlyThroughUnknownOutcomes) {
  constexpr int kThreads = 4;
  constexpr int kBatch = 4;
  const std::string prefix = "storm";
  auto client = client_for(server().url(), 2, 2000);
  Limiter l = limiter(client, prefix, 1000000);  // never denies
  std::vector<std::string> keys;
  for (int t = 0; t < kThreads; ++t)
    for (int k = 0; k < kBatch; ++k) keys.push_back("t" + std::to_string(t) + "k" + std::to_string(k));

  std::atomic<long> admitted{0}, denied{0}, unknown{0}, known{0}, calls{0}, kills{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto count_error = [&](const Error& e) { (e.outcome_unknown() ? unknown : known).fetch_add(1); };
      for (long i = 0; !stop.load(); ++i) {
        calls.fetch_add(1);
        if (t % 2 == 1 && i % 2 == 1) {  // a batch of this thread's keys
          std::vector<std::string_view> batch;
          for (int k = 0; k < kBatch; ++k) batch.push_back(keys[static_cast<size_t>(t * kBatch + k)]);
          for (const Outcome& o : l.check_many(batch)) {
            if (!o.error) {
              (o.decision.allowed ? admitted : denied).fetch_add(1);
              continue;
            }
            try {
              std::rethrow_exception(o.error);
            } catch (const Error& e) {
              count_error(e);
            }
          }
          continue;
        }
        try {
          (l.check(keys[static_cast<size_t>(t * kBatch + i % kBatch)]).allowed ? admitted : denied).fetch_add(1);
        } catch (const Error& e) {
          count_error(e);
        }
      }
    });
  }
  // Kill, then wait until the checkers are back at work (a few more calls
  // admitted) before the next kill; until enough kills landed on calls in
  // flight, or a time limit.
  const auto limit = steady_clock::now() + seconds(30);
  while (steady_clock::now() < limit && !(unknown.load() >= 100 && kills.load() >= 200)) {
    server().command({"CLIENT", "KILL", "TYPE", "normal"});
    kills.fetch_add(1);
    const long resume_at = admitted.load() + 20;
    const auto give_up = steady_clock::now() + milliseconds(500);
    while (admitted.load() < resume_at && steady_clock::now() < give_up) std::this_thread::yield();
  }
  stop.store(true);
  for (auto& th : threads) th.join();

  long long stored = 0;
  for (const std::string& k : keys) stored += server().integer(pltest::ring_units(l.storage_key(k)));
  std::printf(
      "CLIENT KILL storm: %ld kills, %ld calls; %ld units admitted, %lld stored; errors: %ld with an unknown "
      "outcome, %ld with a known outcome; %lld of the unknown ones consumed\n",
      kills.load(), calls.load(), admitted.load(), stored, unknown.load(), known.load(), stored - admitted.load());
  EXPECT_EQ(denied.load(), 0);
  EXPECT_GT(unknown.load(), 0) << "no kill hit a call in flight";
  EXPECT_GE(stored - admitted.load(), 0) << "an admitted unit is missing";
  EXPECT_LE(stored - admitted.load(), unknown.load()) << "an error with a known outcome consumed units";

  // The client recovers once the storm ends.
  EXPECT_TRUE(l.check("after").allowed);
}
