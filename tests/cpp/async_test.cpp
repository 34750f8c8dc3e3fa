// async_test.cpp - the non-blocking C API (polylimit_limiter_submit_check and
// polylimit_queue_*) against real redis-server processes.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "polylimit.h"
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

void open(Handles& h, const std::string& url, const std::string& prefix, int64_t limit, int pool_size = 0,
          int timeout_ms = 0, bool no_coalescing = false) {
  polylimit_error err;
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  co.pool_size = pool_size;
  co.command_timeout_ms = timeout_ms;
  co.no_coalescing = no_coalescing ? 1 : 0;
  ASSERT_EQ(polylimit_client_open(url.c_str(), &co, &h.client, &err), POLYLIMIT_OK) << err.message;
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.limit = limit;
  lo.window_ms = 600000;
  lo.prefix = prefix.c_str();
  ASSERT_EQ(polylimit_limiter_new(h.client, &lo, &h.limiter, &err), POLYLIMIT_OK) << err.message;
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

// How many of `got` were admitted; every one must have succeeded.
int admitted(const std::vector<polylimit_completion>& got) {
  int allowed = 0;
  for (const auto& c : got) {
    EXPECT_EQ(c.status, POLYLIMIT_OK) << c.error.message;
    allowed += c.decision.allowed;
  }
  return allowed;
}

// One check to open the connection, then the server freezes (SIGSTOP).
void connect_then_pause(Handles& h, pltest::RedisServer& own) {
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "warm", 4, 1, h.queue, 1, &err), POLYLIMIT_OK) << err.message;
  ASSERT_EQ(collect(h.queue, 1, 2s).size(), 1u);
  own.pause();
}

TEST(Async, ThreadsSubmittingShareOneLimitExactly) {
  Handles h;
  open(h, server().url(), "async-exact", 500);
  constexpr int kThreads = 8, kEach = 250;
  std::vector<std::thread> threads;
  std::atomic<int> submit_errors{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        polylimit_error err;
        if (polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, uint64_t(t) * kEach + i, &err) !=
            POLYLIMIT_OK)
          ++submit_errors;
      }
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(submit_errors.load(), 0);
  std::vector<polylimit_completion> got = collect(h.queue, kThreads * kEach, 10s);
  ASSERT_EQ(got.size(), size_t(kThreads * kEach));
  std::set<uint64_t> tokens;
  int allowed = 0;
  for (const auto& c : got) {
    EXPECT_EQ(c.status, POLYLIMIT_OK) << c.error.message;
    tokens.insert(c.token);
    allowed += c.decision.allowed;
  }
  EXPECT_EQ(tokens.size(), size_t(kThreads * kEach));  // each exactly once
  EXPECT_EQ(allowed, 500);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
  polylimit_decision d;
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_peek(h.limiter, "k", 1, &d, &err), POLYLIMIT_OK);
  EXPECT_EQ(d.remaining, 0);
}

// One connection carries lone non-blocking checks and blocking ones in turn:
// the I/O thread, waiting on the socket between its calls, wakes for replies
// that blocking callers read, and must still take every later lone call.
// Each one completes once, and the totals are exact.
TEST(Async, LoneCallsAndBlockingCallsShareOneConnection) {
  Handles h;
  open(h, server().url(), "async-armed", 120, /*pool_size=*/1);
  polylimit_error err;
  polylimit_decision d;
  int allowed = 0;
  std::set<uint64_t> tokens;
  for (uint64_t round = 0; round < 40; ++round) {
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, round, &err), POLYLIMIT_OK) << err.message;
    std::vector<polylimit_completion> got = collect(h.queue, 1, 5s);
    ASSERT_EQ(got.size(), 1u) << "round " << round;
    EXPECT_EQ(got[0].status, POLYLIMIT_OK) << got[0].error.message;
    tokens.insert(got[0].token);
    allowed += got[0].decision.allowed;
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(polylimit_limiter_check(h.limiter, "k", 1, 1, &d, &err), POLYLIMIT_OK) << err.message;
      allowed += d.allowed;
    }
  }
  EXPECT_EQ(tokens.size(), 40u);
  EXPECT_EQ(allowed, 120);  // 160 checks of a limit of 120
  polylimit_completion extra;
  EXPECT_EQ(polylimit_queue_poll(h.queue, &extra, 1, 0), 0u);  // none completed twice
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
}

