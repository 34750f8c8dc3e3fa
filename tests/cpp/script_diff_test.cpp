// The library's scripts decide exactly as the frozen ones in
// tests/cpp/legacy_scripts/ (the scripts before the work on their Redis CPU
// cost) and as memory://. Randomized explicit-time streams (all four
// algorithms, costs up to the limit, multi-limit specs, punitive blocks,
// refunds, peeks, clocks that step back) run through both script sets on one
// redis-server, each under its own key prefix, with the KEYS and ARGV the
// library builds, and the replies must carry the same numbers (an array of
// integers, or from the single-check scripts of core/scripts/single/ the
// same integers in one string).
//
// Windows and blocks are long (>= 15 s) so that no key expires in real time
// while a stream runs: expiry follows the server's clock, and a stream's
// explicit time runs far faster than that.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "backend/memory_backend.h"
#include "backend/redis_backend.h"
#include "legacy_scripts.h"
#include "polylimit/url.h"
#include "redis_server.h"
#include "scripts_generated.h"

using namespace polylimit;

namespace {

constexpr int64_t kT0 = 1700000000000000;

// A reply as text: integers in decimal, arrays in brackets, errors marked. A
// string of integers separated by spaces (a single-check script's reply)
// reads as the array of those integers.
std::string reply_text(const polylimit::Reply* r) {
  switch (r->type) {
    case polylimit::ReplyType::kString: {
      const std::string text(r->str, r->len);
      if (text.empty() || text.find_first_not_of("-0123456789 ") != std::string::npos ||
          text.find("  ") != std::string::npos || text.front() == ' ' || text.back() == ' ')
        return "string(" + text + ")";
      std::string s = "[";
      for (char ch : text) s += ch == ' ' ? ',' : ch;
      return s + "]";
    }
    case polylimit::ReplyType::kInteger: return std::to_string(r->integer);
    case polylimit::ReplyType::kArray: {
      std::string s = "[";
      for (size_t i = 0; i < r->elements; ++i) s += (i ? "," : "") + reply_text(r->element[i]);
      return s + "]";
    }
    case polylimit::ReplyType::kError: return "ERR(" + std::string(r->str, r->len) + ")";
    case polylimit::ReplyType::kNil: return "nil";
    default: return "status(" + std::string(r->text()) + ")";
  }
}

// The general script of the algorithm whose single-check script is `script`
// (or `script` itself).
const scripts::Script& general_script(const scripts::Script& script) {
  for (const scripts::Script* s :
       {&scripts::k_sliding_log, &scripts::k_sliding_counter, &scripts::k_fixed_window, &scripts::k_gcra})
    if (std::string_view(script.name) == s->name) return *s;
  throw std::runtime_error(std::string("no general script named ") + script.name);
}

// Keeps the text of the last script reply.
class Recording : public pltest::ForwardingTransport {
 public:
  using ForwardingTransport::ForwardingTransport;
  ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) override {
    ReplyPtr r = inner_->run_script(script, keys, args);
    last = reply_text(r.get());
    last_single = script.sha1 != general_script(script).sha1;
    return r;
  }
  std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                    const Durability& durable = {}, std::vector<Ack>* acks = nullptr) override {
    std::vector<ReplyPtr> r = inner_->run_scripts(script, calls, durable, acks);
    last.clear();
    for (const ReplyPtr& x : r) last += reply_text(x.get()) + ";";
    return r;
  }

  std::string last;
  bool last_single = false;  // the last call ran a single-check script
};

// Runs the general script where the library would run a single-check one
// (both read the same ARGV for one limit without a block), so that a test
// can hold both to one scenario.
class GeneralScripts : public pltest::ForwardingTransport {
 public:
  using ForwardingTransport::ForwardingTransport;
  ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) override {
    return inner_->run_script(general_script(script), keys, args);
  }
  std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                    const Durability& durable = {}, std::vector<Ack>* acks = nullptr) override {
    return inner_->run_scripts(general_script(script), calls, durable, acks);
  }
};

pltest::RedisServer& server() {
  static pltest::RedisServer s;
  return s;
}

std::unique_ptr<Transport> standalone() {
  return std::make_unique<StandaloneTransport>(parse_url(server().url()), PoolOptions{});
}

std::string decision_text(const Decision& d) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "allowed=%d limit=%" PRId64 " remaining=%" PRId64 " retry=%" PRId64 " reset=%" PRId64,
                d.allowed ? 1 : 0, d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms);
  return buf;
}

// One caller key's stream: its limits and punitive block.
struct Spec {
  std::vector<LimitParams> limits;
  int64_t block_us = 0;
  std::string describe() const {
    std::ostringstream s;
    for (const LimitParams& p : limits)
      s << algorithm_name(p.algorithm) << " " << p.limit << "/" << p.window_ms << "ms burst " << p.burst << "; ";
    s << "block " << block_us << "us";
    return s.str();
  }
};

