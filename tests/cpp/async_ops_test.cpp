// async_ops_test.cpp - the non-blocking forms of every limiter call
// (polylimit_limiter_submit_peek, _check_at_most, _check_limit, _refund,
// _reset, _acquire, _check_many) against real redis-server processes: each
// answers as its blocking form, fails at once on a closed client, completes
// after its limiter is freed, and stays exact with many calls in flight.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "polylimit.h"
#include "redis_cluster.h"
#include "redis_server.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

struct Handles {
  polylimit_client* client = nullptr;
  polylimit_limiter* limiter = nullptr;
  polylimit_queue* queue = nullptr;
  ~Handles() {
    polylimit_limiter_free(limiter);
    polylimit_client_close(client);
    polylimit_queue_free(queue);
  }
};

polylimit_limiter* make_limiter(polylimit_client* client, const std::string& prefix, int64_t limit,
                                int64_t window_ms = 600000, int algorithm = POLYLIMIT_ALG_SLIDING_LOG,
                                int policy = POLYLIMIT_FAIL_ERROR) {
  polylimit_error err;
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.limit = limit;
  lo.window_ms = window_ms;
  lo.algorithm = algorithm;
  lo.failure_policy = policy;
  lo.prefix = prefix.c_str();
  polylimit_limiter* l = nullptr;
  EXPECT_EQ(polylimit_limiter_new(client, &lo, &l, &err), POLYLIMIT_OK) << err.message;
  return l;
}

void open(Handles& h, const std::string& url, const std::string& prefix, int64_t limit, int timeout_ms = 0) {
  polylimit_error err;
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  co.command_timeout_ms = timeout_ms;
  ASSERT_EQ(polylimit_client_open(url.c_str(), &co, &h.client, &err), POLYLIMIT_OK) << err.message;
  h.limiter = make_limiter(h.client, prefix, limit);
  ASSERT_NE(h.limiter, nullptr);
  ASSERT_EQ(polylimit_queue_new(&h.queue, &err), POLYLIMIT_OK) << err.message;
}

// Polls until `n` completions arrived or `within` passed.
std::vector<polylimit_completion> collect(polylimit_queue* q, size_t n, std::chrono::milliseconds within) {
  std::vector<polylimit_completion> got;
  const auto deadline = Clock::now() + within;
  polylimit_completion buf[64];
  while (got.size() < n && Clock::now() < deadline) {
    size_t k = polylimit_queue_poll(q, buf, 64, 50);
    got.insert(got.end(), buf, buf + k);
  }
  return got;
}

// The one completion of a call just submitted.
polylimit_completion one(polylimit_queue* q, uint64_t token) {
  std::vector<polylimit_completion> got = collect(q, 1, 5s);
  EXPECT_EQ(got.size(), 1u);
  if (got.empty()) {
    polylimit_completion none{};
    none.status = -999;
    return none;
  }
  EXPECT_EQ(got[0].token, token);
  return got[0];
}

// Times differ between two calls made a few milliseconds apart: compare
// them loosely, everything else exactly.
void expect_same(const polylimit_decision& a, const polylimit_decision& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.allowed, b.allowed);
  EXPECT_EQ(a.cached, b.cached);
  EXPECT_EQ(a.degraded, b.degraded);
  EXPECT_EQ(a.shadowed, b.shadowed);
  EXPECT_EQ(a.limit, b.limit);
  EXPECT_EQ(a.remaining, b.remaining);
  EXPECT_EQ(a.granted, b.granted);
  EXPECT_NEAR(double(a.retry_after_ms), double(b.retry_after_ms), 2000.0);
  EXPECT_NEAR(double(a.reset_after_ms), double(b.reset_after_ms), 2000.0);
}

// One call in both forms: `blocking` fills a decision and returns a status;
// `submit` queues the same call with the token.
struct Op {
  std::string name;
  std::function<int(polylimit_limiter*, polylimit_decision*, polylimit_error*)> blocking;
  std::function<int(polylimit_limiter*, polylimit_queue*, uint64_t, polylimit_error*)> submit;
};