// The eventfd is what an event loop watches: readable exactly while
// completions wait.
TEST(Async, QueueFdIsReadableWhileCompletionsWait) {
  Handles h;
  open(h, server().url(), "async-fd", 10);
  const int fd = polylimit_queue_fd(h.queue);
  ASSERT_GE(fd, 0);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, 7, &err), POLYLIMIT_OK) << err.message;
  // Readable when the reply is in; the poll reads it (a NOSCRIPT reply on a
  // fresh server is followed by the script's load: readable once more).
  polylimit_completion c;
  size_t got = 0;
  for (int i = 0; i < 10 && got == 0; ++i) {
    ASSERT_EQ(::poll(&p, 1, 2000), 1);
    got = polylimit_queue_poll(h.queue, &c, 1, 0);
  }
  ASSERT_EQ(got, 1u);
  EXPECT_EQ(c.token, 7u);
  EXPECT_EQ(c.status, POLYLIMIT_OK);
  EXPECT_EQ(c.decision.allowed, 1);
  EXPECT_EQ(c.decision.remaining, 9);
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // drained
  polylimit_queue_wake(h.queue);
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  EXPECT_EQ(polylimit_queue_poll(h.queue, &c, 1, -1), 0u);  // a wake returns with nothing
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  // Replies read by a poll that takes fewer than it completed: the rest
  // keep the fd readable.
  for (uint64_t i = 0; i < 3; ++i) {
    const std::string key = "more" + std::to_string(i);
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, key.data(), key.size(), 1, h.queue, 10 + i, &err),
              POLYLIMIT_OK);
  }
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  std::this_thread::sleep_for(50ms);  // every reply is in
  std::set<uint64_t> tokens;
  for (int taken = 0; taken < 3; ++taken) {
    ASSERT_EQ(::poll(&p, 1, 2000), 1) << "after " << taken;
    ASSERT_EQ(polylimit_queue_poll(h.queue, &c, 1, 0), 1u);
    tokens.insert(c.token);
  }
  EXPECT_EQ(tokens, (std::set<uint64_t>{10, 11, 12}));
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

// The thread that polls reads the replies: a second queue's calls on the
// same connection complete at once although the first queue, whose call
// went out first, is never polled (its call completes into it all the
// same), and a late poll of that queue finds it done, never timed out.
TEST(Async, AStalledQueueDoesNotHoldUpAnotherQueuesCalls) {
  Handles h;
  open(h, server().url(), "async-two-queues", 1000, /*pool_size=*/1, /*timeout_ms=*/5000);
  polylimit_queue* other = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_queue_new(&other, &err), POLYLIMIT_OK) << err.message;
  int allowed = 0;
  const auto started = Clock::now();
  for (uint64_t i = 0; i < 50; ++i) {
    // The stalled queue's call is the oldest in flight each time.
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "stalled", 7, 1, h.queue, 1000 + i, &err), POLYLIMIT_OK)
        << err.message;
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, other, i, &err), POLYLIMIT_OK) << err.message;
    std::vector<polylimit_completion> got = collect(other, 1, 4s);
    ASSERT_EQ(got.size(), 1u) << "call " << i;
    EXPECT_EQ(got[0].status, POLYLIMIT_OK) << got[0].error.message;
    allowed += got[0].decision.allowed;
  }
  // Far below the 5 s command timeout that a wait for the I/O thread's
  // deadline guard would take for even one of them.
  EXPECT_LT(Clock::now() - started, 3s);
  EXPECT_EQ(allowed, 50);
  std::vector<polylimit_completion> late = collect(h.queue, 50, 2s);
  ASSERT_EQ(late.size(), 50u);
  EXPECT_EQ(admitted(late), 50);
  EXPECT_EQ(polylimit_queue_outstanding(other), 0u);
  polylimit_queue_free(other);
}