// Everything that differs between runs comes from this seed: --gtest_random_seed=N
// replays a run (0, the default, means 1).
uint32_t seed() {
  int s = ::testing::UnitTest::GetInstance()->random_seed();
  return s == 0 ? 1u : static_cast<uint32_t>(s);
}

template <class T>
T pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  return *(values.begin() + rng() % values.size());
}

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

Spec random_spec(std::mt19937_64& rng, Algorithm alg) {
  Spec s;
  const int n = rng() % 4 == 0 ? 2 + static_cast<int>(rng() % 2) : 1;
  for (int i = 0; i < n; ++i) {
    LimitParams p;
    p.algorithm = alg;
    // 128 / 129: the sliding log writes small rings whole, larger ones by range.
    p.limit = pick<int64_t>(rng, {1, 2, 3, 5, 7, 10, 16, 37, 100, 128, 129, 1000});
    p.window_ms = pick<int64_t>(rng, {15000, 20011, 60000, 3600000});
    if (alg == Algorithm::kGcra && rng() % 2 == 0) p.burst = uniform(rng, 1, 2 * p.limit);
    s.limits.push_back(p);
  }
  if (rng() % 4 == 0) s.block_us = pick<int64_t>(rng, {15000000, 40000000});
  return s;
}

// With $POLYLIMIT_DECISIONS_TRANSCRIPT set, every library script reply of
// the streams is written to that file, one line per step ("where: reply"):
// the replies depend only on the seed (give one: --gtest_random_seed or
// GTEST_RANDOM_SEED; 0 takes the clock's) and the explicit times, so the
// files of two servers must be byte-identical (tests/servers/run.sh compares
// another server's with Debian's Redis 7.0). Null when not asked for.
FILE* transcript() {
  static FILE* f = [] {
    const char* path = std::getenv("POLYLIMIT_DECISIONS_TRANSCRIPT");
    if (path == nullptr || *path == '\0') return static_cast<FILE*>(nullptr);
    FILE* out = std::fopen(path, "w");
    if (out == nullptr) throw std::runtime_error(std::string("cannot write ") + path);
    return out;
  }();
  return f;
}

// What the streams exercised, so that a test whose streams never reach a
// path cannot pass unnoticed.
struct Seen {
  int admitted = 0, denied = 0, blocked = 0, refunds_that_gave_back = 0, multi_limit_denials = 0;
  int single_admitted = 0, single_denied = 0;  // decided by a single-check script
  int frozen_ring_errors = 0;                  // streams the frozen script failed
};

