// coalesce_test.cpp - checks of one key that wait behind a call of it go out
// as one script call (core/src/backend/coalescer.h, core/scripts/common/prelude.lua),
// and decide exactly as separate calls one after another would: against
// memory:// and against a client that does not coalesce, on real
// redis-server processes, for all four algorithms, mixed costs, multi-limit
// specs and punitive blocks; through the non-blocking path, the blocking
// path and check_many; and failures fail every coalesced check alike.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <future>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "backend/coalescer.h"
#include "backend/memory_backend.h"
#include "backend/redis_backend.h"
#include "polylimit.h"
#include "polylimit/client.h"
#include "polylimit/limiter.h"
#include "polylimit/reactor.h"
#include "redis_server.h"

using namespace polylimit;

namespace {

constexpr int64_t kT0 = 1700000000000000;

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

std::shared_ptr<Client> redis_client(bool coalesce, int command_timeout_ms = 5000) {
  ClientOptions o;
  o.coalesce = coalesce;
  o.pool.size = 2;
  o.pool.command_timeout_ms = command_timeout_ms;
  return Client::open(server().url(), o);
}

using Fields = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t>;
Fields fields(const Decision& d) {
  return {d.allowed, d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms, d.granted};
}
std::string text(const Decision& d) {
  return std::string(d.allowed ? "admit" : "deny") + " limit=" + std::to_string(d.limit) +
         " remaining=" + std::to_string(d.remaining) + " retry=" + std::to_string(d.retry_after_ms) +
         " reset=" + std::to_string(d.reset_after_ms) + " granted=" + std::to_string(d.granted);
}

struct Spec {
  const char* name;
  std::vector<LimitParams> limits;
  int64_t block_us = 0;
  bool grows = false;  // the limit triples half-way (the sliding log re-reads a smaller ring)
};

std::vector<Spec> specs() {
  return {
      {"sliding_log", {LimitParams{Algorithm::kSlidingLog, 40, 20000}}},
      {"sliding_log_big", {LimitParams{Algorithm::kSlidingLog, 400, 60000}}},
      {"sliding_log_grows", {LimitParams{Algorithm::kSlidingLog, 30, 20000}}, 0, true},
      {"sliding_log_multi",
       {LimitParams{Algorithm::kSlidingLog, 30, 20000}, LimitParams{Algorithm::kSlidingLog, 50, 60000}}},
      {"fixed_window", {LimitParams{Algorithm::kFixedWindow, 40, 20000}}},
      {"fixed_window_block", {LimitParams{Algorithm::kFixedWindow, 25, 20000}}, 30000000},
      {"sliding_counter", {LimitParams{Algorithm::kSlidingCounter, 40, 20000}}},
      {"sliding_counter_multi",
       {LimitParams{Algorithm::kSlidingCounter, 30, 20000}, LimitParams{Algorithm::kSlidingCounter, 60, 60000}}},
      {"gcra", {LimitParams{Algorithm::kGcra, 40, 20000}}},
      {"gcra_burst_block", {LimitParams{Algorithm::kGcra, 40, 20000, 10}}, 25000000},
  };
}

Request make_request(const Spec& s, const std::string& key, int64_t cost, int64_t now_us) {
  Request r;
  r.op = Op::kCheck;
  r.limits = &s.limits;
  for (size_t i = 0; i < s.limits.size(); ++i) r.keys.push_back(key + (i ? ":" + std::to_string(i) : ""));
  r.cost = cost;
  r.now_us = now_us;
  if (s.block_us > 0) {
    r.block_us = s.block_us;
    r.block_key = key + ":block";
  }
  return r;
}

// Submits `requests` on the non-blocking path, back to back; each future
// gets its check's outcome.
std::vector<std::future<Outcome>> submit_all(Client& client, const std::vector<Request>& requests) {
  std::vector<std::future<Outcome>> out;
  for (const Request& rq : requests) {
    auto promise = std::make_shared<std::promise<Outcome>>();
    out.push_back(promise->get_future());
    client.backend().evaluate_async(rq, [promise](Outcome o) { promise->set_value(std::move(o)); });
  }
  return out;
}

class CoalesceStreams : public ::testing::TestWithParam<size_t> {};

// Bursts of checks submitted back to back on the non-blocking path, each
// burst at one instant: the first goes alone, the rest queue behind it and
// go together, in order. Every decision must be the one memory:// and an
// uncoalesced client give for the same sequence.
TEST_P(CoalesceStreams, BurstsDecideAsMemoryAndAsSeparateCalls) {
  Spec spec = specs()[GetParam()];
  int64_t min_capacity = spec.limits[0].capacity();
  for (const LimitParams& p : spec.limits) min_capacity = std::min(min_capacity, p.capacity());
  auto on = redis_client(true);
  auto off = redis_client(false);
  MemoryBackend memory([] { return kT0; });
  std::mt19937_64 rng(GetParam() * 7919 + 1);
  const std::string tag = std::string("co:") + spec.name + ":" + std::to_string(rng());
  int64_t now = kT0;
  size_t compared = 0;
  for (int burst = 0; burst < 40; ++burst) {
    now += static_cast<int64_t>(rng() % 1500000);  // up to 1.5 s between bursts
    if (spec.grows && burst == 20) spec.limits[0].limit *= 3;
    const size_t n = 1 + rng() % 60;
    std::vector<int64_t> costs(n);
    // Up to the capacity, as Limiter allows (a larger cost goes alone).
    for (auto& c : costs) c = 1 + static_cast<int64_t>(rng() % (rng() % 4 == 0 ? min_capacity : 3));
    std::vector<Request> requests;
    for (size_t j = 0; j < n; ++j) requests.push_back(make_request(spec, tag + ":on", costs[j], now));
    auto futures = submit_all(*on, requests);
    for (size_t j = 0; j < n; ++j) {
      Outcome got = futures[j].get();
      ASSERT_FALSE(got.error) << "burst " << burst << " check " << j;
      const Decision want = memory.evaluate(make_request(spec, tag, costs[j], now));
      const Decision separate = off->backend().evaluate(make_request(spec, tag + ":off", costs[j], now));
      ASSERT_EQ(fields(got.decision), fields(separate)) << spec.name << " burst " << burst << " check " << j;
      ++compared;
      ASSERT_EQ(fields(got.decision), fields(want))
          << spec.name << " burst " << burst << " check " << j << " cost " << costs[j] << ": coalesced "
          << text(got.decision) << ", memory " << text(want);
      ASSERT_EQ(fields(separate), fields(want)) << spec.name << " burst " << burst << " check " << j;
    }
  }
  EXPECT_GT(compared, 400u);
  const Stats s = on->stats();
  EXPECT_GT(s.coalesced, compared / 2) << "the bursts were not coalesced";
  EXPECT_LT(s.script_calls, compared / 2);
  EXPECT_EQ(off->stats().coalesced, 0u);
  EXPECT_EQ(off->stats().script_calls, compared);
}

// Bursts on many keys at one instant on the non-blocking path: the first
// checks go out alone (RedisBackend::kLaneCalls of one limit at a time), the
// others lead their key and wait in the limit's lane or queue behind their
// key's call, and go out in keys calls and coalesced calls. In submission
// order, every decision is the one memory:// and single calls give.
TEST_P(CoalesceStreams, BurstsOnManyKeysDecideAsMemoryAndAsSeparateCalls) {
  Spec spec = specs()[GetParam()];
  int64_t min_capacity = spec.limits[0].capacity();
  for (const LimitParams& p : spec.limits) min_capacity = std::min(min_capacity, p.capacity());
  auto on = redis_client(true);
  auto off = redis_client(false);
  MemoryBackend memory([] { return kT0; });
  std::mt19937_64 rng(GetParam() * 6151 + 5);
  const std::string tag = std::string("co-keys:") + spec.name + ":" + std::to_string(rng());
  int64_t now = kT0;
  size_t compared = 0;
  for (int burst = 0; burst < 25; ++burst) {
    now += static_cast<int64_t>(rng() % 3000000);
    if (spec.grows && burst == 12) spec.limits[0].limit *= 3;
    const size_t n = 1 + rng() % 200;
    const size_t keys = 1 + rng() % 40;
    std::vector<std::string> key(n);
    std::vector<int64_t> costs(n);
    for (size_t j = 0; j < n; ++j) {
      key[j] = std::to_string(rng() % keys);
      costs[j] = 1 + static_cast<int64_t>(rng() % (rng() % 4 == 0 ? min_capacity : 3));
    }
    std::vector<Request> requests;
    for (size_t j = 0; j < n; ++j) requests.push_back(make_request(spec, tag + ":on:" + key[j], costs[j], now));
    auto futures = submit_all(*on, requests);
    for (size_t j = 0; j < n; ++j) {
      Outcome got = futures[j].get();
      ASSERT_FALSE(got.error) << "burst " << burst << " check " << j;
      const Decision want = memory.evaluate(make_request(spec, tag + ":" + key[j], costs[j], now));
      const Decision separate = off->backend().evaluate(make_request(spec, tag + ":off:" + key[j], costs[j], now));
      ASSERT_EQ(fields(separate), fields(want)) << spec.name << " burst " << burst << " check " << j;
      ASSERT_EQ(fields(got.decision), fields(want))
          << spec.name << " burst " << burst << " check " << j << " key " << key[j] << " cost " << costs[j];
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000u);
  // Fewer calls than checks. (How many fewer depends on how many calls were
  // in flight, which a slow build changes; ManyKeysShareKeysCalls counts.)
  EXPECT_LT(on->stats().script_calls, compared) << spec.name;
  EXPECT_EQ(off->stats().script_calls, compared);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, CoalesceStreams, ::testing::Range<size_t>(0, specs().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) { return specs()[i.param].name; });

// check_many: a key repeated in one batch is decided in the batch's order,
// and a key with a call in flight (here a burst on the non-blocking path)
// waits for it: the decisions are those of the whole sequence in a row.
TEST(Coalesce, CheckManyDecidesInOrderBehindCallsInFlight) {
  const Spec spec = specs()[4];  // fixed window, 40
  auto on = redis_client(true);
  MemoryBackend memory([] { return kT0; });
  std::vector<Request> burst;
  for (int j = 0; j < 10; ++j) burst.push_back(make_request(spec, "co:many:hot", 1, kT0));
  auto futures = submit_all(*on, burst);
  std::vector<Request> batch;
  for (int j = 0; j < 30; ++j) {
    const std::string key = j % 3 == 2 ? "other" : "hot";
    batch.push_back(make_request(spec, "co:many:" + key, 1 + j % 4, kT0));
  }
  std::vector<Outcome> got = on->backend().evaluate_many(batch);
  for (int j = 0; j < 10; ++j) {
    Outcome o = futures[j].get();
    ASSERT_FALSE(o.error);
    EXPECT_EQ(fields(o.decision), fields(memory.evaluate(burst[j]))) << "burst " << j;
  }
  ASSERT_EQ(got.size(), batch.size());
  for (size_t j = 0; j < batch.size(); ++j) {
    ASSERT_FALSE(got[j].error) << j;
    EXPECT_EQ(fields(got[j].decision), fields(memory.evaluate(batch[j]))) << "check " << j;
  }
  EXPECT_GT(on->stats().coalesced, 0u);
}

// Submits `requests` on the non-blocking path while `own` is paused: the
// ones past the bound fail at once with kPoolExhausted ("queue full"), and
// they must be `refused`; the queued ones are decided once it resumes.
void expect_bounded_queue(Client& client, pltest::RedisServer& own, const std::vector<Request>& requests,
                          size_t refused) {
  own.pause();
  std::atomic<size_t> completed{0}, decided{0};
  size_t got_refused = 0;
  for (const Request& rq : requests) {
    try {
      client.backend().evaluate_async(rq, [&](Outcome r) {
        if (!r.error) decided.fetch_add(1);
        completed.fetch_add(1);
      });
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPoolExhausted);
      EXPECT_NE(std::string(e.what()).find("queue full"), std::string::npos) << e.what();
      ++got_refused;
    }
  }
  EXPECT_EQ(got_refused, refused);
  own.resume();
  const size_t queued = requests.size() - got_refused;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (completed.load() < queued && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(completed.load(), queued);
  EXPECT_EQ(decided.load(), queued);
}

std::shared_ptr<Client> one_connection(const pltest::RedisServer& own) {
  ClientOptions o;
  o.pool.size = 1;
  o.pool.command_timeout_ms = 60000;  // far above the submits' time, under ThreadSanitizer too
  return Client::open(own.url(), o);
}

// A key's queue is bounded, as a connection's is: past it a check fails at
// once with kPoolExhausted; the queued ones complete once the server answers.
TEST(Coalesce, FullKeyQueueIsAClearError) {
  pltest::RedisServer own;
  auto client = one_connection(own);
  const Spec spec = specs()[4];
  client->backend().evaluate(make_request(spec, "q", 1, kT0));  // connected, script loaded
  const size_t n = Coalescer::kMaxWaiting + 100;
  // One in flight, the bound queued.
  expect_bounded_queue(*client, own, std::vector<Request>(n, make_request(spec, "q", 1, kT0)), 99);
}

// Many threads checking one key at one instant: whatever the order the
// threads get, the decisions are those of that many checks in a row.
TEST(Coalesce, ThreadsAtOneInstantGetTheSerialDecisions) {
  auto client = redis_client(true);
  LimiterOptions lo;
  lo.limit.algorithm = Algorithm::kSlidingLog;
  lo.limit.limit = 500;
  lo.limit.window_ms = 60000;
  lo.prefix = "co-inst";
  Limiter limiter(client, lo);
  limiter.reset("k");
  constexpr int kThreads = 32, kEach = 25;
  std::vector<std::vector<Decision>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) seen[t].push_back(limiter.check_at("k", 1, kT0));
    });
  for (auto& t : threads) t.join();
  std::multiset<Fields> got, want;
  for (auto& v : seen)
    for (auto& d : v) got.insert(fields(d));
  auto mem = Client::open("memory://", [] {
    ClientOptions o;
    o.memory_clock = [] { return kT0; };
    return o;
  }());
  Limiter serial(mem, lo);
  for (int i = 0; i < kThreads * kEach; ++i) want.insert(fields(serial.check_at("k", 1, kT0)));
  EXPECT_TRUE(got == want);
  EXPECT_GT(client->stats().coalesced, 0u);
}