// A check queued behind its key's call in flight goes out in the next
// (coalesced) call, which the thread that read the first reply sends: the
// poller of the queued check's queue reads that call's reply too, although
// the sending queue is never polled again.
TEST(Async, ACoalescedCheckIsReadByItsOwnQueuesPoller) {
  pltest::RedisServer own;
  Handles h;
  open(h, own.url(), "async-coalesced-poller", 1000, /*pool_size=*/1, /*timeout_ms=*/5000);
  polylimit_queue* other = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_queue_new(&other, &err), POLYLIMIT_OK) << err.message;
  connect_then_pause(h, own);
  // The first queue's call goes out; the second queue's check of the same
  // key waits behind it (the server is frozen: it cannot have answered).
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "hot", 3, 1, h.queue, 1, &err), POLYLIMIT_OK) << err.message;
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "hot", 3, 1, other, 2, &err), POLYLIMIT_OK) << err.message;
  own.resume();
  // Polling the first queue reads its reply and sends the queued check.
  std::vector<polylimit_completion> first = collect(h.queue, 1, 4s);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].status, POLYLIMIT_OK) << first[0].error.message;
  const auto started = Clock::now();
  std::vector<polylimit_completion> second = collect(other, 1, 4s);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].status, POLYLIMIT_OK) << second[0].error.message;
  EXPECT_EQ(second[0].decision.remaining, 998);
  // Far below the 5 s command timeout, at which the I/O thread's deadline
  // guard would read it for a poller that was not woken.
  EXPECT_LT(Clock::now() - started, 2s);
  polylimit_stats st = POLYLIMIT_STATS_INIT;
  ASSERT_EQ(polylimit_client_stats(h.client, &st, &err), POLYLIMIT_OK) << err.message;
  EXPECT_EQ(st.coalesced, 1u);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
  polylimit_queue_free(other);
}

// Nobody polls the queue for longer than the command timeout: the replies
// that came meanwhile are read by the deadline guard, not timed out.
TEST(Async, APollLaterThanTheTimeoutStillGetsTheDecisions) {
  Handles h;
  open(h, server().url(), "async-late-poll", 100, /*pool_size=*/1, /*timeout_ms=*/300);
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "warm", 4, 1, h.queue, 99, &err), POLYLIMIT_OK);
  ASSERT_EQ(collect(h.queue, 1, 2s).size(), 1u);  // connected, script loaded: no retry past the deadline
  // Distinct keys: all ten go out at once (checks of one key would queue
  // behind its call, and past their own deadline be failed unsent).
  for (uint64_t i = 0; i < 10; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, key.data(), key.size(), 1, h.queue, i, &err), POLYLIMIT_OK)
        << err.message;
  }
  std::this_thread::sleep_for(700ms);
  std::vector<polylimit_completion> got = collect(h.queue, 10, 2s);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(admitted(got), 10);
}

// Calls submitted while others are in flight wait for the next poll to be
// written with them. When no poll comes, the I/O thread looks every quarter
// of the command timeout: it writes them (and reads what is in) long before
// any deadline, so the calls complete without a poll.
TEST(Async, CallsLeftForAPollThatDoesNotComeAreWrittenInTime) {
  Handles h;
  open(h, server().url(), "async-left", 100, /*pool_size=*/1, /*timeout_ms=*/2000);
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "warm", 4, 1, h.queue, 99, &err), POLYLIMIT_OK);
  ASSERT_EQ(collect(h.queue, 1, 3s).size(), 1u);
  for (uint64_t i = 0; i < 10; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, key.data(), key.size(), 1, h.queue, i, &err), POLYLIMIT_OK)
        << err.message;
  }
  // Two quarters of the timeout and more, nowhere near the deadline: without
  // the I/O thread's look nothing would have completed (nobody polls).
  std::this_thread::sleep_for(1300ms);
  EXPECT_LT(polylimit_queue_outstanding(h.queue), 10u);
  std::vector<polylimit_completion> got = collect(h.queue, 10, 3s);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(admitted(got), 10);
}