// Runs `streams` random streams of `steps` calls of one algorithm through
// the frozen scripts, the library's scripts and memory://; returns the
// number of streams that diverged (each reported once, at its first
// divergence).
int run_streams(Algorithm alg, int streams, int steps, uint32_t seed_value, Seen& seen, bool transcribe = true) {
  auto old_rec = std::make_unique<Recording>(std::make_unique<pltest::LegacyTransport>(standalone()));
  auto new_rec = std::make_unique<Recording>(standalone());
  Recording& old_tap = *old_rec;
  Recording& new_tap = *new_rec;
  RedisBackend old_backend(std::move(old_rec));
  RedisBackend new_backend(std::move(new_rec));
  MemoryBackend memory;  // expiry by the real clock, like the server's
  std::mt19937_64 rng(seed_value * 1000003ull + static_cast<uint64_t>(alg));
  int diverged = 0;
  for (int s = 0; s < streams; ++s) {
    Spec spec = random_spec(rng, alg);
    // Some streams change their limits half-way on the same keys, as a
    // redeployed limiter does (the sliding log then re-reads its ring).
    const bool relimit = rng() % 5 == 0;
    const std::string tag =
        "{" + std::string(algorithm_name(alg)) + "-" + std::to_string(seed_value) + "-" + std::to_string(s) + "}";
    auto request = [&](const std::string& prefix) {
      Request rq;
      rq.limits = &spec.limits;
      for (size_t i = 0; i < spec.limits.size(); ++i)
        rq.keys.push_back(prefix + ":" + tag + (i ? ":" + std::to_string(i) : ""));
      rq.block_us = spec.block_us;
      if (spec.block_us > 0) rq.block_key = rq.keys[0] + ":block";
      return rq;
    };
    Request old_rq = request("old"), new_rq = request("new"), mem_rq = request("mem");
    int64_t max_cost = 0, gap_us = 0;
    auto limits_changed = [&] {
      max_cost = spec.limits[0].capacity();
      for (const LimitParams& p : spec.limits) max_cost = std::min(max_cost, p.capacity());
      gap_us = spec.limits[0].window_ms * 1000 / spec.limits[0].limit;  // one unit's share of the window
    };
    limits_changed();
    const int64_t window_us = spec.limits[0].window_ms * 1000;
    int64_t now = kT0 + uniform(rng, 0, 1000000000);
    int64_t remaining_before = -1;
    bool frozen_broken = false;
    std::vector<int64_t> admitted_at;  // the last few admitted checks' times
    for (int step = 0; step < steps; ++step) {
      if (relimit && step == steps / 2) {
        const Spec other = random_spec(rng, alg);
        for (size_t i = 0; i < spec.limits.size(); ++i) {
          spec.limits[i].limit = other.limits[0].limit;
          spec.limits[i].burst = alg == Algorithm::kGcra && rng() % 2 ? uniform(rng, 1, 2 * other.limits[0].limit) : 0;
        }
        limits_changed();
      }
      // The clock: an edge, the same microsecond, a little, about a unit's
      // share, up to a window, several windows, or a step back (a client
      // clock).
      const int t = static_cast<int>(rng() % 100);
      if (t < 15 && !admitted_at.empty()) {
        // An edge, give or take a microsecond: where an admitted unit leaves
        // the window, a window starts, or a GCRA emission falls due.
        const int64_t past = admitted_at[rng() % admitted_at.size()];
        const int e = static_cast<int>(rng() % 3);
        const int64_t unit = spec.limits[0].interval_us();
        if (e == 0)
          now = past + window_us;
        else if (e == 1)
          now = (now / window_us + 1) * window_us;
        else
          now = past + uniform(rng, 1, 2 * spec.limits[0].capacity()) * unit;
        now += uniform(rng, -1, 1);
      } else if (t < 20) {
      } else if (t < 45) {
        now += uniform(rng, 1, 1000);
      } else if (t < 75) {
        now += uniform(rng, 1, 2 * gap_us);
      } else if (t < 90) {
        now += uniform(rng, 1, window_us);
      } else if (t < 96) {
        now += uniform(rng, window_us, 3 * window_us);
      } else {
        now -= uniform(rng, 1, window_us / 4);
      }
      const int o = static_cast<int>(rng() % 100);
      const Op op = o < 65 ? Op::kCheck : o < 80 ? Op::kPeek : Op::kRefund;
      const int c = static_cast<int>(rng() % 100);
      int64_t cost = c < 50 ? 1 : c < 85 ? uniform(rng, 1, max_cost) : max_cost;
      for (Request* rq : {&old_rq, &new_rq, &mem_rq}) {
        rq->op = op;
        rq->cost = cost;
        rq->now_us = now;
      }
      const char* op_name = op == Op::kCheck ? "check" : op == Op::kPeek ? "peek" : "refund";
      std::string where = "stream " + std::to_string(s) + " (" + spec.describe() + ") step " + std::to_string(step) +
                          ": " + op_name + " cost " + std::to_string(cost) + " at T0+" + std::to_string(now - kT0);
      // The frozen sliding log (the last release's) refuses its own ring
      // ("not a sliding log ring") on some streams whose limit grows: it
      // asked a ring of more than 128 slots for every slot, and after a
      // denial pruned a re-read ring it wrote a head that did not follow the
      // entries (both fixed since: SlidingLogRing.* below). The library's
      // scripts go on; such a stream is not compared with the frozen one
      // any more.
      if (!frozen_broken) {
        try {
          old_backend.evaluate(old_rq);
        } catch (const Error& e) {
          if (std::string(e.what()).find("not a sliding log ring") == std::string::npos) throw;
          std::printf("the frozen script refused its own ring at %s\n", where.c_str());
          frozen_broken = true;
          ++seen.frozen_ring_errors;
        }
      }
      Decision nd = new_backend.evaluate(new_rq);
      Decision md = memory.evaluate(mem_rq);
      if (FILE* out = transcribe ? transcript() : nullptr) {
        std::fprintf(out, "%s %s: %s\n", algorithm_name(alg), where.c_str(), new_tap.last.c_str());
        std::fflush(out);
      }
      // The frozen script's other face of that head bug: a ring it pruned
      // after a change of limits may stay readable, with a head that does
      // not follow its entries, and then counts entries that left the
      // window. That shows as a frozen ring whose header differs from the
      // library's ring of the same calls, while the library's decision is
      // memory://'s; only then is the stream no longer compared with the
      // frozen one.
      if (!frozen_broken && old_tap.last != new_tap.last) {
        bool lost_track = false;
        if (alg == Algorithm::kSlidingLog && relimit && step >= steps / 2 && decision_text(nd) == decision_text(md))
          for (size_t i = 0; i < old_rq.keys.size() && !lost_track; ++i)
            lost_track = server().command({"GETRANGE", old_rq.keys[i], "0", "11"}) !=
                         server().command({"GETRANGE", new_rq.keys[i], "0", "11"});
        if (!lost_track) {
          ADD_FAILURE() << where << "\n  frozen scripts: " << old_tap.last << "\n  library scripts: " << new_tap.last
                        << "\n  memory://: " << decision_text(md);
          ++diverged;
          break;
        }
        std::printf("the frozen script's ring lost track of its entries at %s\n", where.c_str());
        frozen_broken = true;
        ++seen.frozen_ring_errors;
      }
      // After a change of limits too: the sliding log's ring re-read for
      // another limit once answered `remaining` one apart from memory://
      // (its head after a prune, fixed since: SlidingLogRing.*).
      if (decision_text(nd) != decision_text(md)) {
        ADD_FAILURE() << where << "\n  redis:  " << decision_text(nd) << "\n  memory: " << decision_text(md);
        ++diverged;
        break;
      }
      if (op == Op::kCheck) {
        if (nd.allowed) {
          admitted_at.push_back(now);
          if (admitted_at.size() > 8) admitted_at.erase(admitted_at.begin());
        }
        ++(nd.allowed ? seen.admitted : seen.denied);
        if (new_tap.last_single) ++(nd.allowed ? seen.single_admitted : seen.single_denied);
        // A block denies with a wait beyond any window of the spec.
        if (!nd.allowed && spec.block_us > 0 && nd.retry_after_ms * 1000 > window_us) ++seen.blocked;
        if (!nd.allowed && spec.limits.size() > 1) ++seen.multi_limit_denials;
      }
      if (op == Op::kRefund && remaining_before >= 0 && nd.remaining > remaining_before) ++seen.refunds_that_gave_back;
      remaining_before = nd.remaining;
    }
  }
  return diverged;
}

}  // namespace