// The hot-key hammer: 64 threads, one key, the server's clock: exactly the
// limit is admitted, in far fewer script calls than checks.
TEST(Coalesce, HotKeyHammerAdmitsExactlyTheLimit) {
  for (Algorithm a : {Algorithm::kSlidingLog, Algorithm::kFixedWindow, Algorithm::kSlidingCounter, Algorithm::kGcra}) {
    auto client = redis_client(true);
    LimiterOptions lo;
    lo.limit.algorithm = a;
    lo.limit.limit = 2000;
    lo.limit.window_ms = 3600000;  // nothing leaves the window during the test
    lo.prefix = "co-hammer";
    Limiter limiter(client, lo);
    limiter.reset("k");
    std::atomic<int64_t> admitted{0}, denied{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 64; ++t)
      threads.emplace_back([&] {
        int64_t seen_denied = 0;
        while (seen_denied < 5) {
          Decision d = limiter.check("k");
          if (d.allowed)
            admitted.fetch_add(1);
          else
            ++seen_denied, denied.fetch_add(1);
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(admitted.load(), 2000) << algorithm_name(a);
    const Stats s = client->stats();
    const uint64_t checks = static_cast<uint64_t>(admitted.load() + denied.load());
    EXPECT_GT(s.coalesced, checks / 2) << algorithm_name(a);
    EXPECT_LT(s.script_calls * 4, checks) << algorithm_name(a) << ": " << s.script_calls << " calls for " << checks;
  }
}

// A coalesced call that fails fails each of its checks with the same error.
TEST(Coalesce, AFailedCallFailsEveryCheckInIt) {
  auto client = redis_client(true);
  Spec spec = specs()[0];
  // A value that is not a sliding log ring: the script refuses it.
  {
    auto plain = redis_client(false);
    Request probe = make_request(spec, "co:bad", 1, kT0);
    plain->backend().evaluate(probe);  // creates the ring
  }
  pltest::RedisServer& s = server();
  ASSERT_EQ(s.command({"SET", "co:bad", "not a ring"}), "OK");
  const size_t n = 20;
  std::vector<Request> requests;
  for (size_t j = 0; j < n; ++j) requests.push_back(make_request(spec, "co:bad", 1, kT0));
  auto futures = submit_all(*client, requests);
  std::string first;
  for (size_t j = 0; j < n; ++j) {
    Outcome o = futures[j].get();
    ASSERT_TRUE(o.error) << j;
    try {
      std::rethrow_exception(o.error);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kScript) << e.what();
      if (j == 1) first = e.what();
      if (j > 1) EXPECT_EQ(first, e.what());
    }
  }
  EXPECT_GT(client->stats().coalesced, 0u);
}

// A paused server: every check of a hot key times out, the leader's and
// those queued behind it. The queued ones fail with the leader's timeout,
// unsent (known outcome): nobody waits for two calls.
TEST(Coalesce, PausedServerTimesOutEveryCheck) {
  auto client = redis_client(true, 300);
  LimiterOptions lo;
  lo.limit.limit = 1000;
  lo.limit.window_ms = 60000;
  lo.prefix = "co-pause";
  Limiter limiter(client, lo);
  limiter.check("k");  // connected, script loaded
  server().pause();
  std::atomic<int> errors{0}, decisions{0}, unknown{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&] {
      try {
        limiter.check("k");
        decisions.fetch_add(1);
      } catch (const Error& e) {
        errors.fetch_add(1);
        if (e.outcome_unknown()) unknown.fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();
  const auto took = std::chrono::steady_clock::now() - start;
  server().resume();
  EXPECT_EQ(decisions.load(), 0);
  EXPECT_EQ(errors.load(), 16);
  EXPECT_GE(unknown.load(), 1);   // the call that was sent
  EXPECT_LT(unknown.load(), 16);  // the others were not
  EXPECT_LT(took, std::chrono::milliseconds(3 * 300 + 500)) << "a check waited for more than one call";
}

// A client of `own` whose calls wait up to a minute (the server is paused
// while checks are submitted), connected and with `spec`'s script loaded
// (one check of `warm_key`).
std::shared_ptr<Client> warm_patient_client(const pltest::RedisServer& own, const Spec& spec,
                                            const std::string& warm_key) {
  ClientOptions o;
  o.pool.command_timeout_ms = 60000;
  auto client = Client::open(own.url(), o);
  client->backend().evaluate(make_request(spec, warm_key, 1, kT0));
  return client;
}

// Lanes: checks of one limit on many keys, one each, on the non-blocking
// path. Only kLaneCalls go out alone; the rest go in keys calls. (Submitted
// while the server is paused, so that none completes meanwhile however
// slow the build: the rest then wait in the lane, and go in 128s.)
TEST(Coalesce, ManyKeysShareKeysCalls) {
  pltest::RedisServer own;
  const Spec spec = specs()[8];  // GCRA, 40
  auto client = warm_patient_client(own, spec, "co-lane:warm");
  const uint64_t before = client->stats().script_calls;
  MemoryBackend memory([] { return kT0; });
  const size_t n = 300;
  std::vector<Request> requests;
  for (size_t j = 0; j < n; ++j) requests.push_back(make_request(spec, "co-lane:" + std::to_string(j), 1 + j % 5, kT0));
  own.pause();
  auto futures = submit_all(*client, requests);
  own.resume();
  for (size_t j = 0; j < n; ++j) {
    Outcome o = futures[j].get();
    ASSERT_FALSE(o.error) << j;
    EXPECT_EQ(fields(o.decision), fields(memory.evaluate(requests[j]))) << j;
  }
  const Stats st = client->stats();
  EXPECT_EQ(st.coalesced, 0u);  // no key twice
  // kLaneCalls alone, then the rest in keys calls of at most 128.
  const size_t lane = static_cast<size_t>(RedisBackend::kLaneCalls);
  EXPECT_EQ(st.script_calls - before, lane + (n - lane + 127) / 128) << "keys calls";
}

// Lanes and an event loop's turn: a check that finds every call of its
// lane in flight waits for one of them only while their replies are on
// their way. When they are in but unread (the loop that reads them is busy
// submitting), the check goes at once, on a call of its own, so the server
// is not left idle until the loop comes back; with the server stopped it
// waits, and goes in a keys call once a reply is read; so does it when
// another thread drove the set last (one of several threads may read the
// replies at once). Decisions as memory's.
TEST(Coalesce, LaneChecksWaitOnlyForRepliesOnTheirWay) {
  pltest::RedisServer own;
  const Spec spec = specs()[8];  // GCRA, 40
  auto client = warm_patient_client(own, spec, "co-unread:warm");
  MemoryBackend memory([] { return kT0; });
  std::shared_ptr<Reactor> reactor = Reactor::make();
  Reactor::Scope scope(reactor);  // checks submitted here are read by drive() below, as a loop's
  std::vector<Request> requests;
  std::vector<std::future<Outcome>> futures;
  auto submit = [&](const std::string& key) {
    requests.push_back(make_request(spec, "co-unread:" + key, 1 + requests.size() % 3, kT0));
    auto more = submit_all(*client, {requests.back()});
    futures.push_back(std::move(more[0]));
  };
  auto calls = [&] { return client->stats().script_calls; };
  auto read_all = [&] {
    for (std::future<Outcome>& f : futures)
      while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) reactor->drive(10);
  };
  const size_t lane = static_cast<size_t>(RedisBackend::kLaneCalls);
  reactor->drive(0);  // this thread reads the set, as a loop's thread does

  uint64_t before = calls();
  for (size_t j = 0; j < lane; ++j) submit("a" + std::to_string(j));
  ASSERT_EQ(calls() - before, lane);
  // Their replies arrive; nobody reads them (the set is readable then).
  pollfd in{reactor->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&in, 1, 10000), 1) << "no reply arrived";
  submit("a-late");
  EXPECT_EQ(calls() - before, lane + 1) << "a check waited behind replies that were in";
  submit("a-later");
  EXPECT_EQ(calls() - before, lane + 2);
  read_all();

  before = calls();
  own.pause();
  for (size_t j = 0; j < lane; ++j) submit("b" + std::to_string(j));
  submit("b-late");
  EXPECT_EQ(calls() - before, lane) << "a check went while the lane's replies were on their way";
  own.resume();
  read_all();
  EXPECT_EQ(calls() - before, lane + 1) << "the waiting check went in a keys call";

  // A look that found nothing stands for the next kLookEvery - 1 checks of
  // the turn: they wait even once the replies are in, and the look after
  // them finds the replies and sends them, with itself, in one keys call.
  before = calls();
  own.pause();
  for (size_t j = 0; j < lane; ++j) submit("d" + std::to_string(j));
  submit("d-late0");  // looks: nothing is in
  own.resume();
  ASSERT_EQ(::poll(&in, 1, 10000), 1) << "no reply arrived";
  for (uint32_t k = 1; k < Reactor::kLookEvery; ++k) submit("d-late" + std::to_string(k));
  EXPECT_EQ(calls() - before, lane) << "a check looked again right after a look that found nothing";
  submit("d-look");
  EXPECT_EQ(calls() - before, lane + 1) << "the next look did not send the waiting checks";
  read_all();
  EXPECT_EQ(calls() - before, lane + 1);

  std::thread([&] { reactor->drive(0); }).join();  // another thread drove the set last
  before = calls();
  for (size_t j = 0; j < lane; ++j) submit("c" + std::to_string(j));
  ASSERT_EQ(::poll(&in, 1, 10000), 1) << "no reply arrived";
  submit("c-late");
  EXPECT_EQ(calls() - before, lane) << "a check went while another thread may read the replies";
  read_all();
  EXPECT_EQ(calls() - before, lane + 1);

  for (size_t i = 0; i < requests.size(); ++i) {
    Outcome out = futures[i].get();
    ASSERT_FALSE(out.error) << i;
    EXPECT_EQ(text(out.decision), text(memory.evaluate(requests[i]))) << i;
  }
}

// Lanes at many instants (an explicit time is part of a lane's limit): more
// lanes than are kept idle, each with checks waiting, twice over (the second
// round finds some lanes kept from the first, with their keys calls' shape).
// Every decision is memory's, and each lane's waiting checks go in one keys
// call.
TEST(Coalesce, LanesAtManyInstantsDecideAsMemory) {
  pltest::RedisServer own;
  const Spec spec = specs()[8];  // GCRA, 40
  auto client = warm_patient_client(own, spec, "co-instants:warm");
  MemoryBackend memory([] { return kT0; });
  const size_t instants = RedisBackend::kIdleLanes + 36;
  const size_t per_lane = RedisBackend::kLaneCalls + 3;
  for (int round = 0; round < 2; ++round) {
    const uint64_t before = client->stats().script_calls;
    std::vector<Request> requests;
    for (size_t t = 0; t < instants; ++t)
      for (size_t j = 0; j < per_lane; ++j)
        requests.push_back(make_request(spec, "co-instants:" + std::to_string(j), 1 + (t + j) % 3,
                                        kT0 + static_cast<int64_t>(t) * 7000));
    own.pause();
    auto futures = submit_all(*client, requests);
    own.resume();
    for (size_t i = 0; i < requests.size(); ++i) {
      Outcome out = futures[i].get();
      ASSERT_FALSE(out.error) << round << " " << i;
      EXPECT_EQ(text(out.decision), text(memory.evaluate(requests[i]))) << round << " " << i;
    }
    // Per lane: kLaneCalls alone, the rest in one keys call.
    EXPECT_EQ(client->stats().script_calls - before, instants * (RedisBackend::kLaneCalls + 1)) << round;
  }
}

// The coalescer keeps the entries of keys that went idle and gives them to
// other keys: the key it returns is the new one's, and a kept entry's key
// has no call in flight.
TEST(Coalesce, KeptEntriesServeOtherKeys) {
  Coalescer c;
  auto never = [](Coalescer::Batch&) { ADD_FAILURE() << "queued"; };
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back(std::string(i % 7 == 0 ? 300 : 20, 'k') + std::to_string(i));
  for (int pass = 0; pass < 2; ++pass) {
    for (const std::string& k : keys) {
      const std::string* lead = c.join(k, never);
      ASSERT_NE(lead, nullptr) << k;
      EXPECT_EQ(*lead, k);
      // A second check of the key waits, and goes in the next call.
      bool queued = false;
      EXPECT_EQ(c.join(k,
                       [&](Coalescer::Batch& b) {
                         queued = true;
                         b.waiters.push_back({3, nullptr, nullptr, {}, nullptr});
                       }),
                nullptr);
      EXPECT_TRUE(queued);
      std::unique_ptr<Coalescer::Batch> b = c.next(*lead);
      ASSERT_TRUE(b) << k;
      ASSERT_EQ(b->waiters.size(), 1u);
      EXPECT_EQ(b->waiters[0].cost, 3);
      EXPECT_FALSE(c.next(k)) << k;  // none waits: the key is idle again
    }
  }
}

// A lane's queue is bounded, as a key's is: past it a check fails at once
// with kPoolExhausted; the waiting ones complete once the server answers.
TEST(Coalesce, FullLaneIsAClearError) {
  pltest::RedisServer own;
  auto client = one_connection(own);
  const Spec spec = specs()[4];
  client->backend().evaluate(make_request(spec, "lane-full:warm", 1, kT0));  // connected, script loaded
  const size_t n = Coalescer::kMaxWaiting + RedisBackend::kLaneCalls + 100;
  std::vector<Request> requests;
  for (size_t j = 0; j < n; ++j) requests.push_back(make_request(spec, "lane-full:" + std::to_string(j), 1, kT0));
  expect_bounded_queue(*client, own, requests, 100);  // the lane's calls in flight, the bound waiting
}

// A key of another type among the checks of a keys call: that check gets
// the error its own call gets (its keys call answers that it failed, and it
// goes again alone); the others their decisions.
TEST(Coalesce, KeyOfAnotherTypeInALaneFailsAlone) {
  auto on = redis_client(true);
  auto off = redis_client(false);
  for (const size_t which : {size_t{0}, size_t{4}, size_t{8}}) {  // sliding log, fixed window, GCRA
    const Spec spec = specs()[which];
    const std::string tag = std::string("co-lane-bad:") + spec.name;
    for (const char* side : {":on:", ":off:"}) ASSERT_EQ(server().integer({"RPUSH", tag + side + "7", "x"}), 1);
    const size_t n = 20;
    std::vector<Request> requests;
    for (size_t j = 0; j < n; ++j) requests.push_back(make_request(spec, tag + ":on:" + std::to_string(j), 2, kT0));
    auto futures = submit_all(*on, requests);
    for (size_t j = 0; j < n; ++j) {
      Outcome got = futures[j].get();
      const Request alone = make_request(spec, tag + ":off:" + std::to_string(j), 2, kT0);
      if (j != 7) {
        ASSERT_FALSE(got.error) << spec.name << " " << j;
        EXPECT_EQ(fields(got.decision), fields(off->backend().evaluate(alone))) << spec.name << " " << j;
        continue;
      }
      ASSERT_TRUE(got.error) << spec.name;
      std::string want, mine;
      try {
        off->backend().evaluate(alone);
      } catch (const Error& e) {
        want = e.what();
      }
      try {
        std::rethrow_exception(got.error);
      } catch (const Error& e) {
        mine = e.what();
        EXPECT_FALSE(e.outcome_unknown());
      }
      for (size_t at; (at = mine.find(":on:")) != std::string::npos;) mine.replace(at, 4, ":off:");
      EXPECT_FALSE(want.empty()) << spec.name;
      EXPECT_EQ(mine, want) << spec.name;
    }
  }
}

// A paused server: the checks waiting in a lane fail with the timeout of
// the call before them, unsent: none waits for two calls.
TEST(Coalesce, PausedServerFailsTheLaneOnce) {
  auto client = redis_client(true, 300);
  const Spec spec = specs()[4];                                                  // fixed window
  client->backend().evaluate(make_request(spec, "co-lane-pause:warm", 1, kT0));  // connected, script loaded
  server().pause();
  const size_t n = 64;
  std::vector<Request> requests;
  for (size_t j = 0; j < n; ++j) requests.push_back(make_request(spec, "co-lane-pause:" + std::to_string(j), 1, kT0));
  const auto start = std::chrono::steady_clock::now();
  auto futures = submit_all(*client, requests);
  int unknown = 0;
  for (size_t j = 0; j < n; ++j) {
    Outcome o = futures[j].get();
    ASSERT_TRUE(o.error) << j;
    try {
      std::rethrow_exception(o.error);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
      if (e.outcome_unknown()) ++unknown;
    }
  }
  const auto took = std::chrono::steady_clock::now() - start;
  server().resume();
  EXPECT_GE(unknown, 1);                         // the calls that were sent
  EXPECT_LE(unknown, RedisBackend::kLaneCalls);  // the waiting ones were not
  EXPECT_LT(took, std::chrono::milliseconds(300 + 500)) << "a check waited for more than one call";
}

}  // namespace

namespace {

// The C ABI's switch: polylimit_client_options.no_coalescing (version 3).
// 16 threads on one key: with coalescing far fewer round trips than checks,
// without it exactly one per check; exact either way.
TEST(Coalesce, CApiSwitch) {
  for (int off : {0, 1}) {
    polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
    co.no_coalescing = off;
    polylimit_client* client = nullptr;
    polylimit_error err;
    ASSERT_EQ(polylimit_client_open(server().url().c_str(), &co, &client, &err), POLYLIMIT_OK) << err.message;
    polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
    lo.limit = 800;
    lo.window_ms = 3600000;
    const std::string prefix = "co-capi-" + std::to_string(off);
    lo.prefix = prefix.c_str();
    polylimit_limiter* limiter = nullptr;
    ASSERT_EQ(polylimit_limiter_new(client, &lo, &limiter, &err), POLYLIMIT_OK) << err.message;
    polylimit_limiter_reset(limiter, "k", 1, &err);
    std::atomic<long> admitted{0}, checks{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 60; ++i) {
          polylimit_decision d;
          polylimit_error e;
          ASSERT_EQ(polylimit_limiter_check(limiter, "k", 1, 1, &d, &e), POLYLIMIT_OK) << e.message;
          admitted += d.allowed;
          ++checks;
        }
      });
    for (auto& t : threads) t.join();
    polylimit_stats s = POLYLIMIT_STATS_INIT;
    ASSERT_EQ(polylimit_client_stats(client, &s, &err), POLYLIMIT_OK);
    EXPECT_EQ(admitted.load(), 800);
    if (off) {
      EXPECT_EQ(s.round_trips, static_cast<uint64_t>(checks.load()) + 1);  // + the reset
      EXPECT_EQ(s.script_calls, static_cast<uint64_t>(checks.load()));
      EXPECT_EQ(s.coalesced, 0u);
    } else {
      EXPECT_LT(s.round_trips * 2, static_cast<uint64_t>(checks.load()));
      EXPECT_LT(s.script_calls * 2, static_cast<uint64_t>(checks.load()));
      EXPECT_GT(s.coalesced, static_cast<uint64_t>(checks.load()) / 2);
    }
    // A version-1 caller's struct ends before the counters of version 2.
    unsigned char raw[sizeof(polylimit_stats)];
    std::memset(raw, 0xAB, sizeof raw);
    polylimit_stats* v1 = reinterpret_cast<polylimit_stats*>(raw);
    v1->version = 1;
    ASSERT_EQ(polylimit_client_stats(client, v1, &err), POLYLIMIT_OK) << err.message;
    EXPECT_EQ(v1->checks, s.checks);
    for (size_t i = offsetof(polylimit_stats, script_calls); i < sizeof raw; ++i) ASSERT_EQ(raw[i], 0xAB) << i;
    polylimit_stats v3 = POLYLIMIT_STATS_INIT;
    v3.version = 3;
    EXPECT_EQ(polylimit_client_stats(client, &v3, &err), POLYLIMIT_EINVALID);
    polylimit_limiter_free(limiter);
    polylimit_client_close(client);
  }
  polylimit_client_options v2;
  ASSERT_EQ(polylimit_client_options_init(&v2, 2), POLYLIMIT_OK);  // a version-2 caller: coalescing on
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server().url().c_str(), &v2, &client, nullptr), POLYLIMIT_OK);
  polylimit_client_close(client);
}

}  // namespace