// After the deadline guard has read for a late poller, the connection goes
// back to the poller: replies of the calls submitted after it stay unread
// (not completed) while nobody polls, where an I/O thread that kept the
// connection would read every one of them. (Calls here do not overlap, so an
// I/O thread that leads until none is outstanding hands back too; the guard
// reads once so that it hands back under a load that never pauses.)
TEST(Async, AfterTheGuardReadsThePollerReadsAgain) {
  Handles h;
  open(h, server().url(), "async-guard-once", 100000, /*pool_size=*/1, /*timeout_ms=*/400);
  polylimit_error err;
  uint64_t token = 0;
  auto submit = [&] {
    const std::string key = "k" + std::to_string(token);
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, key.data(), key.size(), 1, h.queue, token++, &err),
              POLYLIMIT_OK)
        << err.message;
  };
  submit();  // connects and loads the script (a NOSCRIPT retry keeps its first deadline)
  ASSERT_EQ(collect(h.queue, 1, 2s).size(), 1u);
  // One call, then one a millisecond without a poll, from before its
  // deadline (when the guard reads) to well after it.
  const auto first = Clock::now();
  submit();
  std::this_thread::sleep_for(300ms);
  while (Clock::now() - first < 600ms) {
    submit();
    std::this_thread::sleep_for(1ms);
  }
  // The calls of the last 200 ms (before their own deadlines) wait unread.
  EXPECT_GE(polylimit_queue_outstanding(h.queue), 20u);
  const size_t total = token - 1;
  std::vector<polylimit_completion> got = collect(h.queue, total, 3s);
  ASSERT_EQ(got.size(), total);
  EXPECT_EQ(admitted(got), static_cast<int>(total));
}

// Submitting never waits for Redis: against a frozen server the submit
// returns at once, and every completion comes within the deadline.
TEST(Async, FrozenServerCompletesWithTimeoutAndSubmitDoesNotWait) {
  pltest::RedisServer own;
  Handles h;
  open(h, own.url(), "async-frozen", 10, 0, 300);  // default pool: 2 connections may open
  polylimit_error err;
  ASSERT_NO_FATAL_FAILURE(connect_then_pause(h, own));
  const auto t0 = Clock::now();
  for (uint64_t i = 0; i < 100; ++i)
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, 100 + i, &err), POLYLIMIT_OK)
        << err.message;
  const auto submit_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_LT(submit_ms, 100) << "100 submits took " << submit_ms << " ms";
  std::vector<polylimit_completion> got = collect(h.queue, 100, 3s);
  const auto done_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  own.resume();
  ASSERT_EQ(got.size(), 100u);
  // A check written before the server froze times out with an unknown
  // outcome; one still queued behind it when the connection was given up
  // was never written: its outcome is known (nothing consumed). It is not
  // tried again on a fresh connection, which would not answer sooner.
  int written = 0;
  for (const auto& c : got) {
    if (c.error.outcome_unknown) {
      ++written;
      EXPECT_EQ(c.status, POLYLIMIT_ETIMEOUT) << c.error.message;
    } else {
      EXPECT_TRUE(c.status == POLYLIMIT_ETIMEOUT || c.status == POLYLIMIT_EUNAVAILABLE)
          << c.status << " " << c.error.message;
    }
  }
  EXPECT_GE(written, 1);
  EXPECT_LT(done_ms, 300 + 400);
  std::printf("100 submits: %lld ms; all failed after %lld ms (timeout 300 ms), %d of them written\n",
              static_cast<long long>(submit_ms), static_cast<long long>(done_ms), written);
  // The client recovers on a new connection.
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, 999, &err), POLYLIMIT_OK);
  std::vector<polylimit_completion> after = collect(h.queue, 1, 2s);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].status, POLYLIMIT_OK) << after[0].error.message;
}

// The queue of one connection is bounded: past it, the check completes at
// once with POLYLIMIT_EPOOL naming the cause (the failure policy's input,
// as for check()); the queued ones complete once the server answers.
TEST(Async, FullConnectionQueueIsAClearError) {
  pltest::RedisServer own;
  Handles h;
  // A command timeout far above the submits' time, also under ThreadSanitizer
  // (3 s was not: the first checks timed out while the last were submitted).
  // Without coalescing: checks of one key would queue behind its call in
  // flight, and checks of one limit in its lane, each queue with a bound of
  // its own (coalesce_test.cpp).
  open(h, own.url(), "async-full", 10, 1, 60000, true);
  polylimit_error err;
  ASSERT_NO_FATAL_FAILURE(connect_then_pause(h, own));
  for (int i = 0; i < 5000; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, key.data(), key.size(), 1, h.queue, i, &err), POLYLIMIT_OK)
        << err.message;
  }
  std::vector<polylimit_completion> refused = collect(h.queue, 5000 - 4096, 1s);
  ASSERT_EQ(refused.size(), size_t(5000 - 4096));
  for (const auto& c : refused) {
    EXPECT_EQ(c.status, POLYLIMIT_EPOOL);
    EXPECT_NE(std::string(c.error.message).find("queue full"), std::string::npos) << c.error.message;
    EXPECT_GE(c.token, 4096u);  // the first 4096 were queued
  }
  own.resume();
  std::vector<polylimit_completion> served = collect(h.queue, 4096, 10s);
  ASSERT_EQ(served.size(), 4096u);
  EXPECT_EQ(admitted(served), 4096);  // one check per key
}