// The frozen texts are what SHA1SUMS says (the library's SHA1s at the time they
// were frozen), so the baseline cannot move unnoticed.
TEST(ScriptDiff, FrozenScriptsMatchTheirSha1) {
  for (const char* name : {"sliding_log", "sliding_counter", "fixed_window", "gcra"}) {
    const scripts::Script& s = pltest::legacy_script(name);
    EXPECT_EQ(server().command({"SCRIPT", "LOAD", s.source}), s.sha1) << name;
  }
}

// The frozen scripts really run through LegacyTransport (not the library's):
// the server holds their SHA1 after one call, whatever the library's is.
TEST(ScriptDiff, LegacyTransportRunsTheFrozenText) {
  server().command({"SCRIPT", "FLUSH"});
  RedisBackend old_backend(std::make_unique<pltest::LegacyTransport>(standalone()));
  const std::vector<LimitParams> limits = {{Algorithm::kGcra, 10, 60000, 0}};
  Request rq;
  rq.limits = &limits;
  rq.keys = {"legacy:{probe}"};
  rq.now_us = kT0;
  EXPECT_TRUE(old_backend.evaluate(rq).allowed);
  EXPECT_EQ(server().command({"SCRIPT", "EXISTS", pltest::legacy_script("gcra").sha1}), "1");
}

// The library sends only what its scripts read; the frozen scripts get their
// own layout back, with the values they never read as "0".
TEST(ScriptDiff, LegacyArgsRestoreTheFrozenLayout) {
  auto text = [](const Argv& a) {
    std::string s;
    for (std::string_view x : a) s += "[" + std::string(x) + "]";
    return s;
  };
  EXPECT_EQ(text(pltest::legacy_args("sliding_log", {"check", "2", "", "10", "60000000", "5", "1000"})),
            "[check][2][][][0][10][60000000][0][0][5][1000][0][0]");
  EXPECT_EQ(text(pltest::legacy_args("fixed_window", {"peek", "1", "17", "10", "60000000", "15000000"})),
            "[peek][1][17][][15000000][10][60000000][0][0]");
  EXPECT_EQ(text(pltest::legacy_args("gcra", {"check", "1", "", "60000000", "20", "6000000", "15000000"})),
            "[check][1][][][15000000][0][60000000][20][6000000]");
  EXPECT_THROW(pltest::legacy_args("gcra", {"check", "1", "", "60000000", "20", "6000000", "1", "2"}),
               std::runtime_error);
}

// The library's ARGV for one limit: GCRA without the limit, the others
// without capacity and interval, block_us only when there is a block.
TEST(ScriptDiff, LibrarySendsOnlyWhatTheScriptsRead) {
  struct Capture : Transport {
    ReplyPtr run_script(const scripts::Script&, const Argv&, const Argv& args) override {
      last.clear();
      for (std::string_view x : args) last += "[" + std::string(x) + "]";
      throw Error(ErrorCode::kInternal, "captured");
    }
    std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                      const Durability& = {}, std::vector<Ack>* = nullptr) override {
      run_script(script, calls.at(0).keys, calls.at(0).args);
      return {};
    }
    ReplyPtr run_command(std::string_view, const Argv&) override { return nullptr; }
    long noscript_reloads() const override { return 0; }
    void close() override {}
    long evicting_nodes() override { return 0; }
    long connect_attempts() override { return 0; }
    int command_timeout_ms() const override { return 1000; }
    std::string last;
  };
  auto sent = [](Algorithm alg, int64_t block_us) {
    auto t = std::make_unique<Capture>();
    Capture* c = t.get();
    RedisBackend b(std::move(t));
    const std::vector<LimitParams> limits = {{alg, 10, 60000, 0}};
    Request rq;
    rq.limits = &limits;
    rq.keys = {"k"};
    rq.block_us = block_us;
    rq.block_key = "b";
    EXPECT_THROW(b.evaluate(rq), Error);
    return c->last;
  };
  EXPECT_EQ(sent(Algorithm::kSlidingLog, 0), "[check][1][][10][60000000]");
  EXPECT_EQ(sent(Algorithm::kFixedWindow, 15000000), "[check][1][][10][60000000][15000000]");
  EXPECT_EQ(sent(Algorithm::kGcra, 0), "[check][1][][60000000][10][6000000]");
}