namespace {

// check_many waits for its queued keys one after another, so it never runs
// a batch's call for them (Latch::can_lead): threads checking the same hot
// keys in opposite orders, each queued behind the others' calls, complete
// without errors or stalls, and exactly.
TEST(Coalesce, CheckManyInOppositeOrdersDoesNotStall) {
  auto client = redis_client(true, 2000);
  LimiterOptions lo;
  lo.limit.limit = 1000000;
  lo.limit.window_ms = 3600000;
  lo.prefix = "co-order";
  Limiter limiter(client, lo);
  limiter.reset("a");
  limiter.reset("b");
  std::atomic<long> errors{0}, admitted{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::string_view> keys =
          t % 2 ? std::vector<std::string_view>{"a", "b", "a"} : std::vector<std::string_view>{"b", "a", "b"};
      for (int i = 0; i < 100; ++i)
        for (const Outcome& o : limiter.check_many(keys)) {
          if (o.error)
            ++errors;
          else
            admitted += o.decision.allowed;
        }
    });
  for (auto& t : threads) t.join();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(admitted.load(), 8 * 100 * 3);
  EXPECT_EQ(limiter.peek("a").remaining + limiter.peek("b").remaining, 2 * 1000000 - 8 * 100 * 3);
  EXPECT_LT(took, std::chrono::seconds(2)) << "a check_many waited for another's batch";
}

}  // namespace