// `key` is a string literal: the calls keep pointing at it.
std::vector<Op> sequence(const char* key) {
  const void* k = key;
  const size_t n = std::strlen(key);
  return {
      {"check_limit 3 of 20",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_check_limit(l, k, n, 3, 20, 600000, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_check_limit(l, k, n, 3, 20, 600000, q, t, e);
       }},
      {"peek",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_peek(l, k, n, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_peek(l, k, n, q, t, e);
       }},
      {"check_at_most 100",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_check_at_most(l, k, n, 100, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_check_at_most(l, k, n, 100, q, t, e);
       }},
      {"check_at_most when full",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_check_at_most(l, k, n, 2, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_check_at_most(l, k, n, 2, q, t, e);
       }},
      {"acquire, denied within a short timeout",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_acquire(l, k, n, 1, 50, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_acquire(l, k, n, 1, 50, q, t, e);
       }},
      {"refund 4",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_refund(l, k, n, 4, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_refund(l, k, n, 4, q, t, e);
       }},
      {"acquire 3, admitted at once",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_acquire(l, k, n, 3, 1000, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_acquire(l, k, n, 3, 1000, q, t, e);
       }},
      {"check_limit over the per-call limit",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_check_limit(l, k, n, 1, 5, 600000, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_check_limit(l, k, n, 1, 5, 600000, q, t, e);
       }},
      {"reset",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_reset(l, k, n, e) == POLYLIMIT_OK ? polylimit_limiter_peek(l, k, n, d, e) : e->code;
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_reset(l, k, n, q, t, e);
       }},
      {"peek after reset",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_peek(l, k, n, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_peek(l, k, n, q, t, e);
       }},
      {"bad units",
       [=](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
         return polylimit_limiter_refund(l, k, n, 0, d, e);
       },
       [=](polylimit_limiter* l, polylimit_queue* q, uint64_t t, polylimit_error* e) {
         return polylimit_limiter_submit_refund(l, k, n, 0, q, t, e);
       }},
  };
}

// Two limiters with their own keys run the same sequence, one blocking and
// one non-blocking: every step answers the same.
void same_as_blocking(const std::string& url, const std::string& tag) {
  for (int algorithm : {POLYLIMIT_ALG_SLIDING_LOG, POLYLIMIT_ALG_FIXED_WINDOW, POLYLIMIT_ALG_GCRA}) {
    SCOPED_TRACE("algorithm " + std::to_string(algorithm));
    Handles h;
    open(h, url, "ops-eq", 10);
    const std::string p = tag + "-" + std::to_string(algorithm);
    polylimit_limiter* blocking = make_limiter(h.client, p + "-b", 10, 600000, algorithm);
    polylimit_limiter* async = make_limiter(h.client, p + "-a", 10, 600000, algorithm);
    uint64_t token = 100;
    for (const Op& op : sequence("user:1")) {
      polylimit_decision want;
      polylimit_error want_err, got_err;
      int want_status = op.blocking(blocking, &want, &want_err);
      int rc = op.submit(async, h.queue, ++token, &got_err);
      if (want_status == POLYLIMIT_EINVALID) {  // bad arguments fail the submit itself
        EXPECT_EQ(rc, POLYLIMIT_EINVALID) << op.name;
        EXPECT_STREQ(got_err.message, want_err.message) << op.name;
        continue;
      }
      ASSERT_EQ(rc, POLYLIMIT_OK) << op.name << ": " << got_err.message;
      polylimit_completion c = one(h.queue, token);
      ASSERT_EQ(c.status, want_status) << op.name << ": " << c.error.message;
      if (op.name == "reset") {  // nothing to compare but that it cleared: the next step peeks
        polylimit_decision zero{};
        EXPECT_EQ(std::memcmp(&c.decision, &zero, sizeof zero), 0);
        continue;
      }
      expect_same(want, c.decision, op.name);
    }
    EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
    polylimit_limiter_free(blocking);
    polylimit_limiter_free(async);
  }
}

TEST(AsyncOps, EachCallAnswersAsItsBlockingForm) { same_as_blocking(server().url(), "ops-eq"); }