class ScriptDiffStreams : public ::testing::TestWithParam<Algorithm> {};

TEST_P(ScriptDiffStreams, LibraryScriptsDecideAsFrozenOnesAndMemory) {
  const uint32_t s = seed();
  SCOPED_TRACE("seed " + std::to_string(s) + " (replay: --gtest_random_seed=" + std::to_string(s) + ")");
  Seen seen;
  EXPECT_EQ(run_streams(GetParam(), 60, 200, s, seen), 0);
  EXPECT_GT(seen.admitted, 100);
  EXPECT_GT(seen.denied, 100);
  EXPECT_GT(seen.blocked, 0);
  EXPECT_GT(seen.multi_limit_denials, 0);
  EXPECT_GT(seen.refunds_that_gave_back, 0);
  // One check of one limit without a block runs the algorithm's
  // single-check script (core/scripts/single/): both paths are compared.
  EXPECT_GT(seen.single_admitted, 100);
  EXPECT_GT(seen.single_denied, 100);
  // The frozen script's bugs need a sliding log whose limit grows: a few
  // streams at most.
  EXPECT_LE(seen.frozen_ring_errors, GetParam() == Algorithm::kSlidingLog ? 3 : 0);
  std::printf(
      "%s: %d admitted, %d denied (%d blocked, %d multi-limit), %d refunds gave units back; "
      "single-check script: %d admitted, %d denied\n",
      algorithm_name(GetParam()), seen.admitted, seen.denied, seen.blocked, seen.multi_limit_denials,
      seen.refunds_that_gave_back, seen.single_admitted, seen.single_denied);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, ScriptDiffStreams,
                         ::testing::Values(Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow,
                                           Algorithm::kGcra),
                         [](const ::testing::TestParamInfo<Algorithm>& i) {
                           return std::string(algorithm_name(i.param));
                         });

// Fixed window and sliding counter set a key's expiry only when a write
// starts its window (with the server's clock the deadline is the window's
// end, fixed for the whole window): every key still has one, never past the
// end of the window (fixed) or of the one after it (counter).
TEST(ScriptExpiry, ServerClockKeysKeepTheirWindowsExpiry) {
  RedisBackend backend(standalone());
  for (Algorithm alg : {Algorithm::kFixedWindow, Algorithm::kSlidingCounter}) {
    const std::vector<LimitParams> limits = {{alg, 100, 60000, 0}, {alg, 1000, 3600000, 0}};
    Request rq;
    rq.limits = &limits;
    const std::string key = std::string("expiry:{") + algorithm_name(alg) + "}";
    rq.keys = {key, key + ":1"};
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(backend.evaluate(rq).allowed) << algorithm_name(alg);
    const long long windows = alg == Algorithm::kFixedWindow ? 1 : 2;
    for (size_t i = 0; i < limits.size(); ++i) {
      long long pttl = server().integer({"PTTL", rq.keys[i]});
      EXPECT_GT(pttl, 0) << rq.keys[i];
      EXPECT_LE(pttl, windows * limits[i].window_ms) << rq.keys[i];
    }
  }
}

// Every way the sliding log writes an admission sets the key's expiry to the
// window of the newest unit: a fresh ring (one SET ... PX), a whole small
// ring (one SET ... PX), a large ring (SETRANGEs, PEXPIRE), a ring rewritten
// for a larger limit (SET KEEPTTL, PEXPIRE). Each admission follows a PEXPIRE
// of one minute, which it must replace with the hour's window. Through the
// single-check script and the general one.
TEST(ScriptExpiry, SlidingLogAdmissionsSetTheWindowsExpiry) {
  RedisBackend single(standalone());
  RedisBackend general(std::make_unique<GeneralScripts>(standalone()));
  constexpr int64_t kHourMs = 3600000;
  for (RedisBackend* backend : {&single, &general}) {
    const std::string which = backend == &single ? "single-" : "general-";
    auto admit = [&](const std::string& name, int64_t limit, bool shorten_first) {
      const std::string key = "expiry:{" + which + name + "}";
      const std::vector<LimitParams> limits = {{Algorithm::kSlidingLog, limit, kHourMs, 0}};
      Request rq;
      rq.limits = &limits;
      rq.keys = {key};
      if (shorten_first) EXPECT_EQ(server().integer({"PEXPIRE", key, "60000"}), 1) << key;
      EXPECT_TRUE(backend->evaluate(rq).allowed) << key;
      const long long pttl = server().integer({"PTTL", key});
      EXPECT_GT(pttl, kHourMs / 2) << key << ", limit " << limit;
      EXPECT_LE(pttl, kHourMs) << key << ", limit " << limit;
    };
    admit("small", 10, false);  // fresh ring of 10 slots
    admit("small", 10, true);   // the whole ring in hand
    admit("large", 1000, false);
    admit("large", 1000, true);  // slot and header SETRANGEs
    admit("small", 20, true);    // the 10-slot ring re-read for 20
  }
}

