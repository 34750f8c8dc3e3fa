// Leases (LimiterOptions::lease_units): a lease takes lease_units in one
// round trip; caller-seen admissions stay within the documented bound
// (docs/limiter.md, "Leases"); unused units go back on close; a killed
// holder strands at most one lease, which Redis frees with the window.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "polylimit.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_server.h"
#include "util/clock.h"

using namespace polylimit;
using namespace std::chrono_literals;

namespace {

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

LimiterOptions lease_opts(const std::string& prefix, Algorithm alg, int64_t limit, int64_t window_ms,
                          int64_t lease_units, int64_t lease_ms) {
  LimiterOptions o;
  o.limit = {alg, limit, window_ms, 0};
  o.prefix = prefix;
  o.lease_units = lease_units;
  o.lease_ms = lease_ms;
  return o;
}

const Algorithm kAll[] = {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow,
                          Algorithm::kGcra};

int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST(Lease, OptionsAreValidated) {
  auto c = Client::open(server().url());
  auto bad = [&](LimiterOptions o, const char* field) {
    try {
      Limiter l(c, o);
      ADD_FAILURE() << "accepted; expected an error naming " << field;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  bad(lease_opts("lv", Algorithm::kSlidingLog, 10, 1000, 11, 100), "lease_units");
  bad(lease_opts("lv", Algorithm::kSlidingLog, 10, 1000, -1, 100), "lease_units");
  bad(lease_opts("lv", Algorithm::kSlidingLog, 10, 1000, 5, 1001), "lease_ms");
  bad(lease_opts("lv", Algorithm::kSlidingLog, 10, 1000, 5, 0), "lease_ms");
  LimiterOptions blocked = lease_opts("lv", Algorithm::kSlidingLog, 10, 1000, 5, 100);
  blocked.block_ms = 1000;
  bad(blocked, "block_ms");
  // Off: lease_ms is not looked at.
  Limiter off(c, lease_opts("lv", Algorithm::kSlidingLog, 10, 1000, 0, 0));
}

// One round trip takes lease_units; the next lease_units - 1 checks need none.
TEST(Lease, TakesExactlyLeaseUnitsPerLease) {
  for (Algorithm alg : kAll) {
    SCOPED_TRACE(algorithm_name(alg));
    auto c = Client::open(server().url());
    Limiter l(c, lease_opts(std::string("lx-") + algorithm_name(alg), alg, 100, 60000, 10, 60000));
    l.reset("k");
    const Stats s0 = c->stats();
    Decision d = l.check("k");
    ASSERT_TRUE(d.allowed);
    EXPECT_EQ(d.granted, 1);
    EXPECT_EQ(d.remaining, 99);  // 90 in Redis + 9 in the lease
    EXPECT_EQ(l.peek("k").remaining, 90);
    const Stats s1 = c->stats();
    for (int i = 0; i < 9; ++i) ASSERT_TRUE(l.check("k").allowed);
    EXPECT_EQ(c->stats().round_trips, s1.round_trips) << "the lease's units need no round trip";
    EXPECT_EQ(c->stats().leased_units - s0.leased_units, 10u);
    ASSERT_TRUE(l.check("k").allowed);  // a second lease
    EXPECT_EQ(c->stats().leased_units - s0.leased_units, 20u);
    EXPECT_EQ(l.peek("k").remaining, 80);
    // A cost larger than what the lease holds renews it: 9 go back first.
    ASSERT_TRUE(l.check("k", 10).allowed);
    EXPECT_EQ(c->stats().refunded_units - s0.refunded_units, 9u);
    EXPECT_EQ(l.peek("k").remaining, 79);  // 21 used
  }
}

// An expired lease hands out nothing more; the next check gives its unused
// units back before it takes a new lease (client clock stepped by hand).
TEST(Lease, ExpiredLeaseIsRefundedAtRenewal) {
  auto clock = std::make_shared<ManualClock>();
  ClientOptions co;
  co.clock = clock;
  auto c = Client::open(server().url(), co);
  Limiter l(c, lease_opts("le", Algorithm::kSlidingLog, 100, 60000, 10, 100));
  l.reset("k");
  ASSERT_TRUE(l.check("k").allowed);
  clock->advance(std::chrono::milliseconds(99));
  const uint64_t trips = c->stats().round_trips;
  ASSERT_TRUE(l.check("k").allowed);  // still live: no round trip
  EXPECT_EQ(c->stats().round_trips, trips);
  clock->advance(std::chrono::milliseconds(1));  // lease_ms has passed
  ASSERT_TRUE(l.check("k").allowed);
  EXPECT_EQ(c->stats().refunded_units, 8u);
  EXPECT_EQ(c->stats().leased_units, 20u);
  EXPECT_EQ(l.peek("k").remaining, 100 - 2 - 10);
}

// Several limits: a take is all-or-nothing over all of them, so the
// tighter one caps what leases can hand out.
TEST(Lease, SeveralLimits) {
  auto c = Client::open(server().url());
  LimiterOptions o = lease_opts("lm", Algorithm::kSlidingLog, 0, 0, 10, 1000);
  o.limits = {{Algorithm::kSlidingLog, 100, 60000, 0}, {Algorithm::kSlidingLog, 25, 3600000, 0}};
  Limiter l(c, o);
  l.reset("k");
  int admitted = 0;
  for (int i = 0; i < 60; ++i) admitted += l.check("k").allowed ? 1 : 0;
  EXPECT_EQ(admitted, 25);
  Decision p = l.peek("k");
  EXPECT_EQ(p.limit, 25);
  EXPECT_EQ(p.remaining, 0);
}

// Near the limit a lease takes what is free, and a check that does not fit
// is denied with the retry_after of its own cost.
TEST(Lease, PartialLeaseAndDenial) {
  for (Algorithm alg : kAll) {
    SCOPED_TRACE(algorithm_name(alg));
    auto c = Client::open(server().url());
    Limiter l(c, lease_opts(std::string("lp-") + algorithm_name(alg), alg, 25, 60000, 10, 60000));
    l.reset("k");
    int admitted = 0;
    for (int i = 0; i < 40; ++i) admitted += l.check("k").allowed ? 1 : 0;
    EXPECT_EQ(admitted, 25);
    Decision d = l.check("k");
    EXPECT_FALSE(d.allowed);
    EXPECT_GT(d.retry_after_ms, 0);
    EXPECT_EQ(l.peek("k").remaining, 0);
    // A refund makes room at once, whatever denial the lease was sharing.
    l.refund("k", 2);
    EXPECT_TRUE(l.check("k", 2).allowed);
    EXPECT_FALSE(l.check("k").allowed);
  }
}

// Unused units go back when the limiter is destroyed or the client closes.
TEST(Lease, RefundOnCloseReturnsUnusedUnits) {
  for (Algorithm alg : kAll) {
    SCOPED_TRACE(algorithm_name(alg));
    const std::string prefix = std::string("lr-") + algorithm_name(alg);
    auto observer = Client::open(server().url());
    Limiter watch(observer, lease_opts(prefix, alg, 100, 60000, 0, 100));
    watch.reset("k");
    {
      auto c = Client::open(server().url());
      Limiter l(c, lease_opts(prefix, alg, 100, 60000, 30, 60000));
      for (int i = 0; i < 4; ++i) ASSERT_TRUE(l.check("k").allowed);
      EXPECT_EQ(watch.peek("k").remaining, 70);
    }  // destroyed: 26 go back
    EXPECT_EQ(watch.peek("k").remaining, 96);
    {
      auto c = Client::open(server().url());
      Limiter l(c, lease_opts(prefix, alg, 100, 60000, 30, 60000));
      ASSERT_TRUE(l.check("k").allowed);
      EXPECT_EQ(watch.peek("k").remaining, 66);
      c->close();  // the close hook gives 29 back
      EXPECT_EQ(watch.peek("k").remaining, 95);
      EXPECT_EQ(c->stats().refunded_units, 29u);
      EXPECT_EQ(c->stats().stranded_units, 0u);
    }
  }
}

// A limiter holding leases on many keys gives them back in one pipelined
// round trip when it goes, not one round trip per key.
TEST(Lease, ManyLeasesGoBackInOneRoundTrip) {
  auto observer = Client::open(server().url());
  Limiter watch(observer, lease_opts("lm", Algorithm::kGcra, 100, 60000, 0, 100));
  auto c = Client::open(server().url());
  constexpr int kKeys = 300;
  uint64_t trips = 0;
  {
    Limiter l(c, lease_opts("lm", Algorithm::kGcra, 100, 60000, 10, 60000));
    for (int k = 0; k < kKeys; ++k) {
      l.reset("k" + std::to_string(k));
      ASSERT_TRUE(l.check("k" + std::to_string(k)).allowed);
    }
    EXPECT_EQ(watch.peek("k7").remaining, 90);
    trips = c->stats().round_trips;
  }  // destroyed: 9 units of each key go back
  EXPECT_EQ(c->stats().round_trips, trips + 1);
  EXPECT_EQ(c->stats().refunded_units, 9u * kKeys);
  EXPECT_EQ(c->stats().stranded_units, 0u);
  for (int k : {0, 7, kKeys - 1}) EXPECT_EQ(watch.peek("k" + std::to_string(k)).remaining, 99) << k;
}

// reset() drops the local lease too: the next check takes a new one.
TEST(Lease, ResetDropsTheLease) {
  auto c = Client::open(server().url());
  Limiter l(c, lease_opts("lz", Algorithm::kSlidingLog, 100, 60000, 10, 60000));
  l.reset("k");
  ASSERT_TRUE(l.check("k").allowed);
  l.reset("k");
  EXPECT_EQ(l.peek("k").remaining, 100);
  ASSERT_TRUE(l.check("k").allowed);
  EXPECT_EQ(l.peek("k").remaining, 90);
}

// check_async takes and renews leases as check() does (the blocking leased
// check, on a library thread) and answers from a live lease at once, without
// a round trip.
TEST(Lease, CheckAsyncTakesAndUsesTheLease) {
  auto c = Client::open(server().url());
  auto l = std::make_shared<Limiter>(c, lease_opts("la", Algorithm::kSlidingLog, 100, 60000, 10, 60000));
  l->reset("k");
  auto async_check = [&] {
    std::promise<Decision> p;
    Limiter::check_async(l, "k", 1, [&](const Decision& d, std::exception_ptr e) {
      if (e)
        p.set_exception(e);
      else
        p.set_value(d);
    });
    return p.get_future().get();
  };
  Decision first = async_check();  // takes a lease of 10
  EXPECT_TRUE(first.allowed);
  EXPECT_EQ(first.remaining, 99);
  EXPECT_EQ(l->peek("k").remaining, 90);
  uint64_t trips = c->stats().round_trips;
  for (int i = 0; i < 9; ++i) EXPECT_TRUE(async_check().allowed);
  EXPECT_EQ(c->stats().round_trips, trips);
  EXPECT_TRUE(async_check().allowed);  // the lease is used up: renewed
  EXPECT_EQ(c->stats().round_trips, trips + 1);
  EXPECT_EQ(l->peek("k").remaining, 80);
  EXPECT_EQ(c->stats().leased_units, 20u);
  // A cost above lease_units never fits a lease: an ordinary check.
  trips = c->stats().round_trips;
  std::promise<Decision> big;
  Limiter::check_async(l, "k", 11, [&](const Decision& d, std::exception_ptr) { big.set_value(d); });
  EXPECT_EQ(big.get_future().get().granted, 11);
  EXPECT_EQ(c->stats().round_trips, trips + 1);
  EXPECT_EQ(c->stats().leased_units, 20u);
}

// A holder killed with SIGKILL strands at most its lease; Redis frees the
// units when the window moves past them.
TEST(Lease, KilledHolderStrandsAtMostOneLease) {
  const std::string url = server().url();
  auto c = Client::open(url);
  Limiter watch(c, lease_opts("lk", Algorithm::kSlidingLog, 50, 1500, 0, 100));
  watch.reset("k");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    char ok = 'n';
    try {
      auto cc = Client::open(url);
      Limiter l(cc, lease_opts("lk", Algorithm::kSlidingLog, 50, 1500, 20, 1500));
      for (int i = 0; i < 3; ++i) ok = l.check("k").allowed ? ok : 'f';
      if (ok == 'n') ok = 'y';
    } catch (...) {
    }
    // The limiter above has gone (and refunded): take one more lease, then wait to be killed.
    auto cc = Client::open(url);
    auto* l = new Limiter(cc, lease_opts("lk", Algorithm::kSlidingLog, 50, 1500, 20, 1500));
    if (!l->check("k").allowed) ok = 'f';
    (void)!::write(fds[1], &ok, 1);
    ::pause();
    ::_exit(0);
  }
  ::close(fds[1]);
  char ok = 0;
  ASSERT_EQ(::read(fds[0], &ok, 1), 1);
  ::close(fds[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(ok, 'y');
  // 3 used by the first limiter (17 refunded), 20 stranded by the killed one.
  EXPECT_EQ(watch.peek("k").remaining, 50 - 3 - 20);
  std::this_thread::sleep_for(1700ms);
  EXPECT_EQ(watch.peek("k").remaining, 50);
}

// The C ABI: version 4 of polylimit_limiter_options carries the lease
// options (lease_ms 0: the default); a version 3 struct has none.
TEST(Lease, CApiVersion4) {
  polylimit_client* client = nullptr;
  ASSERT_EQ(polylimit_client_open(server().url().c_str(), nullptr, &client, nullptr), POLYLIMIT_OK);
  polylimit_limiter_options o = POLYLIMIT_LIMITER_OPTIONS_INIT;
  EXPECT_EQ(o.version, 4u);
  o.limit = 100;
  o.window_ms = 60000;
  o.prefix = "lcapi";
  o.lease_units = 10;
  polylimit_limiter* l = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_OK) << err.message;
  ASSERT_EQ(polylimit_limiter_reset(l, "k", 1, nullptr), POLYLIMIT_OK);
  polylimit_decision d;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
    EXPECT_TRUE(d.allowed);
  }
  ASSERT_EQ(polylimit_limiter_peek(l, "k", 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.remaining, 90);
  polylimit_limiter_free(l);  // the last handle: the limiter goes and refunds 7
  polylimit_stats st = POLYLIMIT_STATS_INIT;
  EXPECT_EQ(st.version, 2u);
  ASSERT_EQ(polylimit_client_stats(client, &st, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(st.leased_units, 10u);
  EXPECT_EQ(st.refunded_units, 7u);
  EXPECT_EQ(st.stranded_units, 0u);
  // A version 1 caller's struct ends with the histogram: nothing after it is written.
  struct {
    polylimit_stats s;
    unsigned char canary;
  } v1;
  std::memset(&v1, 0xAB, sizeof v1);
  v1.s.version = 1;
  ASSERT_EQ(polylimit_client_stats(client, &v1.s, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(v1.s.checks, 3u);
  const unsigned char* tail = reinterpret_cast<const unsigned char*>(&v1.s) + offsetof(polylimit_stats, leased_units);
  for (size_t i = 0; i < sizeof v1 - offsetof(polylimit_stats, leased_units); ++i) ASSERT_EQ(tail[i], 0xAB) << i;
  polylimit_limiter* v3 = nullptr;
  polylimit_limiter_options old = o;
  old.version = 3;
  old.lease_ms = 1;  // beyond a version 3 struct: not read
  ASSERT_EQ(polylimit_limiter_new(client, &old, &v3, &err), POLYLIMIT_OK) << err.message;
  ASSERT_EQ(polylimit_limiter_peek(v3, "k", 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.remaining, 97);
  ASSERT_EQ(polylimit_limiter_check(v3, "k", 1, 1, &d, nullptr), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_peek(v3, "k", 1, &d, nullptr), POLYLIMIT_OK);
  EXPECT_EQ(d.remaining, 96);  // no lease
  o.lease_units = 101;
  EXPECT_EQ(polylimit_limiter_new(client, &o, &l, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("lease_units"), std::string::npos) << err.message;
  polylimit_limiter_free(v3);
  polylimit_client_close(client);
}

namespace {

struct Expect {
  int64_t over;   // most admissions in any window of length W
  int64_t under;  // least admissions in the first window under steady demand
};

// Several limiters (lease holders) with threads each hammer one key for
// `duration`; returns every admission's caller-seen time (steady us).
// `in_flight` 0: blocking checks; else each thread keeps that many
// check_async calls in flight (submits them, then waits for all). `leased`:
// where to add the units the holders leased.
std::vector<int64_t> hammer(const std::string& prefix, Algorithm alg, int64_t limit, int64_t window_ms,
                            int64_t lease_units, int64_t lease_ms, int holders, int threads_per_holder,
                            std::chrono::milliseconds duration, int in_flight = 0, uint64_t* leased = nullptr) {
  std::vector<std::shared_ptr<Client>> clients;
  std::vector<std::shared_ptr<Limiter>> limiters;
  for (int h = 0; h < holders; ++h) {
    clients.push_back(Client::open(server().url()));
    limiters.push_back(
        std::make_shared<Limiter>(clients.back(), lease_opts(prefix, alg, limit, window_ms, lease_units, lease_ms)));
  }
  limiters[0]->reset("hot");
  std::mutex mu;
  std::vector<int64_t> times;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int h = 0; h < holders; ++h)
    for (int t = 0; t < threads_per_holder; ++t)
      threads.emplace_back([&, h] {
        std::vector<int64_t> mine;
        while (!stop.load()) {
          if (in_flight == 0) {
            Decision d = limiters[h]->check("hot");
            if (d.allowed)
              mine.push_back(steady_us());
            else
              std::this_thread::sleep_for(200us);
            continue;
          }
          std::vector<std::promise<Decision>> p(static_cast<size_t>(in_flight));
          for (auto& one : p)
            Limiter::check_async(limiters[h], "hot", 1, [&one](const Decision& d, std::exception_ptr e) {
              if (e)
                one.set_exception(e);
              else
                one.set_value(d);
            });
          bool denied = false;
          for (auto& one : p) {
            Decision d = one.get_future().get();
            if (d.allowed) mine.push_back(steady_us());
            denied = denied || !d.allowed;
          }
          if (denied) std::this_thread::sleep_for(200us);
        }
        std::lock_guard<std::mutex> lock(mu);
        times.insert(times.end(), mine.begin(), mine.end());
      });
  std::this_thread::sleep_for(duration);
  stop = true;
  for (auto& t : threads) t.join();
  if (leased != nullptr)
    for (auto& c : clients) *leased += c->stats().leased_units;
  std::sort(times.begin(), times.end());
  return times;
}

// The most admissions in any window [a, a + w_us) (a at an admission).
int64_t max_in_window(const std::vector<int64_t>& t, int64_t w_us) {
  int64_t best = 0;
  for (size_t i = 0, j = 0; i < t.size(); ++i) {
    while (j < t.size() && t[j] < t[i] + w_us) ++j;
    best = std::max<int64_t>(best, static_cast<int64_t>(j - i));
  }
  return best;
}

}  // namespace

// 4 threads on each of 2 limiters: in every window the admissions callers
// see stay within limit + holders * lease_units (sliding log; the other
// algorithms: their own bound over any window plus the same term), and the
// first window admits at least limit - holders * lease_units.
TEST(Lease, ConcurrentAdmissionsStayWithinTheBound) {
  constexpr int64_t kLimit = 200, kWindowMs = 1000, kLease = 20, kLeaseMs = 100;
  constexpr int kHolders = 2;
  // Caller-seen times are taken after the reply: a unit the server stamped
  // just before a window can be seen just inside it. The slack absorbs that
  // measurement error (ms on a loaded machine), not a looser bound.
  constexpr int64_t kSlackUs = 20000;
  for (Algorithm alg : kAll) {
    SCOPED_TRACE(algorithm_name(alg));
    // docs/limiter.md, "The over-admission bound", any window of length W:
    // sliding log limit + H * lease; fixed window and sliding counter twice
    // that (two aligned windows); GCRA burst + limit + H * lease.
    const int64_t over = alg == Algorithm::kSlidingLog ? kLimit + kHolders * kLease
                         : alg == Algorithm::kGcra     ? 2 * kLimit + kHolders * kLease
                                                       : 2 * (kLimit + kHolders * kLease);
    const Expect b{over, kLimit - kHolders * kLease};
    auto t =
        hammer(std::string("lc-") + algorithm_name(alg), alg, kLimit, kWindowMs, kLease, kLeaseMs, kHolders, 4, 2600ms);
    ASSERT_FALSE(t.empty());
    const int64_t most = max_in_window(t, kWindowMs * 1000 - kSlackUs);
    EXPECT_LE(most, b.over);
    int64_t first = 0;
    for (int64_t x : t) first += x < t.front() + kWindowMs * 1000 ? 1 : 0;
    EXPECT_GE(first, b.under);
    std::printf("  %s: %zu admitted, most in a window %lld (bound %lld), first window %lld (at least %lld)\n",
                algorithm_name(alg), t.size(), static_cast<long long>(most), static_cast<long long>(b.over),
                static_cast<long long>(first), static_cast<long long>(b.under));
  }
}

// The same bound with check_async: 2 limiters, 2 threads each keeping 8 calls
// in flight, so that renewals run on library threads while other calls of
// the key wait for them (sliding log: the exact bound).
TEST(Lease, ConcurrentAsyncAdmissionsStayWithinTheBound) {
  constexpr int64_t kLimit = 200, kWindowMs = 1000, kLease = 20, kLeaseMs = 100, kSlackUs = 20000;
  constexpr int kHolders = 2;
  uint64_t leased = 0;
  auto t = hammer("lca", Algorithm::kSlidingLog, kLimit, kWindowMs, kLease, kLeaseMs, kHolders, 2, 2600ms, 8, &leased);
  ASSERT_FALSE(t.empty());
  EXPECT_GE(leased, t.size() / 2);  // most admissions came from leases
  const int64_t most = max_in_window(t, kWindowMs * 1000 - kSlackUs);
  EXPECT_LE(most, kLimit + kHolders * kLease);
  int64_t first = 0;
  for (int64_t x : t) first += x < t.front() + kWindowMs * 1000 ? 1 : 0;
  EXPECT_GE(first, kLimit - kHolders * kLease);
  std::printf(
      "  async: %zu admitted (%llu units leased), most in a window %lld (bound %lld), first window %lld (at least %lld)\n",
      t.size(), static_cast<unsigned long long>(leased), static_cast<long long>(most),
      static_cast<long long>(kLimit + kHolders * kLease), static_cast<long long>(first),
      static_cast<long long>(kLimit - kHolders * kLease));
}