// Cluster: the same answers (the first call of a client and reset go through
// a library thread there), and a batch over many slots admits as the
// blocking one does.
TEST(AsyncOps, ClusterAnswersAsTheBlockingForms) {
  pltest::RedisCluster cluster(3, 0);
  same_as_blocking(cluster.url(), "ops-cluster");
  Handles h;
  open(h, cluster.url(), "ops-cluster-many", 2);
  polylimit_limiter* async = make_limiter(h.client, "ops-cluster-many-a", 2);
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) names.push_back("user:" + std::to_string(i % 20));  // each key three times
  std::vector<const void*> keys;
  std::vector<size_t> lens;
  for (const auto& n : names) {
    keys.push_back(n.data());
    lens.push_back(n.size());
  }
  std::vector<polylimit_decision> want(names.size()), got(names.size());
  std::vector<int> want_st(names.size()), got_st(names.size(), -1);
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_check_many(h.limiter, keys.data(), lens.data(), names.size(), 1, want.data(),
                                         want_st.data(), nullptr, &err),
            POLYLIMIT_OK)
      << err.message;
  ASSERT_EQ(polylimit_limiter_submit_check_many(async, keys.data(), lens.data(), names.size(), 1, got.data(),
                                                got_st.data(), nullptr, h.queue, 5, &err),
            POLYLIMIT_OK)
      << err.message;
  polylimit_completion c = one(h.queue, 5);
  ASSERT_EQ(c.status, POLYLIMIT_OK) << c.error.message;
  int want_admitted = 0, got_admitted = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(got_st[i], POLYLIMIT_OK);
    want_admitted += want[i].allowed;
    got_admitted += got[i].allowed;
  }
  EXPECT_EQ(want_admitted, 40);  // two of each key's three
  EXPECT_EQ(got_admitted, want_admitted);
  polylimit_limiter_free(async);
}