// A single-check script sets the same expiry as its algorithm's general
// script, with the server's clock and with caller-supplied time (which adds
// one window of slack): the same admissions go to a key through the single
// script (one limit, no block) and to another through the general one (a
// block, which only denials use), and both keys' PTTLs must agree.
TEST(ScriptExpiry, SingleCheckScriptsSetTheGeneralScriptsExpiry) {
  RedisBackend backend(standalone(), false);
  for (Algorithm alg :
       {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow, Algorithm::kGcra}) {
    for (bool caller_time : {false, true}) {
      const std::vector<LimitParams> limits = {{alg, 100, 60000, 0}};
      const std::string tag = std::string(algorithm_name(alg)) + (caller_time ? "-caller" : "-server");
      Request single, general;
      for (Request* rq : {&single, &general}) rq->limits = &limits;
      single.keys = {"ttl:{" + tag + "}:single"};
      general.keys = {"ttl:{" + tag + "}:general"};
      general.block_us = 1000000;
      general.block_key = general.keys[0] + ":block";
      const int64_t t0 =
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      for (int i = 0; i < 3; ++i) {
        // The two TTLs are set and read at slightly different moments: they
        // may differ by the time all four calls took (a loaded machine can
        // stretch it), and by no more than a few ms else.
        const auto started = std::chrono::steady_clock::now();
        for (Request* rq : {&single, &general}) {
          rq->cost = 1 + i;
          rq->now_us = caller_time ? t0 + 1000 * i : kServerTime;
          ASSERT_TRUE(backend.evaluate(*rq).allowed) << tag;
        }
        const long long a = server().integer({"PTTL", single.keys[0]});
        const long long b = server().integer({"PTTL", general.keys[0]});
        const long long took_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
        EXPECT_GT(b, 0) << tag;
        EXPECT_NEAR(a, b, 5 + took_ms) << tag << ", admission " << i;
      }
    }
  }
}

// A ring written for a smaller limit is re-read as a list and written again
// whole, entries in slots 0..used-1. When a denial forgets entries that left
// the window, the header written must still say where they are (head =
// used % size): the last release wrote the head from before the prune, and
// the next check refused the ring. Both the single-check script (which reads
// a ring above 256 slots in blocks) and the general one are run.
TEST(SlidingLogRing, APrunedRingReReadForALargerLimitStaysReadable) {
  RedisBackend single(standalone(), false);
  RedisBackend general(std::make_unique<GeneralScripts>(standalone()), false);
  for (RedisBackend* backend : {&single, &general}) {
    for (const auto& [small, large] : std::vector<std::pair<int64_t, int64_t>>{{10, 200}, {129, 1000}}) {
      const std::string key = std::string("ring:{grow-") + (backend == &single ? "single-" : "general-") +
                              std::to_string(small) + "-" + std::to_string(large) + "}";
      const std::vector<LimitParams> before = {{Algorithm::kSlidingLog, small, 60000, 0}};
      const std::vector<LimitParams> after = {{Algorithm::kSlidingLog, large, 60000, 0}};
      Request rq;
      rq.keys = {key};
      rq.limits = &before;
      auto check = [&](int64_t at_s, int64_t cost) {
        rq.now_us = kT0 + at_s * 1000000;
        rq.cost = cost;
        return backend->evaluate(rq);
      };
      ASSERT_TRUE(check(0, 1).allowed) << key;
      ASSERT_TRUE(check(30, small - 1).allowed) << key;
      rq.limits = &after;
      // The first unit has left the window: this denial prunes it and
      // rewrites the ring at the larger size.
      EXPECT_FALSE(check(61, large).allowed) << key;
      const std::string header = server().command({"GETRANGE", key, "0", "11"});
      ASSERT_EQ(header.size(), 12u) << key;
      auto u32 = [&](int at) {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(header[at + i]);
        return static_cast<int64_t>(v);
      };
      EXPECT_EQ(u32(4), small - 1) << key << ": used";
      EXPECT_EQ(u32(8), large) << key << ": size";
      EXPECT_EQ(u32(0), (small - 1) % large) << key << ": head";
      const Decision d = check(62, 1);
      EXPECT_TRUE(d.allowed) << key;
      EXPECT_EQ(d.remaining, large - small) << key;
    }
  }
}