// Closing the client completes what is in flight (with an error), and the
// queue outlives its handle until then.
TEST(Async, CloseCompletesEverythingInFlight) {
  pltest::RedisServer own;
  Handles h;
  open(h, own.url(), "async-close", 10, 1, 5000);
  polylimit_error err;
  ASSERT_NO_FATAL_FAILURE(connect_then_pause(h, own));
  for (uint64_t i = 0; i < 50; ++i)
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, i, &err), POLYLIMIT_OK);
  polylimit_limiter_free(h.limiter);  // allowed with checks in flight
  h.limiter = nullptr;
  const auto t0 = Clock::now();
  polylimit_client_close(h.client);
  h.client = nullptr;
  std::vector<polylimit_completion> got = collect(h.queue, 50, 2s);
  own.resume();
  ASSERT_EQ(got.size(), 50u);
  for (const auto& c : got) EXPECT_EQ(c.status, POLYLIMIT_ECLOSED) << c.error.message;
  EXPECT_LT(Clock::now() - t0, 1s);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
}

// After SCRIPT FLUSH the non-blocking path re-sends with EVAL and still
// decides; a failing policy applies to completions as to check().
TEST(Async, ScriptFlushAndFailurePolicy) {
  pltest::RedisServer own;
  Handles h;
  open(h, own.url(), "async-flush", 3);
  polylimit_error err;
  ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, 1, &err), POLYLIMIT_OK);
  ASSERT_EQ(collect(h.queue, 1, 2s).size(), 1u);
  own.command({"SCRIPT", "FLUSH"});
  for (uint64_t i = 2; i <= 4; ++i)
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, i, &err), POLYLIMIT_OK);
  std::vector<polylimit_completion> got = collect(h.queue, 3, 2s);
  ASSERT_EQ(got.size(), 3u);
  int allowed = 0;
  for (const auto& c : got) {
    ASSERT_EQ(c.status, POLYLIMIT_OK) << c.error.message;
    allowed += c.decision.allowed;
  }
  EXPECT_EQ(allowed, 2);  // 3 per window, one taken before the flush

  // on_failure = open: a stopped server's checks complete admitted, degraded.
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.limit = 3;
  lo.window_ms = 1000;
  lo.failure_policy = POLYLIMIT_FAIL_OPEN;
  polylimit_limiter* open_limiter = nullptr;
  ASSERT_EQ(polylimit_limiter_new(h.client, &lo, &open_limiter, &err), POLYLIMIT_OK);
  own.stop();
  // Twice: the first meets the dropped connection, the second a refused
  // reconnect on the submitting thread; both get the policy.
  for (uint64_t t = 10; t < 12; ++t) {
    ASSERT_EQ(polylimit_limiter_submit_check(open_limiter, "k", 1, 1, h.queue, t, &err), POLYLIMIT_OK) << err.message;
    std::vector<polylimit_completion> c = collect(h.queue, 1, 3s);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, POLYLIMIT_OK) << c[0].error.message;
    EXPECT_EQ(c[0].decision.allowed, 1);
    EXPECT_EQ(c[0].decision.degraded, 1);
  }
  polylimit_limiter_free(open_limiter);
  own.start();
}

TEST(Async, MemoryBackendCompletesBeforeSubmitReturns) {
  Handles h;
  open(h, "memory://", "mem", 2);
  polylimit_error err;
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, i, &err), POLYLIMIT_OK);
  polylimit_completion c[4];
  ASSERT_EQ(polylimit_queue_poll(h.queue, c, 4, 0), 3u);
  EXPECT_EQ(c[0].decision.allowed + c[1].decision.allowed + c[2].decision.allowed, 2);
  EXPECT_EQ(polylimit_limiter_submit_check(h.limiter, nullptr, 1, 1, h.queue, 9, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, nullptr, 9, &err), POLYLIMIT_EINVALID);
  EXPECT_NE(std::string(err.message).find("queue"), std::string::npos);
  EXPECT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, -5, h.queue, 9, &err), POLYLIMIT_EINVALID);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
}