TEST(AsyncOps, CheckManyFillsTheArraysAsTheBlockingForm) {
  Handles h;
  open(h, server().url(), "ops-many", 3);
  polylimit_limiter* blocking = make_limiter(h.client, "ops-many-b", 3);
  polylimit_limiter* async = make_limiter(h.client, "ops-many-a", 3);
  // Repeated keys (the fourth "a" is denied) and a NULL key (at [5]).
  std::vector<std::string> names = {"a", "b", "a", "a", "a", "", "c"};
  std::vector<const void*> keys;
  std::vector<size_t> lens;
  for (const auto& s : names) {
    keys.push_back(s.data());
    lens.push_back(s.size());
  }
  keys[5] = nullptr;
  lens[5] = 4;
  const size_t n = names.size();
  std::vector<polylimit_decision> want(n), got(n);
  std::vector<int> want_st(n), got_st(n, 12345);
  std::vector<polylimit_error> want_ke(n), got_ke(n);
  polylimit_error want_err, got_err;
  int want_rc = polylimit_limiter_check_many(blocking, keys.data(), lens.data(), n, 1, want.data(), want_st.data(),
                                             want_ke.data(), &want_err);
  ASSERT_EQ(polylimit_limiter_submit_check_many(async, keys.data(), lens.data(), n, 1, got.data(), got_st.data(),
                                                got_ke.data(), h.queue, 77, &got_err),
            POLYLIMIT_OK)
      << got_err.message;
  polylimit_completion c = one(h.queue, 77);
  EXPECT_EQ(want_rc, POLYLIMIT_EINVALID);
  EXPECT_EQ(c.status, want_rc);
  EXPECT_STREQ(c.error.message, want_err.message);
  EXPECT_STREQ(c.error.message, "keys[5]: key is NULL");
  int admitted = 0;
  for (size_t i = 0; i < n; ++i) {
    SCOPED_TRACE("key " + std::to_string(i));
    EXPECT_EQ(got_st[i], want_st[i]);
    EXPECT_STREQ(got_ke[i].message, want_ke[i].message);
    if (want_st[i] == POLYLIMIT_OK) expect_same(want[i], got[i], "check_many");
    admitted += got[i].allowed;
  }
  EXPECT_EQ(admitted, 5);  // three of the four "a" (a limit of 3), "b" and "c"
  EXPECT_EQ(got_st[6], POLYLIMIT_OK);

  // n = 0 completes once; a bad cost fails the submit and fills the statuses.
  ASSERT_EQ(polylimit_limiter_submit_check_many(async, nullptr, nullptr, 0, 1, nullptr, nullptr, nullptr, h.queue, 78,
                                                &got_err),
            POLYLIMIT_OK);
  EXPECT_EQ(one(h.queue, 78).status, POLYLIMIT_OK);
  std::fill(got_st.begin(), got_st.end(), 0);
  EXPECT_EQ(polylimit_limiter_submit_check_many(async, keys.data(), lens.data(), n, 0, got.data(), got_st.data(),
                                                nullptr, h.queue, 79, &got_err),
            POLYLIMIT_EINVALID);
  EXPECT_EQ(got_st[0], POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
  polylimit_limiter_free(blocking);
  polylimit_limiter_free(async);
}

// Every submit on a closed client fails at once and queues nothing.
TEST(AsyncOps, ClosedClientFailsEverySubmit) {
  Handles h;
  open(h, server().url(), "ops-closed", 10);
  polylimit_client_close(h.client);
  h.client = nullptr;
  polylimit_limiter* l = h.limiter;
  polylimit_queue* q = h.queue;
  polylimit_error e;
  EXPECT_EQ(polylimit_limiter_submit_peek(l, "k", 1, q, 1, &e), POLYLIMIT_ECLOSED);
  EXPECT_EQ(polylimit_limiter_submit_check_at_most(l, "k", 1, 2, q, 1, &e), POLYLIMIT_ECLOSED);
  EXPECT_EQ(polylimit_limiter_submit_check_limit(l, "k", 1, 1, 5, 1000, q, 1, &e), POLYLIMIT_ECLOSED);
  EXPECT_EQ(polylimit_limiter_submit_refund(l, "k", 1, 1, q, 1, &e), POLYLIMIT_ECLOSED);
  EXPECT_EQ(polylimit_limiter_submit_reset(l, "k", 1, q, 1, &e), POLYLIMIT_ECLOSED);
  EXPECT_EQ(polylimit_limiter_submit_acquire(l, "k", 1, 1, 1000, q, 1, &e), POLYLIMIT_ECLOSED);
  EXPECT_STREQ(e.message, "the client is closed");
  const void* keys[2] = {"a", "b"};
  size_t lens[2] = {1, 1};
  polylimit_decision out[2];
  int st[2] = {0, 0};
  EXPECT_EQ(polylimit_limiter_submit_check_many(l, keys, lens, 2, 1, out, st, nullptr, q, 1, &e), POLYLIMIT_ECLOSED);
  EXPECT_EQ(st[0], POLYLIMIT_ECLOSED);
  EXPECT_EQ(st[1], POLYLIMIT_ECLOSED);
  EXPECT_EQ(polylimit_queue_outstanding(q), 0u);
  polylimit_completion c;
  EXPECT_EQ(polylimit_queue_poll(q, &c, 1, 0), 0u);
}

// A frozen server: every call is in flight (an acquire waits on the timer
// for a full key), the limiter is freed, the client closed; each completes
// once, promptly, with POLYLIMIT_ECLOSED, and check_many's arrays say so.
TEST(AsyncOps, FreedLimiterAndClosedClientCompleteEverything) {
  pltest::RedisServer own;
  Handles h;
  open(h, own.url(), "ops-inflight", 2, 5000);
  polylimit_error e;
  polylimit_decision d;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(polylimit_limiter_check(h.limiter, "full", 4, 1, &d, &e), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_submit_acquire(h.limiter, "full", 4, 1, 3600000, h.queue, 1, &e), POLYLIMIT_OK);
  own.pause();
  polylimit_limiter* l = h.limiter;
  polylimit_queue* q = h.queue;
  ASSERT_EQ(polylimit_limiter_submit_peek(l, "k", 1, q, 2, &e), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_submit_check_at_most(l, "k", 1, 2, q, 3, &e), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_submit_check_limit(l, "k", 1, 1, 5, 1000, q, 4, &e), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_submit_refund(l, "k", 1, 1, q, 5, &e), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_submit_reset(l, "k", 1, q, 6, &e), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_submit_acquire(l, "k", 1, 1, 1000, q, 7, &e), POLYLIMIT_OK);
  const void* keys[3] = {"a", "b", "c"};
  size_t lens[3] = {1, 1, 1};
  polylimit_decision out[3];
  int st[3] = {0, 0, 0};
  polylimit_error ke[3];
  ASSERT_EQ(polylimit_limiter_submit_check_many(l, keys, lens, 3, 1, out, st, ke, q, 8, &e), POLYLIMIT_OK);
  EXPECT_EQ(polylimit_queue_outstanding(q), 8u);
  std::this_thread::sleep_for(100ms);
  polylimit_completion early;
  EXPECT_EQ(polylimit_queue_poll(q, &early, 1, 0), 0u);  // all still in flight
  polylimit_limiter_free(h.limiter);
  h.limiter = nullptr;
  const auto t0 = Clock::now();
  polylimit_client_close(h.client);
  h.client = nullptr;
  std::vector<polylimit_completion> got = collect(q, 8, 3s);
  own.resume();
  ASSERT_EQ(got.size(), 8u);
  EXPECT_LT(Clock::now() - t0, 2s);
  std::set<uint64_t> tokens;
  for (const auto& c : got) {
    tokens.insert(c.token);
    EXPECT_EQ(c.status, POLYLIMIT_ECLOSED) << "token " << c.token << ": " << c.error.message;
  }
  EXPECT_EQ(tokens.size(), 8u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(st[i], POLYLIMIT_ECLOSED);
    EXPECT_EQ(ke[i].code, POLYLIMIT_ECLOSED);
  }
  EXPECT_EQ(polylimit_queue_outstanding(q), 0u);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(polylimit_queue_poll(q, &early, 1, 0), 0u);  // none completes twice
}

// Many calls of each kind in flight at once, from several threads: the
// totals are exact.
// A pipeline whose replies fill more than one read (3000 keys, ~75 KB) is
// read to its end by the thread polling the queue. The socket's registration
// there announces only bytes that arrive later: a drive that stopped after
// one read would leave the rest to the I/O thread's guard, a quarter of the
// 20 s command timeout, after the 4 s this waits.
TEST(AsyncOps, RepliesLargerThanOneReadAreReadToTheEnd) {
  Handles h;
  open(h, server().url(), "ops-big", 1, 20000);
  constexpr size_t n = 3000;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<std::string> names(n);
    std::vector<const void*> keys(n);
    std::vector<size_t> lens(n);
    for (size_t i = 0; i < n; ++i) {
      names[i] = "r" + std::to_string(round) + "-" + std::to_string(i);
      keys[i] = names[i].data();
      lens[i] = names[i].size();
    }
    std::vector<polylimit_decision> got(n);
    std::vector<int> st(n, 12345);
    std::vector<polylimit_error> ke(n);
    polylimit_error err;
    const uint64_t token = 90 + static_cast<uint64_t>(round);
    ASSERT_EQ(polylimit_limiter_submit_check_many(h.limiter, keys.data(), lens.data(), n, 1, got.data(), st.data(),
                                                  ke.data(), h.queue, token, &err),
              POLYLIMIT_OK)
        << err.message;
    std::vector<polylimit_completion> c = collect(h.queue, 1, 4s);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].token, token);
    EXPECT_EQ(c[0].status, POLYLIMIT_OK) << c[0].error.message;
    size_t admitted = 0;
    for (size_t i = 0; i < n; ++i) admitted += st[i] == POLYLIMIT_OK && got[i].allowed ? 1 : 0;
    EXPECT_EQ(admitted, n);
  }
}