// A ring of more than 128 slots is not written whole: it holds the slots
// written so far. Re-read for a larger limit, it must give its entries (the
// last release asked for every slot and refused the ring).
TEST(SlidingLogRing, APartlyWrittenRingReReadForALargerLimitStaysReadable) {
  RedisBackend single(standalone(), false);
  RedisBackend general(std::make_unique<GeneralScripts>(standalone()), false);
  for (RedisBackend* backend : {&single, &general}) {
    for (int64_t large : {200, 1000}) {  // read whole, read in blocks
      const std::string key =
          std::string("ring:{partly-") + (backend == &single ? "single-" : "general-") + std::to_string(large) + "}";
      const std::vector<LimitParams> before = {{Algorithm::kSlidingLog, 129, 60000, 0}};
      const std::vector<LimitParams> after = {{Algorithm::kSlidingLog, large, 60000, 0}};
      Request rq;
      rq.keys = {key};
      rq.limits = &before;
      rq.now_us = kT0;
      rq.cost = 50;
      ASSERT_TRUE(backend->evaluate(rq).allowed) << key;
      EXPECT_EQ(server().integer({"STRLEN", key}), 12 + 8 * 50) << key;
      rq.limits = &after;
      rq.now_us = kT0 + 1000000;
      rq.cost = 1;
      const Decision d = backend->evaluate(rq);
      EXPECT_TRUE(d.allowed) << key;
      EXPECT_EQ(d.remaining, large - 51) << key;
    }
  }
}

// A new ring is written in one SET (with its expiry) when it is small or its
// first admission fits one 128-slot piece; the frozen scripts wrote a ring
// above 128 slots with SETRANGEs. The stored bytes must be the same: a small
// ring whole with its free slots, a large one up to its last entry (in one
// SET, or in pieces past 128 units), then a second admission on top.
TEST(SlidingLogRing, NewRingsHoldTheFrozenScriptsBytes) {
  RedisBackend legacy(std::make_unique<pltest::LegacyTransport>(standalone()), false);
  RedisBackend single(standalone(), false);
  RedisBackend general(std::make_unique<GeneralScripts>(standalone()), false);
  for (const auto& [limit, cost] : std::vector<std::pair<int64_t, int64_t>>{
           {10, 1}, {10, 10}, {128, 100}, {129, 1}, {1000, 1}, {1000, 128}, {1000, 129}, {1000, 1000}}) {
    const std::vector<LimitParams> limits = {{Algorithm::kSlidingLog, limit, 60000, 0}};
    const std::string tag = std::to_string(limit) + "-" + std::to_string(cost);
    std::string want;
    for (RedisBackend* backend : {&legacy, &single, &general}) {
      const std::string which = backend == &legacy ? "legacy" : backend == &single ? "single" : "general";
      Request rq;
      rq.limits = &limits;
      rq.keys = {"ring:{bytes-" + which + "-" + tag + "}"};
      std::string after_each;
      for (int64_t at_s : {0, 1}) {
        rq.now_us = kT0 + at_s * 1000000;
        rq.cost = at_s == 0 ? cost : 1;
        EXPECT_EQ(backend->evaluate(rq).allowed, at_s == 0 || cost < limit) << which << " " << tag;
        after_each += server().command({"GET", rq.keys[0]}) + "|";
        EXPECT_GT(server().integer({"PTTL", rq.keys[0]}), 60000) << which << " " << tag;
      }
      if (backend == &legacy)
        want = after_each;
      else
        EXPECT_TRUE(after_each == want) << which << " " << tag << ": " << after_each.size()
                                        << " bytes, the frozen scripts " << want.size();
    }
  }
}

// Rolling upgrades: during one, app servers of the last release (the frozen
// scripts, one call per check) and of this version (the library's scripts,
// coalescing on) check the same keys at once. The storage layout did not
// change, so together they admit exactly the limit: no over-admission, no
// script error.
class RollingUpgrade : public ::testing::TestWithParam<Algorithm> {};