// An event loop that watches the queue's fd edge-triggered (tokio does) and
// looks with a zero wait (polylimit_queue_poll reads a set of one socket
// directly then, without taking its epoll event) is woken for every reply,
// also while blocking callers on other threads drive the same connection
// now and then. A wake-up lost would leave a reply in the socket until the
// I/O thread's guard, a quarter of the 40 s command timeout.
TEST(Async, AnEdgeTriggeredLoopIsWokenForEveryReplyBesideBlockingCallers) {
  Handles h;
  open(h, server().url(), "async-et", 1000000, /*pool_size=*/1, /*timeout_ms=*/40000);
  const int loop = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(loop, 0);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ASSERT_EQ(::epoll_ctl(loop, EPOLL_CTL_ADD, polylimit_queue_fd(h.queue), &ev), 0);
  std::atomic<bool> stop{false};
  std::atomic<long> blocking{0};
  std::vector<std::thread> others;
  struct Joined {  // also when an assertion below returns early
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    int loop;
    ~Joined() {
      stop = true;
      for (auto& t : threads) t.join();
      ::close(loop);
    }
  } joined{stop, others, loop};
  for (int t = 0; t < 2; ++t)
    others.emplace_back([&, t] {
      polylimit_error e;
      polylimit_decision d;
      const std::string key = "b" + std::to_string(t);
      while (!stop.load()) {
        if (polylimit_limiter_check(h.limiter, key.data(), key.size(), 1, &d, &e) == POLYLIMIT_OK) ++blocking;
      }
    });
  polylimit_error err;
  uint64_t token = 0;
  long received = 0, waits = 0;
  const auto until = Clock::now() + 3s;
  while (Clock::now() < until) {
    const int n = static_cast<int>(token % 3) + 1;  // 1 to 3 in flight
    for (int j = 0; j < n; ++j) {
      const std::string key = "a" + std::to_string(token % 5);
      ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, key.data(), key.size(), 1, h.queue, token++, &err),
                POLYLIMIT_OK)
          << err.message;
    }
    while (received < static_cast<long>(token)) {
      epoll_event out;
      ASSERT_EQ(::epoll_wait(loop, &out, 1, 5000), 1)
          << "no wake-up with " << (static_cast<long>(token) - received) << " replies outstanding";
      ++waits;
      polylimit_completion c[4];
      size_t got;
      do {  // to a poll that returns less than it could take, as tokio's loop does
        got = polylimit_queue_poll(h.queue, c, 4, 0);
        for (size_t k = 0; k < got; ++k) EXPECT_EQ(c[k].status, POLYLIMIT_OK) << c[k].error.message;
        received += static_cast<long>(got);
      } while (got == 4);
    }
  }
  EXPECT_EQ(received, static_cast<long>(token));
  EXPECT_GT(blocking.load(), 0);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
  std::printf("    %ld replies over %ld wake-ups, %ld blocking checks beside them\n", received, waits, blocking.load());
}

// A poller that takes fewer completions than arrive never empties the
// queue: every completion still comes out once, in order.
TEST(Async, APollerThatNeverEmptiesTheQueueGetsEveryCompletionInOrder) {
  Handles h;
  open(h, "memory://", "mem-order", 1000000);
  polylimit_error err;
  uint64_t next_token = 0, expected = 0;
  polylimit_completion c[3];
  for (int round = 0; round < 500; ++round) {
    for (int j = 0; j < 3; ++j)
      ASSERT_EQ(polylimit_limiter_submit_check(h.limiter, "k", 1, 1, h.queue, next_token++, &err), POLYLIMIT_OK);
    const size_t got = polylimit_queue_poll(h.queue, c, 2, 0);  // two of the three
    ASSERT_EQ(got, 2u);
    for (size_t k = 0; k < got; ++k) EXPECT_EQ(c[k].token, expected++);
  }
  size_t got;
  while ((got = polylimit_queue_poll(h.queue, c, 3, 0)) > 0)
    for (size_t k = 0; k < got; ++k) EXPECT_EQ(c[k].token, expected++);
  EXPECT_EQ(expected, next_token);
  EXPECT_EQ(polylimit_queue_outstanding(h.queue), 0u);
}

}  // namespace