TEST(AsyncOps, ManyInFlightStayExact) {
  Handles h;
  open(h, server().url(), "ops-many-inflight", 300);
  polylimit_error e;
  constexpr int kThreads = 4, kEach = 250;  // 1000 of each kind
  // Each thread passes its own polylimit_error (they are per call).
  auto run = [&](const std::function<int(uint64_t, polylimit_error*)>& submit) {
    std::vector<std::thread> threads;
    std::atomic<int> refused{0};
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        polylimit_error err;
        for (int i = 0; i < kEach; ++i)
          if (submit(uint64_t(t) * kEach + i, &err) != POLYLIMIT_OK) ++refused;
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(refused.load(), 0);
    std::vector<polylimit_completion> got = collect(h.queue, kThreads * kEach, 20s);
    EXPECT_EQ(got.size(), size_t(kThreads * kEach));
    std::set<uint64_t> tokens;
    for (const auto& c : got) {
      EXPECT_EQ(c.status, POLYLIMIT_OK) << c.error.message;
      tokens.insert(c.token);
    }
    EXPECT_EQ(tokens.size(), got.size());
    return got;
  };
  auto granted = [](const std::vector<polylimit_completion>& got) {
    int64_t sum = 0;
    for (const auto& c : got) sum += c.decision.granted;
    return sum;
  };
  // acquire with no wait: one try each, exactly the limit admitted.
  auto got = run([&](uint64_t t, polylimit_error* err) {
    return polylimit_limiter_submit_acquire(h.limiter, "acq", 3, 1, 0, h.queue, t, err);
  });
  EXPECT_EQ(granted(got), 300);
  // check_limit: the per-call limit, exactly.
  got = run([&](uint64_t t, polylimit_error* err) {
    return polylimit_limiter_submit_check_limit(h.limiter, "lim", 3, 1, 250, 600000, h.queue, t, err);
  });
  EXPECT_EQ(granted(got), 250);
  // check_at_most: never more than the limit, and what was granted is what
  // the key holds.
  got = run([&](uint64_t t, polylimit_error* err) {
    return polylimit_limiter_submit_check_at_most(h.limiter, "most", 4, 3, h.queue, t, err);
  });
  const int64_t most = granted(got);
  EXPECT_LE(most, 300);
  EXPECT_GT(most, 0);
  polylimit_decision d;
  ASSERT_EQ(polylimit_limiter_peek(h.limiter, "most", 4, &d, &e), POLYLIMIT_OK);
  EXPECT_EQ(d.remaining, 300 - most);
  // refund: 1000 refunds of one give back the 300 units of "acq", no more.
  got = run([&](uint64_t t, polylimit_error* err) {
    return polylimit_limiter_submit_refund(h.limiter, "acq", 3, 1, h.queue, t, err);
  });
  ASSERT_EQ(polylimit_limiter_peek(h.limiter, "acq", 3, &d, &e), POLYLIMIT_OK);
  EXPECT_EQ(d.remaining, 300);
  // peek: consumes nothing.
  got = run([&](uint64_t t, polylimit_error* err) {
    return polylimit_limiter_submit_peek(h.limiter, "lim", 3, h.queue, t, err);
  });
  for (const auto& c : got) EXPECT_EQ(c.decision.remaining, 50);
  // check_many: 1000 batches of the same 4 keys, 300 admitted per key.
  const void* keys[4] = {"m0", "m1", "m2", "m3"};
  size_t lens[4] = {2, 2, 2, 2};
  std::vector<polylimit_decision> out(kThreads * kEach * 4);
  std::vector<int> st(kThreads * kEach * 4, -1);
  got = run([&](uint64_t t, polylimit_error* err) {
    return polylimit_limiter_submit_check_many(h.limiter, keys, lens, 4, 1, &out[t * 4], &st[t * 4], nullptr, h.queue,
                                               t, err);
  });
  int per_key[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(st[i], POLYLIMIT_OK);
    per_key[i % 4] += out[i].allowed;
  }
  for (int k = 0; k < 4; ++k) EXPECT_EQ(per_key[k], 300) << "key m" << k;
  // reset: every reset completes, and the key is full again.
  got = run([&](uint64_t t, polylimit_error* err) {
    return polylimit_limiter_submit_reset(h.limiter, "lim", 3, h.queue, t, err);
  });
  ASSERT_EQ(polylimit_limiter_peek(h.limiter, "lim", 3, &d, &e), POLYLIMIT_OK);
  EXPECT_EQ(d.remaining, 300);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
}