TEST_P(RollingUpgrade, OldAndNewClientsOnOneKeyAdmitExactlyTheLimit) {
  constexpr int64_t kLimit = 300;
  RedisBackend old_backend(std::make_unique<pltest::LegacyTransport>(standalone()), false);
  RedisBackend new_backend(standalone(), true);
  const std::vector<LimitParams> limits = {{GetParam(), kLimit, 3600 * 1000, 0}};
  const std::string key = std::string("upgrade:") + algorithm_name(GetParam());
  new_backend.reset(key);
  std::atomic<int64_t> admitted{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      RedisBackend& b = t % 2 ? old_backend : new_backend;
      Request rq;
      rq.limits = &limits;
      rq.keys = {key};
      for (int denied = 0; denied < 3;) {
        try {
          if (b.evaluate(rq).allowed)
            ++admitted;
          else
            ++denied;
        } catch (const std::exception&) {
          ++errors;
          return;
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(admitted.load(), kLimit);
  EXPECT_GT(new_backend.coalesced(), 0);  // the new clients did coalesce meanwhile
  EXPECT_EQ(old_backend.coalesced(), 0);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, RollingUpgrade,
                         ::testing::Values(Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow,
                                           Algorithm::kGcra),
                         [](const ::testing::TestParamInfo<Algorithm>& i) {
                           return std::string(algorithm_name(i.param));
                         });

// Every key a script reads or writes is one of the KEYS it was given, as
// servers that lock keys before running a script require (Dragonfly refuses
// an undeclared key unless told otherwise): MONITOR records each EVALSHA with
// its keys and, right after it, each command its script ran ("[0 lua]"),
// while random streams of every algorithm (multi-limit specs, blocks, peeks,
// refunds), coalesced checks and keys calls (check_many) run.
namespace {

// The quoted words of a MONITOR line, as MONITOR escapes them.
std::vector<std::string> monitor_words(const std::string& line) {
  std::vector<std::string> words;
  for (size_t i = line.find('"'); i != std::string::npos && i < line.size(); i = line.find('"', i + 1)) {
    std::string w;
    size_t j = i + 1;
    for (; j < line.size() && line[j] != '"'; ++j) {
      if (line[j] == '\\' && j + 1 < line.size()) w += line[j++];
      w += line[j];
    }
    words.push_back(w);
    i = j;
  }
  return words;
}

}  // namespace

TEST(ScriptKeys, ScriptsTouchOnlyTheirDeclaredKeys) {
  pltest::PushReader mon(server().port(), {"MONITOR"});
  polylimit::ReplyPtr ok = mon.next(std::chrono::seconds(10));
  ASSERT_TRUE(ok != nullptr && ok->type == polylimit::ReplyType::kStatus);

  Seen seen;
  for (Algorithm alg :
       {Algorithm::kSlidingLog, Algorithm::kSlidingCounter, Algorithm::kFixedWindow, Algorithm::kGcra}) {
    run_streams(alg, 6, 60, seed() + 7, seen, false);
    // Keys calls: one limit on many keys in one script call, coalesced.
    RedisBackend backend(standalone(), true);
    const std::vector<LimitParams> limits = {{alg, 3, 60000, 0}};
    std::vector<Request> batch;
    for (int i = 0; i < 12; ++i) {
      Request rq;
      rq.limits = &limits;
      rq.keys = {std::string("declared:{") + algorithm_name(alg) + "}:" + std::to_string(i % 5)};
      rq.now_us = kT0 + i;
      batch.push_back(rq);
    }
    for (const Outcome& o : backend.evaluate_many(batch)) EXPECT_FALSE(o.error);
  }
  // The last command: MONITOR shows it once everything before it.
  const std::string marker = "declared-keys-end";
  server().command({"ECHO", marker});

  const std::set<std::string> keyed = {"GET",    "SET",     "DEL",   "GETRANGE", "SETRANGE",
                                       "STRLEN", "PEXPIRE", "HMGET", "HSET"};
  std::set<std::string> declared;
  std::map<std::string, int> ran;  // what the scripts ran, by command
  int scripts = 0, undeclared = 0;
  for (;;) {
    polylimit::ReplyPtr r = mon.next(std::chrono::seconds(10));
    ASSERT_NE(r, nullptr) << "MONITOR ended before the marker";
    const std::string line(r->text());
    if (line.find(marker) != std::string::npos) break;
    const std::vector<std::string> w = monitor_words(line);
    if (w.empty()) continue;
    std::string cmd = w[0];
    std::transform(cmd.begin(), cmd.end(), cmd.begin(), ::toupper);
    if (line.find(" lua] ") == std::string::npos) {
      declared.clear();
      if ((cmd == "EVALSHA" || cmd == "EVAL") && w.size() >= 3) {
        ++scripts;
        const size_t n = std::stoul(w[2]);
        for (size_t i = 0; i < n && 3 + i < w.size(); ++i) declared.insert(w[3 + i]);
      }
      continue;
    }
    ++ran[cmd];
    if (cmd == "TIME") continue;
    if (!keyed.count(cmd)) {
      ADD_FAILURE() << "a script ran " << cmd << ", which this test does not know: " << line.substr(0, 200);
      continue;
    }
    if (w.size() < 2 || !declared.count(w[1])) {
      if (++undeclared <= 5) ADD_FAILURE() << "undeclared key: " << line.substr(0, 200);
    }
  }
  std::string summary;
  for (const auto& [cmd, n] : ran) summary += " " + cmd + " x" + std::to_string(n);
  std::printf("%d script calls ran:%s; %d undeclared keys\n", scripts, summary.c_str(), undeclared);
  EXPECT_EQ(undeclared, 0);
  EXPECT_GT(scripts, 1000);
  for (const char* cmd : {"GET", "SET", "GETRANGE", "SETRANGE", "PEXPIRE", "HMGET", "HSET"})
    EXPECT_GT(ran[cmd], 0) << cmd << " never ran: the streams missed a path";
}