// acquire waits for admission without a caller thread: the submit returns
// at once, the completion comes once the window has moved on.
TEST(AsyncOps, AcquireWaitsOnTheLibraryTimer) {
  Handles h;
  open(h, server().url(), "ops-acquire", 10);
  polylimit_limiter* l = make_limiter(h.client, "ops-acquire-300ms", 2, 300);
  polylimit_error e;
  polylimit_decision d;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, &e), POLYLIMIT_OK);
  const auto t0 = Clock::now();
  ASSERT_EQ(polylimit_limiter_submit_acquire(l, "k", 1, 1, 5000, h.queue, 1, &e), POLYLIMIT_OK) << e.message;
  ASSERT_EQ(polylimit_limiter_submit_acquire(l, "k", 1, 1, 100, h.queue, 2, &e), POLYLIMIT_OK) << e.message;
  EXPECT_LT(Clock::now() - t0, 100ms);
  pollfd p{polylimit_queue_fd(h.queue), POLLIN, 0};
  // The short one gives up at once (admission would come after 100 ms).
  polylimit_completion c = one(h.queue, 2);
  EXPECT_EQ(c.status, POLYLIMIT_OK);
  EXPECT_EQ(c.decision.allowed, 0);
  EXPECT_GT(c.decision.retry_after_ms, 100);
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // the long one is waiting
  polylimit_limiter_free(l);       // and outlives its limiter handle
  c = one(h.queue, 1);
  EXPECT_EQ(c.status, POLYLIMIT_OK) << c.error.message;
  EXPECT_EQ(c.decision.allowed, 1);
  EXPECT_EQ(c.decision.granted, 1);
  EXPECT_GE(Clock::now() - t0, 200ms);
  EXPECT_LT(Clock::now() - t0, 3s);
}

// The failure policy applies to the completions as to the blocking calls.
TEST(AsyncOps, FailurePolicyApplies) {
  pltest::RedisServer own;
  Handles h;
  open(h, own.url(), "ops-policy", 10, 500);
  polylimit_limiter* l = make_limiter(h.client, "ops-open", 5, 1000, POLYLIMIT_ALG_SLIDING_LOG, POLYLIMIT_FAIL_OPEN);
  polylimit_error e;
  polylimit_decision d;
  ASSERT_EQ(polylimit_limiter_check(l, "warm", 4, 1, &d, &e), POLYLIMIT_OK);
  own.stop();
  // The first call may meet the dropped connection, later ones a refused
  // reconnect: either way the policy answers.
  for (uint64_t t = 1; t <= 2; ++t) {
    ASSERT_EQ(polylimit_limiter_submit_check_limit(l, "k", 1, 1, 5, 1000, h.queue, t, &e), POLYLIMIT_OK);
    polylimit_completion c = one(h.queue, t);
    EXPECT_EQ(c.status, POLYLIMIT_OK) << c.error.message;
    EXPECT_EQ(c.decision.degraded, 1);
    EXPECT_EQ(c.decision.allowed, 1);
  }
  const void* keys[2] = {"a", "b"};
  size_t lens[2] = {1, 1};
  polylimit_decision out[2];
  int st[2] = {-1, -1};
  ASSERT_EQ(polylimit_limiter_submit_check_many(l, keys, lens, 2, 1, out, st, nullptr, h.queue, 9, &e), POLYLIMIT_OK);
  EXPECT_EQ(one(h.queue, 9).status, POLYLIMIT_OK);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(st[i], POLYLIMIT_OK);
    EXPECT_EQ(out[i].degraded, 1);
    EXPECT_EQ(out[i].allowed, 1);
  }
  // With the default policy the outage is the completion's error.
  ASSERT_EQ(polylimit_limiter_submit_peek(h.limiter, "k", 1, h.queue, 10, &e), POLYLIMIT_OK);
  polylimit_completion c = one(h.queue, 10);
  EXPECT_TRUE(c.status == POLYLIMIT_EUNAVAILABLE || c.status == POLYLIMIT_ETIMEOUT) << c.status;
  ASSERT_EQ(polylimit_limiter_submit_reset(h.limiter, "k", 1, h.queue, 11, &e), POLYLIMIT_OK);
  c = one(h.queue, 11);
  EXPECT_TRUE(c.status == POLYLIMIT_EUNAVAILABLE || c.status == POLYLIMIT_ETIMEOUT) << c.status;
  polylimit_limiter_free(l);
  own.start();
}

// A connect refused for a reason other than an outage (here a wrong
// password) is the completion's status, as documented: the submit itself
// fails only for bad arguments and a closed client.
TEST(AsyncOps, RefusedAuthIsTheCompletionsStatus) {
  pltest::RedisServer own({"--requirepass", "s3cret"});
  const std::string url = "redis://:wrong@127.0.0.1:" + own.url().substr(own.url().rfind(':') + 1);
  Handles h;
  open(h, url, "ops-auth", 5);
  polylimit_error e;
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, 1, &e), POLYLIMIT_OK) << e.message;
  polylimit_completion c = one(h.queue, 1);
  EXPECT_EQ(c.status, POLYLIMIT_EAUTH) << c.error.message;
  EXPECT_EQ(std::string(c.error.message).find("wrong"), std::string::npos);  // no secret in messages
  ASSERT_EQ(polylimit_limiter_submit_peek(h.limiter, "k", 1, h.queue, 2, &e), POLYLIMIT_OK) << e.message;
  EXPECT_EQ(one(h.queue, 2).status, POLYLIMIT_EAUTH);
  const void* keys[1] = {"k"};
  size_t lens[1] = {1};
  polylimit_decision out[1];
  int st[1] = {0};
  ASSERT_EQ(polylimit_limiter_submit_check_many(h.limiter, keys, lens, 1, 1, out, st, nullptr, h.queue, 3, &e),
            POLYLIMIT_OK);
  EXPECT_EQ(one(h.queue, 3).status, POLYLIMIT_EAUTH);
  EXPECT_EQ(st[0], POLYLIMIT_EAUTH);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
}

// memory:// has no round trip: every call completes before its submit
// returns; bad arguments are the submit's error.
TEST(AsyncOps, MemoryBackendAndBadArguments) {
  Handles h;
  open(h, "memory://", "mem", 5);
  polylimit_error e;
  polylimit_limiter* l = h.limiter;
  polylimit_queue* q = h.queue;
  ASSERT_EQ(polylimit_limiter_submit_check_at_most(l, "k", 1, 3, q, 1, &e), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_submit_acquire(l, "k", 1, 2, 0, q, 2, &e), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_submit_peek(l, "k", 1, q, 3, &e), POLYLIMIT_OK);
  polylimit_completion c[4];
  ASSERT_EQ(polylimit_queue_poll(q, c, 4, 0), 3u);
  EXPECT_EQ(c[0].decision.granted, 3);
  EXPECT_EQ(c[1].decision.granted, 2);
  EXPECT_EQ(c[2].decision.remaining, 0);
  EXPECT_EQ(polylimit_limiter_submit_check_at_most(l, "k", 1, 0, q, 9, &e), POLYLIMIT_EINVALID);
  EXPECT_STREQ(e.message, "max_cost = 0 must be at least 1");
  EXPECT_EQ(polylimit_limiter_submit_acquire(l, "k", 1, 6, 0, q, 9, &e), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_submit_acquire(l, "k", 1, 1, -1, q, 9, &e), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_submit_check_limit(l, "k", 1, 1, 0, 1000, q, 9, &e), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_submit_refund(l, "", 0, 1, q, 9, &e), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_submit_reset(l, nullptr, 1, q, 9, &e), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_submit_peek(nullptr, "k", 1, q, 9, &e), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_submit_peek(l, "k", 1, nullptr, 9, &e), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_submit_check_many(l, nullptr, nullptr, 1, 1, nullptr, nullptr, nullptr, nullptr, 9, &e),
            POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_queue_outstanding(q), 0u);
  EXPECT_EQ(polylimit_queue_poll(q, c, 4, 0), 0u);
}

}  // namespace
