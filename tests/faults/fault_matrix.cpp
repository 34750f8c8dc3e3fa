// fault_matrix.cpp - the standing fault-injection matrix.
//
// Every scenario starts real redis-server processes (standalone, Cluster or
// Sentinel), injects one fault, and asserts for the calls made while it lasts:
//   - each call returns within its deadline (connect + command timeout, plus a
//     margin) with the documented status;
//   - the failure policy applies as documented (error / open / closed);
//   - nothing is over-admitted: the decisions that admitted are counted and
//     compared with the state stored in Redis, read through a separate
//     connection, after the key was driven to its limit;
//   - the client recovers once the fault ends (the time is measured).
// It prints one row per scenario and, with --out FILE, writes the table as
// Markdown (docs/reliability.md). Exit status 1 when a scenario failed that
// is not listed as a known failure.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "faults_common.h"
#include "polylimit/client.h"
#include "polylimit/limiter.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "transport/crc16.h"

using namespace polylimit;
using namespace std::chrono_literals;
using faults::Call;
using faults::Clock;

namespace {

// Client settings of every scenario: short, so that the matrix is quick, and
// the deadline every call is held to.
constexpr int kConnectTimeoutMs = 200;
constexpr int kCommandTimeoutMs = 200;
// Scheduling noise on a loaded 2-core machine; a hang is far beyond it.
constexpr double kMarginMs = 150;
constexpr double kDeadlineMs = kConnectTimeoutMs + kCommandTimeoutMs;
constexpr int64_t kHour = 3600 * 1000;

// ------------------------------------------------------------ raw commands

// One command on a fresh connection to 127.0.0.1:port (the core's own,
// pltest::raw_command); the reply as text (arrays joined by '\n', errors as
// their text); "" when unreachable.
std::string raw(int port, const std::vector<std::string>& argv, int timeout_ms = 1000) {
  polylimit::ReplyPtr r;
  try {
    r = pltest::raw_command(port, argv, timeout_ms);
  } catch (const polylimit::Error&) {
    return "";
  }
  std::string out;
  if (r->type == polylimit::ReplyType::kInteger) {
    out = std::to_string(r->integer);
  } else if (r->type == polylimit::ReplyType::kArray) {
    for (size_t i = 0; i < r->elements; ++i) {
      if (i) out += "\n";
      const polylimit::Reply* e = r->element[i];
      out += e->type == polylimit::ReplyType::kInteger ? std::to_string(e->integer) : std::string(e->text());
    }
  } else if (r->str) {
    out.assign(r->str, r->len);
  }
  return out;
}

long long ring(int port, const std::string& storage_key) {
  std::string s = raw(port, pltest::ring_units(storage_key));
  try {
    return std::stoll(s);
  } catch (...) {
    return -1;
  }
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

pid_t pid_at(int port) {
  std::string info = raw(port, {"INFO", "server"});
  std::string v = pltest::info_field(info, "process_id");
  return v.empty() ? -1 : static_cast<pid_t>(std::stol(v));
}

std::string fmt(double v, int prec = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

// ------------------------------------------------------------ rows

const char* policy_name(FailurePolicy p) {
  switch (p) {
    case FailurePolicy::kError: return "error";
    case FailurePolicy::kOpen: return "open";
    case FailurePolicy::kClosed: return "closed";
    default: return "local";
  }
}

struct Row {
  std::string deployment, scenario, injected;
  std::string expected;              // code; what each policy answers
  std::set<std::string> seen;        // "policy: outcome" of calls made during the fault
  double max_ms = 0;                 // slowest call during the fault and the recovery
  double deadline_ms = kDeadlineMs;  // what calls are held to (plus kMarginMs)
  double recovery_ms = -1;           // fault over -> first real answer; -1: not applicable
  long admitted = 0, stored = 0, limit = 0, over = 0;
  bool state_checked = false;
  std::vector<std::string> failures;
  std::vector<std::string> notes;
  std::string known;  // a known failure: why
  bool passed() const { return failures.empty(); }
};

std::vector<Row> g_rows;

// Known failures: scenario -> what is wrong. A row that fails and is listed
// here is reported as a known failure (not hidden, but it does not fail the
// run); a listed row that passes says so, so that the entry gets removed.
const std::map<std::string, std::string> kKnownFailures = {};

// One scenario's bookkeeping.
class Scenario {
 public:
  Scenario(std::string deployment, std::string name, std::string injected, std::string expected) {
    row_.deployment = std::move(deployment);
    row_.scenario = std::move(name);
    row_.injected = std::move(injected);
    row_.expected = std::move(expected);
    std::printf("\n--- %s: %s\n", row_.deployment.c_str(), row_.scenario.c_str());
    std::fflush(stdout);
  }
  Row& row() { return row_; }

  void expect(bool ok, const std::string& what) {
    if (!ok) {
      row_.failures.push_back(what);
      std::printf("    FAIL: %s\n", what.c_str());
    }
  }
  void note(const std::string& n) {
    row_.notes.push_back(n);
    std::printf("    note: %s\n", n.c_str());
  }

  // Bookkeeping of one call (during the fault or the recovery).
  // Calls during the fault are held to the row's deadline; recovery calls
  // (which may have to reconnect) to connect + command timeout.
  void timing(const Call& c, const std::string& what, double deadline_ms = -1) {
    if (deadline_ms < 0) deadline_ms = row_.deadline_ms;
    row_.max_ms = std::max(row_.max_ms, c.ms);
    expect(c.ms <= deadline_ms + kMarginMs,
           what + " took " + fmt(c.ms) + " ms (deadline " + fmt(deadline_ms) + " ms + margin)");
  }

  // A call during the fault through a limiter with `policy`: an outage code
  // in `codes` must come back as that error (policy error), as an admission
  // (open) or as a denial (closed), all marked degraded; a non-outage code
  // is never hidden by a policy. `msg_part`, when given, must appear in the
  // error message (names the fault, e.g. "LOADING"). Returns the call.
  Call during(Limiter& l, const std::string& key, const std::set<ErrorCode>& codes, const std::string& msg_part = "") {
    FailurePolicy policy = l.options().failure_policy;
    Call c = faults::check(l, key);
    std::string tag = policy_name(policy);
    std::string text = tag + ": " + c.outcome();
    if (!c.ok) text += " (\"" + c.message.substr(0, 100) + (c.message.size() > 100 ? "...\")" : "\")");
    row_.seen.insert(text);
    std::printf("    %-6s %-26s %6.1f ms  %s\n", tag.c_str(), c.outcome().c_str(), c.ms, c.message.c_str());
    timing(c, tag + " call");
    bool outage = std::all_of(codes.begin(), codes.end(), [](ErrorCode e) { return is_outage(e); });
    if (policy == FailurePolicy::kError || !outage) {
      expect(!c.ok && codes.count(c.code), tag + ": expected an error, got " + c.outcome());
      if (!c.ok && !msg_part.empty()) last_messages_ += c.message + "\n";
    } else if (policy == FailurePolicy::kOpen) {
      expect(c.ok && c.decision.allowed && c.decision.degraded,
             "open: expected a degraded admission, got " + c.outcome());
    } else if (policy == FailurePolicy::kClosed) {
      expect(c.ok && !c.decision.allowed && c.decision.degraded,
             "closed: expected a degraded denial, got " + c.outcome());
    }
    if (c.ok && c.decision.allowed && !c.decision.degraded) admitted_[&l][key]++;
    return c;
  }
  // The error messages of policy-error calls must name the fault.
  void messages_name(const std::string& part) {
    expect(last_messages_.find(part) != std::string::npos, "no error message names \"" + part + "\"");
    last_messages_.clear();
  }

  // After the fault: calls until one gets a real (not degraded) answer; the
  // time from `fault_over` to that answer is the recovery time.
  void recover(Limiter& l, const std::string& key, Clock::time_point fault_over,
               std::chrono::milliseconds timeout = 20s) {
    for (;;) {
      Call c = faults::check(l, key);
      timing(c, "recovery call", kDeadlineMs);
      if (c.ok && !c.decision.degraded) {
        if (c.decision.allowed) admitted_[&l][key]++;
        row_.recovery_ms = std::max(row_.recovery_ms, faults::ms_since(fault_over));
        std::printf("    recovered after %.0f ms\n", faults::ms_since(fault_over));
        return;
      }
      if (Clock::now() - fault_over > timeout) {
        expect(false,
               "no recovery within " + std::to_string(timeout.count()) + " ms: " + c.outcome() + " " + c.message);
        return;
      }
      std::this_thread::sleep_for(5ms);  // pacing between probes, not synchronisation
    }
  }

  // Counts an admission made outside during()/recover() (e.g. before the fault).
  void admitted(Limiter& l, const std::string& key, long n) { admitted_[&l][key] += n; }

  // Checks the key until a real denial, then compares what this process was
  // told it admitted with the state in Redis (`stored(i)`: units of limit i,
  // read on a separate connection). Over-admission: admitted beyond a limit,
  // or admitted but not stored.
  void drain_and_verify(Limiter& l, const std::string& key, const std::function<long long(size_t)>& stored) {
    long& admitted = admitted_[&l][key];
    for (int i = 0; i < 10000; ++i) {
      Call c = faults::check(l, key);
      if (!c.ok) {
        expect(false, "drain: " + c.outcome() + " " + c.message);
        break;
      }
      if (c.decision.degraded) continue;
      if (!c.decision.allowed) break;
      ++admitted;
    }
    const auto& limits = l.limits();
    for (size_t i = 0; i < limits.size(); ++i) {
      long long s = stored(i);
      long lim = static_cast<long>(limits[i].limit);
      long over = std::max(0L, admitted - lim) + std::max(0L, admitted - static_cast<long>(s));
      std::printf("    limit %zu: admitted %ld, stored %lld, limit %ld, over-admitted %ld\n", i, admitted, s, lim,
                  over);
      expect(s >= 0 && s <= lim, "stored units " + std::to_string(s) + " exceed the limit " + std::to_string(lim));
      expect(over == 0, "over-admitted by " + std::to_string(over));
      if (s > admitted && i == 0) note(std::to_string(s - admitted) + " unit(s) consumed by calls that got an error");
      row_.over += over;
      if (!row_.state_checked || i == 0) {
        row_.admitted += i == 0 ? admitted : 0;
        row_.stored += i == 0 ? s : 0;
        row_.limit += i == 0 ? lim : 0;
      }
    }
    row_.state_checked = true;
  }

  ~Scenario() {
    auto known = kKnownFailures.find(row_.scenario);
    if (known != kKnownFailures.end()) {
      if (row_.passed())
        note("listed as a known failure but passed: remove it from kKnownFailures");
      else
        row_.known = known->second;
    }
    std::printf("    => %s\n", row_.passed() ? "PASS" : (row_.known.empty() ? "FAIL" : "KNOWN FAILURE"));
    std::fflush(stdout);
    g_rows.push_back(row_);
  }

 private:
  Row row_;
  std::map<const Limiter*, std::map<std::string, long>> admitted_;
  std::string last_messages_;
};

std::shared_ptr<Client> open_client(const std::string& url, int pool_size = 4) {
  ClientOptions co;
  co.pool.size = pool_size;
  co.pool.connect_timeout_ms = kConnectTimeoutMs;
  co.pool.command_timeout_ms = kCommandTimeoutMs;
  co.pool.acquire_timeout_ms = kCommandTimeoutMs;
  return Client::open(url, co);
}

LimiterOptions limiter_options(const std::string& prefix, FailurePolicy p, std::vector<LimitParams> limits) {
  LimiterOptions o;
  o.prefix = prefix;
  o.failure_policy = p;
  o.limits = std::move(limits);
  return o;
}

// One limiter per policy on one client, each under its own prefix.
struct Trio {
  Limiter error, open, closed;
  Trio(const std::shared_ptr<Client>& c, const std::string& prefix, std::vector<LimitParams> limits)
      : error(c, limiter_options(prefix + "-e", FailurePolicy::kError, limits)),
        open(c, limiter_options(prefix + "-o", FailurePolicy::kOpen, limits)),
        closed(c, limiter_options(prefix + "-c", FailurePolicy::kClosed, limits)) {}
  // One call of each during the fault.
  void during(Scenario& s, const std::string& key, const std::set<ErrorCode>& codes, const std::string& msg = "",
              int error_calls = 2) {
    for (int i = 0; i < error_calls; ++i) s.during(error, key, codes, msg);
    s.during(open, key, codes);
    s.during(closed, key, codes);
    if (!msg.empty()) s.messages_name(msg);
  }
};

const std::string kOutageExpect = "; open: admitted (degraded); closed: denied (degraded)";

// ------------------------------------------------------------ standalone

void standalone_loading() {
  Scenario s("standalone", "server loading its data (`LOADING`)",
             "10 000 keys saved to RDB, restart with `key-load-delay`", "EUNAVAILABLE" + kOutageExpect);
  pltest::RedisServer server({"--key-load-delay", "100", "--loading-process-events-interval-bytes", "1024"});
  raw(server.port(), {"EVAL", "for i = 1, 10000 do redis.call('SET', 'filler:' .. i, 'x') end return 1", "0"}, 5000);
  auto c = open_client(server.url());
  Trio t(c, "loading", {{Algorithm::kSlidingLog, 5, kHour}});
  for (int i = 0; i < 2; ++i) s.admitted(t.error, "k", faults::check(t.error, "k").decision.allowed ? 1 : 0);
  s.expect(raw(server.port(), {"SAVE"}, 10000) == "OK", "SAVE failed");
  server.stop();
  server.start();  // returns once the server answers anything: LOADING
  s.expect(starts_with(raw(server.port(), {"PING"}), "LOADING"), "the server was not loading when the calls ran");
  t.during(s, "k", {ErrorCode::kUnavailable}, "LOADING");
  s.expect(starts_with(raw(server.port(), {"PING"}), "LOADING"), "loading ended during the calls: too fast to test");
  Clock::time_point loaded;
  s.expect(faults::wait_until([&] { return raw(server.port(), {"PING"}) == "PONG"; }, 30s, 5ms), "never loaded");
  loaded = Clock::now();
  s.recover(t.error, "k", loaded);
  s.recover(t.open, "k", loaded);
  s.drain_and_verify(t.error, "k", [&](size_t) { return ring(server.port(), t.error.storage_key("k")); });
}

void standalone_busy() {
  Scenario s("standalone", "another tenant's long script (`BUSY`)",
             "`EVAL \"while true do end\" 0` on another connection; then `SCRIPT KILL`",
             "EUNAVAILABLE" + kOutageExpect);
  pltest::RedisServer server({"--busy-reply-threshold", "100"});
  auto c = open_client(server.url());
  Trio t(c, "busy", {{Algorithm::kSlidingLog, 5, kHour}});
  s.admitted(t.error, "k", faults::check(t.error, "k").decision.allowed ? 1 : 0);
  std::thread tenant([port = server.port()] {
    raw(port, {"EVAL", "while true do end", "0"}, 60000);  // until SCRIPT KILL
  });
  s.expect(faults::wait_until([&] { return starts_with(raw(server.port(), {"PING"}), "BUSY"); }, 10s, 5ms),
           "the server never answered BUSY");
  t.during(s, "k", {ErrorCode::kUnavailable}, "BUSY");
  s.expect(raw(server.port(), {"SCRIPT", "KILL"}) == "OK", "SCRIPT KILL failed");
  Clock::time_point killed = Clock::now();
  tenant.join();
  s.recover(t.error, "k", killed);
  s.recover(t.closed, "k", killed);
  s.drain_and_verify(t.error, "k", [&](size_t) { return ring(server.port(), t.error.storage_key("k")); });
}

void standalone_client_kill_storm() {
  Scenario s("standalone", "`CLIENT KILL TYPE normal` storm, pool size 1",
             "4 threads (2 policy error, 2 policy open) on one client with pool_size 1; "
             "`CLIENT KILL TYPE normal` every 2 ms for 1.5 s",
             "EUNAVAILABLE (connection lost) or EPOOL; open: admitted (degraded)");
  pltest::RedisServer server;
  auto c = open_client(server.url(), 1);
  Limiter err(c, limiter_options("storm-e", FailurePolicy::kError, {{Algorithm::kSlidingLog, 400, kHour}}));
  Limiter open(c, limiter_options("storm-o", FailurePolicy::kOpen, {{Algorithm::kSlidingLog, 400, kHour}}));
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, long> outcomes;
  std::map<const Limiter*, long> real_admits;
  std::vector<Call> slow;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      Limiter& l = i % 2 ? open : err;
      while (!stop.load()) {
        Call call = faults::check(l, "k");
        std::lock_guard<std::mutex> g(mu);
        outcomes[std::string(policy_name(l.options().failure_policy)) + ": " + call.outcome()]++;
        if (call.ok && call.decision.allowed && !call.decision.degraded) real_admits[&l]++;
        if (!call.ok && l.options().failure_policy == FailurePolicy::kError && call.code != ErrorCode::kUnavailable &&
            call.code != ErrorCode::kPoolExhausted)
          slow.push_back(call);  // an unexpected code
        if (call.ok && l.options().failure_policy == FailurePolicy::kOpen && !call.decision.allowed &&
            call.decision.degraded)
          slow.push_back(call);
        s.row().max_ms = std::max(s.row().max_ms, call.ms);
      }
    });
  long kills = 0, killed_clients = 0;
  auto end = Clock::now() + 1500ms;
  while (Clock::now() < end) {
    std::string r = raw(server.port(), {"CLIENT", "KILL", "TYPE", "normal"});
    ++kills;
    killed_clients += std::atol(r.c_str());
    std::this_thread::sleep_for(2ms);  // the storm's rate
  }
  Clock::time_point over = Clock::now();
  stop = true;
  for (auto& th : threads) th.join();
  long errors = 0;
  for (auto& [k, n] : outcomes) {
    s.row().seen.insert(k + " x" + std::to_string(n));
    std::printf("    %-40s x%ld\n", k.c_str(), n);
    if (starts_with(k, "error: E")) errors += n;
  }
  std::printf("    %ld CLIENT KILL commands, %ld connections killed\n", kills, killed_clients);
  s.expect(killed_clients > 0 && errors > 0, "the storm caused no errors: nothing was tested");
  for (auto& call : slow) s.expect(false, "unexpected outcome " + call.outcome() + ": " + call.message);
  s.expect(s.row().max_ms <= s.row().deadline_ms + kMarginMs, "a call took " + fmt(s.row().max_ms) + " ms");
  s.admitted(err, "k", real_admits[&err]);
  s.admitted(open, "k", real_admits[&open]);
  s.recover(err, "k", over);
  s.recover(open, "k", over);
  s.drain_and_verify(err, "k", [&](size_t) { return ring(server.port(), err.storage_key("k")); });
  s.drain_and_verify(open, "k", [&](size_t) { return ring(server.port(), open.storage_key("k")); });
}

void standalone_script_flush_batches() {
  Scenario s("standalone", "`SCRIPT FLUSH` during batches (`check_many`)",
             "2 threads, batches of 8 keys; `SCRIPT FLUSH` every 5 ms for 1.5 s", "OK: NOSCRIPT reloaded, no error");
  pltest::RedisServer server;
  auto c = open_client(server.url(), 2);
  Limiter l(c, limiter_options("flush", FailurePolicy::kError, {{Algorithm::kSlidingLog, 40, kHour}}));
  std::vector<std::string> keys;
  for (int i = 0; i < 8; ++i) keys.push_back("b" + std::to_string(i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, long> admits;
  std::map<std::string, long> outcomes;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&] {
      while (!stop.load()) {
        auto t0 = Clock::now();
        std::vector<Outcome> out;
        std::string fail;
        try {
          out = l.check_many(views, 1);
        } catch (const Error& e) {
          fail = faults::code_name(e.code()) + ": " + e.what();
        }
        double ms = faults::ms_since(t0);
        std::lock_guard<std::mutex> g(mu);
        s.row().max_ms = std::max(s.row().max_ms, ms);
        if (!fail.empty()) {
          outcomes["batch " + fail]++;
          continue;
        }
        for (size_t k = 0; k < out.size(); ++k) {
          if (out[k].error) {
            try {
              std::rethrow_exception(out[k].error);
            } catch (const Error& e) {
              outcomes["error: " + faults::code_name(e.code())]++;
              if (outcomes["error: " + faults::code_name(e.code())] == 1)
                std::printf("    first error: %s\n", e.what());
            }
          } else {
            outcomes[out[k].decision.allowed ? "error: OK admitted" : "error: OK denied"]++;
            if (out[k].decision.allowed) admits[keys[k]]++;
          }
        }
      }
    });
  auto reloads0 = c->stats().noscript_reloads;
  long flushes = 0;
  auto end = Clock::now() + 1500ms;
  while (Clock::now() < end) {
    s.expect(raw(server.port(), {"SCRIPT", "FLUSH"}) == "OK", "SCRIPT FLUSH failed");
    ++flushes;
    std::this_thread::sleep_for(5ms);  // the flush rate
  }
  Clock::time_point over = Clock::now();
  stop = true;
  for (auto& th : threads) th.join();
  long reloads = static_cast<long>(c->stats().noscript_reloads - reloads0);
  for (auto& [k, n] : outcomes) {
    s.row().seen.insert(k + " x" + std::to_string(n));
    std::printf("    %-40s x%ld\n", k.c_str(), n);
    s.expect(starts_with(k, "error: OK"), "an error during the flushes: " + k);
  }
  std::printf("    %ld SCRIPT FLUSH, %ld NOSCRIPT reloads\n", flushes, reloads);
  s.note(std::to_string(flushes) + " flushes, " + std::to_string(reloads) + " NOSCRIPT reloads");
  s.expect(reloads > 0, "no NOSCRIPT reload: the flushes were not met");
  s.expect(s.row().max_ms <= s.row().deadline_ms + kMarginMs, "a batch took " + fmt(s.row().max_ms) + " ms");
  s.recover(l, "b0", over);
  for (auto& k : keys) {
    s.admitted(l, k, admits[k]);
    s.drain_and_verify(l, k, [&](size_t) { return ring(server.port(), l.storage_key(k)); });
  }
}

void standalone_kill9_restart() {
  Scenario s("standalone", "`kill -9` and restart on the same port",
             "SIGKILL of redis-server (AOF, appendfsync always), calls, restart", "EUNAVAILABLE" + kOutageExpect);
  pltest::RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
  auto c = open_client(server.url());
  Trio t(c, "kill9", {{Algorithm::kSlidingLog, 5, kHour}});
  for (int i = 0; i < 2; ++i) s.admitted(t.error, "k", faults::check(t.error, "k").decision.allowed ? 1 : 0);
  ::kill(pltest::server_pid(server), SIGKILL);
  server.stop();  // reaps it
  t.during(s, "k", {ErrorCode::kUnavailable});
  server.start();
  Clock::time_point up = Clock::now();
  s.recover(t.error, "k", up);
  s.recover(t.closed, "k", up);
  s.drain_and_verify(t.error, "k", [&](size_t) { return ring(server.port(), t.error.storage_key("k")); });
}

void standalone_sigstop() {
  Scenario s("standalone", "`SIGSTOP` / `SIGCONT`", "SIGSTOP of redis-server during the calls, then SIGCONT",
             "ETIMEOUT" + kOutageExpect);
  s.row().deadline_ms = kCommandTimeoutMs;  // the connection is open: only the command timeout runs
  pltest::RedisServer server;
  auto c = open_client(server.url());
  Trio t(c, "stop", {{Algorithm::kSlidingLog, 5, kHour}});
  for (Limiter* l : {&t.error, &t.open, &t.closed}) faults::check(*l, "warm");  // connections open
  for (int i = 0; i < 2; ++i) s.admitted(t.error, "k", faults::check(t.error, "k").decision.allowed ? 1 : 0);
  server.pause();
  t.during(s, "k", {ErrorCode::kTimeout});
  server.resume();
  Clock::time_point resumed = Clock::now();
  s.recover(t.error, "k", resumed);
  s.recover(t.open, "k", resumed);
  s.drain_and_verify(t.error, "k", [&](size_t) { return ring(server.port(), t.error.storage_key("k")); });
}

void standalone_readonly() {
  Scenario s("standalone", "writing to a replica (`READONLY`)",
             "the URL names a replica; then `REPLICAOF NO ONE` on it", "EUNAVAILABLE" + kOutageExpect);
  pltest::RedisServer master;
  pltest::RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  s.expect(faults::wait_until(
               [&] {
                 return pltest::info_field(raw(replica.port(), {"INFO", "replication"}), "master_link_status") == "up";
               },
               10s),
           "the replica never synced");
  auto c = open_client(replica.url());
  Trio t(c, "ro", {{Algorithm::kSlidingLog, 5, kHour}});
  t.during(s, "k", {ErrorCode::kUnavailable}, "READONLY");
  s.expect(raw(replica.port(), {"REPLICAOF", "NO", "ONE"}) == "OK", "REPLICAOF NO ONE failed");
  Clock::time_point promoted = Clock::now();
  s.recover(t.error, "k", promoted);
  s.recover(t.open, "k", promoted);
  s.drain_and_verify(t.error, "k", [&](size_t) { return ring(replica.port(), t.error.storage_key("k")); });
}

// ------------------------------------------------------------ cluster

// A caller key whose storage key (limit 0) hashes to `slot`.
std::string key_in_slot(const Limiter& l, int slot, const std::string& base) {
  for (int i = 0; i < 1000000; ++i) {
    std::string k = base + std::to_string(i);
    if (key_slot(l.storage_key(k)) == slot) return k;
  }
  throw std::runtime_error("no key for slot " + std::to_string(slot));
}

size_t other_master(pltest::RedisCluster& cluster, size_t than) {
  for (size_t m : cluster.masters())
    if (m != than) return m;
  throw std::runtime_error("one master only");
}

void cluster_redirect_loop(pltest::RedisCluster& cluster) {
  Scenario s("cluster", "redirect loop (`MIGRATING` on the source only)",
             "`CLUSTER SETSLOT <slot> MIGRATING <dest>` on the source only: source says ASK, dest says MOVED back; "
             "then `SETSLOT <slot> STABLE`",
             "EUNAVAILABLE (still redirected)" + kOutageExpect);
  s.row().deadline_ms = kCommandTimeoutMs;  // redirections stop at the command timeout
  auto c = open_client(cluster.url());
  Trio t(c, "loop", {{Algorithm::kSlidingLog, 5, kHour}});
  const std::string key = "loopkey";
  const int slot = key_slot(t.error.storage_key(key));
  for (Limiter* l : {&t.error, &t.open, &t.closed}) faults::check(*l, "warm");  // connections open, map loaded
  // The other limiters' keys must be in the same slot, and must not exist yet.
  std::string ko = key_in_slot(t.open, slot, "o"), kc = key_in_slot(t.closed, slot, "c");
  size_t src = cluster.master_of_slot(slot), dst = other_master(cluster, src);
  std::string sl = std::to_string(slot);
  s.expect(cluster.command(src, {"CLUSTER", "SETSLOT", sl, "MIGRATING", cluster.node_id(dst)}) == "OK",
           "SETSLOT MIGRATING failed");
  for (int i = 0; i < 2; ++i) s.during(t.error, key, {ErrorCode::kUnavailable}, "redirect");
  s.messages_name("redirect");
  s.during(t.open, ko, {ErrorCode::kUnavailable});
  s.during(t.closed, kc, {ErrorCode::kUnavailable});
  s.expect(cluster.command(src, {"CLUSTER", "SETSLOT", sl, "STABLE"}) == "OK", "SETSLOT STABLE failed");
  Clock::time_point stable = Clock::now();
  s.recover(t.error, key, stable);
  s.recover(t.open, ko, stable);
  int port = cluster.node(src).port();
  s.drain_and_verify(t.error, key, [&](size_t) { return ring(port, t.error.storage_key(key)); });
}

void cluster_tryagain(pltest::RedisCluster& cluster) {
  Scenario s("cluster", "`TRYAGAIN` (multi-key script during a migration)",
             "a limiter with two limits (two keys, one slot) while the slot migrates: a new caller key (no key "
             "exists yet), and a key whose first limit was `MIGRATE`d and second not; then the second is migrated "
             "and `SETSLOT NODE` ends the migration",
             "EUNAVAILABLE (TRYAGAIN, retried until the command timeout)" + kOutageExpect);
  s.row().deadline_ms = kCommandTimeoutMs;
  auto c = open_client(cluster.url());
  std::vector<LimitParams> two = {{Algorithm::kSlidingLog, 5, kHour}, {Algorithm::kSlidingLog, 8, 2 * kHour}};
  Trio t(c, "try", two);
  const std::string key = "split";
  const std::vector<std::string> skeys = t.error.storage_keys(key);
  const int slot = key_slot(skeys[0]);
  s.expect(key_slot(skeys[1]) == slot, "the two limits' keys are in different slots");
  for (int i = 0; i < 2; ++i) s.admitted(t.error, key, faults::check(t.error, key).decision.allowed ? 1 : 0);
  std::string fresh = key_in_slot(t.error, slot, "fresh"), fo = key_in_slot(t.open, slot, "o"),
              fc = key_in_slot(t.closed, slot, "c");
  size_t src = cluster.master_of_slot(slot), dst = other_master(cluster, src);
  std::string sl = std::to_string(slot), src_id = cluster.node_id(src), dst_id = cluster.node_id(dst);
  s.expect(cluster.command(dst, {"CLUSTER", "SETSLOT", sl, "IMPORTING", src_id}) == "OK", "IMPORTING failed");
  s.expect(cluster.command(src, {"CLUSTER", "SETSLOT", sl, "MIGRATING", dst_id}) == "OK", "MIGRATING failed");
  // Both keys still on the source: it serves the call itself.
  Call whole = faults::check(t.error, key);
  s.expect(whole.ok && !whole.decision.degraded, "before MIGRATE: " + whole.outcome() + " " + whole.message);
  if (whole.ok && whole.decision.allowed) s.admitted(t.error, key, 1);
  // Split: limit 0's key moved, limit 1's not.
  auto migrate = [&](const std::string& k) {
    return cluster.command(
        src, {"MIGRATE", "127.0.0.1", std::to_string(cluster.node(dst).port()), "", "0", "5000", "KEYS", k});
  };
  s.expect(migrate(skeys[0]) == "OK", "MIGRATE of the first key failed");
  for (int i = 0; i < 2; ++i) s.during(t.error, key, {ErrorCode::kUnavailable}, "TRYAGAIN");
  s.messages_name("TRYAGAIN");
  // A caller key none of whose keys exist yet.
  s.during(t.error, fresh, {ErrorCode::kUnavailable}, "TRYAGAIN");
  s.messages_name("TRYAGAIN");
  s.during(t.open, fo, {ErrorCode::kUnavailable});
  s.during(t.closed, fc, {ErrorCode::kUnavailable});
  s.expect(migrate(skeys[1]) == "OK", "MIGRATE of the second key failed");
  Clock::time_point moved = Clock::now();
  s.recover(t.error, key, moved);  // through ASK: both keys are on the destination
  Call still = faults::check(t.error, fresh);
  s.note("a new caller key while the slot is still migrating: " + still.outcome());
  for (size_t i = 0; i < cluster.size(); ++i)
    if (cluster.alive(i)) cluster.command(i, {"CLUSTER", "SETSLOT", sl, "NODE", dst_id});
  Clock::time_point done = Clock::now();
  s.recover(t.error, fresh, done);
  s.recover(t.open, fo, done);
  int port = cluster.node(dst).port();
  s.drain_and_verify(t.error, key, [&](size_t i) { return ring(port, skeys[i]); });
}

void cluster_script_flush(pltest::RedisCluster& cluster) {
  Scenario s("cluster", "`SCRIPT FLUSH` on every master during checks and batches",
             "2 threads of single checks and 1 of batches (8 keys over all masters); `SCRIPT FLUSH` on every "
             "master every 5 ms for 1.5 s",
             "OK: NOSCRIPT reloaded, no error");
  auto c = open_client(cluster.url());
  Limiter l(c, limiter_options("cflush", FailurePolicy::kError, {{Algorithm::kSlidingLog, 40, kHour}}));
  std::vector<std::string> keys;
  for (int i = 0; i < 8; ++i) keys.push_back("c" + std::to_string(i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, long> admits, outcomes;
  auto record = [&](const std::string& key, const std::string& kind, const Call& call) {
    std::lock_guard<std::mutex> g(mu);
    s.row().max_ms = std::max(s.row().max_ms, call.ms);
    if (outcomes[kind + ": " + call.outcome()]++ == 0 && !call.ok)
      std::printf("    first error: %s\n", call.message.c_str());
    if (call.ok && call.decision.allowed) admits[key]++;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; !stop.load(); ++i)
        record(keys[i % keys.size()], "check", faults::check(l, keys[i % keys.size()]));
    });
  threads.emplace_back([&] {
    while (!stop.load()) {
      auto t0 = Clock::now();
      std::vector<Outcome> out = l.check_many(views, 1);
      double ms = faults::ms_since(t0);
      for (size_t k = 0; k < out.size(); ++k) {
        Call call;
        call.ms = ms;
        if (out[k].error) {
          try {
            std::rethrow_exception(out[k].error);
          } catch (const Error& e) {
            call.code = e.code();
            call.message = e.what();
          }
        } else {
          call.ok = true;
          call.decision = out[k].decision;
        }
        record(keys[k], "batch", call);
      }
    }
  });
  auto reloads0 = c->stats().noscript_reloads;
  long flushes = 0;
  auto end = Clock::now() + 1500ms;
  while (Clock::now() < end) {
    for (size_t m : cluster.masters()) s.expect(cluster.command(m, {"SCRIPT", "FLUSH"}) == "OK", "SCRIPT FLUSH failed");
    ++flushes;
    std::this_thread::sleep_for(5ms);  // the flush rate
  }
  Clock::time_point over = Clock::now();
  stop = true;
  for (auto& th : threads) th.join();
  long reloads = static_cast<long>(c->stats().noscript_reloads - reloads0);
  for (auto& [k, n] : outcomes) {
    s.row().seen.insert(k + " x" + std::to_string(n));
    std::printf("    %-40s x%ld\n", k.c_str(), n);
    s.expect(k.find(": OK") != std::string::npos, "an error during the flushes: " + k);
  }
  s.note(std::to_string(flushes) + " rounds of flushes, " + std::to_string(reloads) + " NOSCRIPT reloads");
  s.expect(reloads > 0, "no NOSCRIPT reload: the flushes were not met");
  s.expect(s.row().max_ms <= s.row().deadline_ms + kMarginMs, "a call took " + fmt(s.row().max_ms) + " ms");
  s.recover(l, keys[0], over);
  for (auto& k : keys) {
    s.admitted(l, k, admits[k]);
    int port = cluster.node(cluster.master_of_slot(key_slot(l.storage_key(k)))).port();
    s.drain_and_verify(l, k, [&](size_t) { return ring(port, l.storage_key(k)); });
  }
}

void cluster_down(pltest::RedisCluster& cluster) {
  Scenario s("cluster", "`CLUSTERDOWN` (a master without replica killed)",
             "SIGKILL of one of 3 masters (no replicas, cluster-require-full-coverage yes) until the others say "
             "cluster_state:fail; then restart it",
             "EUNAVAILABLE (CLUSTERDOWN from the others, refused for its own slots)" + kOutageExpect);
  auto c = open_client(cluster.url());
  Trio t(c, "down", {{Algorithm::kSlidingLog, 5, kHour}});
  std::vector<size_t> masters = cluster.masters();
  size_t victim = masters.back(), live = masters.front();
  auto key_on = [&](const Limiter& l, size_t node, const std::string& base) {
    for (int i = 0;; ++i) {
      std::string k = base + std::to_string(i);
      if (cluster.master_of_slot(key_slot(l.storage_key(k))) == node) return k;
    }
  };
  std::string k = key_on(t.error, live, "live"), ko = key_on(t.open, live, "live"), kc = key_on(t.closed, live, "live"),
              dead = key_on(t.error, victim, "dead");
  for (int i = 0; i < 2; ++i) s.admitted(t.error, k, faults::check(t.error, k).decision.allowed ? 1 : 0);
  faults::check(t.error, dead);
  const int live_port = cluster.node(live).port();
  ::kill(pltest::server_pid(cluster.node(victim)), SIGKILL);
  Clock::time_point killed = Clock::now();
  cluster.node(victim).stop();  // reaps it
  bool down = faults::wait_until(
      [&] {
        return pltest::info_field(raw(live_port, {"CLUSTER", "INFO"}), "cluster_state") == "fail";
      },
      20s);
  s.expect(down, "the cluster never reported cluster_state:fail");
  s.note("cluster_state:fail " + fmt(faults::ms_since(killed)) + " ms after the kill");
  for (int i = 0; i < 2; ++i) s.during(t.error, k, {ErrorCode::kUnavailable}, "CLUSTERDOWN");
  s.messages_name("CLUSTERDOWN");
  s.during(t.open, ko, {ErrorCode::kUnavailable});
  s.during(t.closed, kc, {ErrorCode::kUnavailable});
  s.during(t.error, dead, {ErrorCode::kUnavailable});
  cluster.node(victim).start();
  Clock::time_point restarted = Clock::now();
  s.expect(faults::wait_until(
               [&] {
                 return pltest::info_field(raw(live_port, {"CLUSTER", "INFO"}), "cluster_state") == "ok";
               },
               20s),
           "the cluster never came back");
  Clock::time_point cluster_ok = Clock::now();
  s.note("cluster_state:ok " + fmt(faults::ms_between(restarted, cluster_ok)) + " ms after the restart");
  s.recover(t.error, k, restarted);
  s.note("the client answered " + fmt(faults::ms_since(cluster_ok)) + " ms after cluster_state:ok");
  s.recover(t.error, dead, restarted);
  s.recover(t.open, ko, restarted);
  s.drain_and_verify(t.error, k, [&](size_t) { return ring(live_port, t.error.storage_key(k)); });
}

// ------------------------------------------------------------ sentinel

void sentinel_unknown_master(pltest::RedisSentinels& sentinels) {
  Scenario s("sentinel", "unknown master name", "the URL names a master no sentinel monitors",
             "EINVALID (no sentinel knows the name); every policy: the same error");
  std::string url = sentinels.url();
  url.replace(url.rfind('/') + 1, std::string::npos, "nosuchmaster");
  auto c = open_client(url);
  Trio t(c, "unknown", {{Algorithm::kSlidingLog, 5, kHour}});
  t.during(s, "k", {ErrorCode::kInvalidArgument}, "no sentinel knows a master named");
  auto good = open_client(sentinels.url());
  Limiter ok(good, limiter_options("unknown-ok", FailurePolicy::kError, {{Algorithm::kSlidingLog, 5, kHour}}));
  s.recover(ok, "k", Clock::now());
  s.row().recovery_ms = -1;  // not an outage: nothing recovers; the right name works
  s.drain_and_verify(ok, "k", [&](size_t) { return ring(sentinels.master().port(), ok.storage_key("k")); });
}

void sentinel_all_down(pltest::RedisSentinels& sentinels, bool hung) {
  Scenario s("sentinel", hung ? "every sentinel hung (`SIGSTOP`)" : "every sentinel down (`kill -9`)",
             hung ? "SIGSTOP of all 3 sentinels; a client that knows the master keeps using it, a new client "
                    "cannot resolve it; then SIGCONT"
                  : "SIGKILL of all 3 sentinels (connections refused); a new client cannot resolve the master; "
                    "then 3 sentinels restarted on the same ports",
             "EUNAVAILABLE (no usable master; names each sentinel)" + kOutageExpect);
  const std::string name = hung ? "hung" : "down";
  // A client that resolved the master before the fault.
  auto known = open_client(sentinels.url());
  Limiter kl(known, limiter_options(name + "-known", FailurePolicy::kError, {{Algorithm::kSlidingLog, 5, kHour}}));
  for (int i = 0; i < 2; ++i) s.admitted(kl, "k", faults::check(kl, "k").decision.allowed ? 1 : 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < 3; ++i) pids.push_back(pid_at(sentinels.sentinel_port(i)));
  for (pid_t p : pids) ::kill(p, hung ? SIGSTOP : SIGKILL);
  if (!hung)
    s.expect(faults::wait_until([&] { return raw(sentinels.sentinel_port(0), {"PING"}) == ""; }, 5s),
             "a sentinel still answers");
  // The known master is still up: the resolved client goes on deciding, for
  // longer than its re-check interval (1 s), which asks the sentinels again.
  double known_max = 0;
  auto known_end = Clock::now() + 1300ms;
  while (Clock::now() < known_end) {
    Call call = faults::check(kl, "k");
    s.row().seen.insert("client that knows the master: " + call.outcome());
    known_max = std::max(known_max, call.ms);
    s.timing(call, "call of the client that knows the master");
    s.expect(call.ok && !call.decision.degraded, "the client that knows the master failed: " + call.message);
    if (call.ok && call.decision.allowed) s.admitted(kl, "k", 1);
    std::this_thread::sleep_for(20ms);  // the caller's pace
  }
  s.note("the client that knows the master: slowest call " + fmt(known_max) + " ms");
  auto fresh = open_client(sentinels.url());
  Trio t(fresh, name, {{Algorithm::kSlidingLog, 5, kHour}});
  if (hung) s.row().deadline_ms = kDeadlineMs;  // one deadline for the whole call, whatever the sentinels do
  t.during(s, "k", {ErrorCode::kUnavailable}, "sentinel");
  if (hung) {
    for (pid_t p : pids) ::kill(p, SIGCONT);
  } else {
    // The fixture starts them again on the same ports, with their
    // configuration files (the master they monitor included).
    for (size_t i = 0; i < sentinels.sentinels(); ++i) sentinels.start_sentinel(i);
  }
  Clock::time_point back = Clock::now();
  s.recover(t.error, "k", back);
  s.recover(t.open, "k", back);
  s.drain_and_verify(kl, "k", [&](size_t) { return ring(sentinels.master().port(), kl.storage_key("k")); });
}

// ------------------------------------------------------------ report

std::string cell(std::string s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : ch == '\n' ? std::string("; ") : std::string(1, ch);
  return out;
}

std::string joined(const std::set<std::string>& items) {
  std::string out;
  for (auto& i : items) out += (out.empty() ? "" : "<br>") + cell(i);
  return out;
}

void write_markdown(const std::string& path, double total_s) {
  std::ostringstream md;
  md << "# Reliability: the fault matrix\n\n"
     << "<!-- Generated by tests/faults/fault_matrix (tests/faults/run.sh writes build/reports/reliability.md;\n"
     << "     tests/faults/run.sh --update-docs refreshes this file). Do not edit by hand; timings change\n"
     << "     from run to run. -->\n\n"
     << "Each row starts real `redis-server` processes (standalone, a 3-master Redis Cluster without replicas,\n"
     << "or one master, one replica and three sentinels), injects one fault and makes calls while it lasts,\n"
     << "through a limiter with each failure policy (`error`, `open`, `closed`; docs/limiter.md). For every\n"
     << "row the suite asserts:\n\n"
     << "- every call returned within its deadline plus " << fmt(kMarginMs) << " ms of scheduling margin. The\n"
     << "  client uses `connect_timeout_ms = " << kConnectTimeoutMs
     << "` and `command_timeout_ms = " << kCommandTimeoutMs << "`; a call that may\n"
     << "  have to connect first is held to both (" << fmt(kDeadlineMs) << " ms), one on an open connection to the "
     << "command timeout;\n"
     << "- the documented status (docs/error-model.md) with policy `error`; a degraded admission with `open`\n"
     << "  and a degraded denial with `closed` (outage codes only: other errors are never hidden);\n"
     << "- nothing over-admitted: after the fault the key is checked until Redis denies it, and the admissions\n"
     << "  this process was told about are compared with the units stored in Redis (the sliding log's ring,\n"
     << "  read on a separate connection). *Over-admitted* = admitted beyond the limit + admitted but not stored;\n"
     << "  it must be 0. Stored units above the admitted ones were consumed by calls that got an error (their\n"
     << "  outcome is unknown to the caller);\n"
     << "- the client recovers: *recovery* is the time from the end of the fault (server restarted, script\n"
     << "  killed, slot stable, ...) to the first real answer.\n\n"
     << "| # | deployment | fault (how it is injected) | expected | seen during the fault | max call ms | "
        "recovery ms | admitted / stored / limit | over-admitted | result |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  int n = 0;
  for (const Row& r : g_rows) {
    ++n;
    std::string result = r.passed() ? "pass" : (r.known.empty() ? "**FAIL**" : "**known failure**");
    std::string details;
    for (auto& f : r.failures) details += "<br>" + cell(f);
    if (!r.known.empty()) details += "<br>" + cell(r.known);
    for (auto& no : r.notes) details += "<br>" + cell(no);
    md << "| " << n << " | " << r.deployment << " | **" << cell(r.scenario) << "**: " << cell(r.injected) << " | "
       << cell(r.expected) << " | " << joined(r.seen) << " | " << fmt(r.max_ms) << " (" << fmt(r.deadline_ms) << "+"
       << fmt(kMarginMs) << ") | " << (r.recovery_ms < 0 ? std::string("n/a") : fmt(r.recovery_ms)) << " | "
       << (r.state_checked
               ? std::to_string(r.admitted) + " / " + std::to_string(r.stored) + " / " + std::to_string(r.limit)
               : std::string("n/a"))
       << " | " << r.over << " | " << result << details << " |\n";
  }
  md << "\nWhole matrix: " << fmt(total_s, 1) << " s. The soak (tests/faults/soak.cpp) repeats kills, restarts,\n"
     << "script flushes, client kills and Sentinel failovers for a bounded time and checks that descriptors,\n"
     << "threads and memory stay flat; tests/faults/run.sh appends its summary below.\n";
  std::ofstream out(path);
  out << md.str();
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc)
      out_path = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--out FILE.md] [--only standalone|cluster|sentinel]\n", argv[0]);
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  auto t0 = Clock::now();
  auto guarded = [](const char* what, const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      std::printf("    FAIL: %s: setup error: %s\n", what, e.what());
      Row r;
      r.deployment = what;
      r.scenario = "setup";
      r.failures.push_back(std::string("setup error: ") + e.what());
      g_rows.push_back(r);
    }
  };
  if (only.empty() || only == "standalone") {
    guarded("standalone", standalone_loading);
    guarded("standalone", standalone_busy);
    guarded("standalone", standalone_client_kill_storm);
    guarded("standalone", standalone_script_flush_batches);
    guarded("standalone", standalone_kill9_restart);
    guarded("standalone", standalone_sigstop);
    guarded("standalone", standalone_readonly);
  }
  if (only.empty() || only == "cluster") {
    guarded("cluster", [] {
      pltest::RedisCluster cluster(3, 0);
      cluster_redirect_loop(cluster);
      cluster_tryagain(cluster);
      cluster_script_flush(cluster);
      cluster_down(cluster);  // last: it kills a node
    });
  }
  if (only.empty() || only == "sentinel") {
    guarded("sentinel", [] {
      pltest::RedisSentinels sentinels("faultmaster", "", "", false);
      sentinel_unknown_master(sentinels);
      sentinel_all_down(sentinels, true);
      sentinel_all_down(sentinels, false);
    });
  }
  double total = faults::ms_since(t0) / 1000;

  std::printf("\n=== fault matrix (%.1f s) ===\n", total);
  std::printf("%-10s %-58s %9s %9s %6s  %s\n", "deploy", "scenario", "max ms", "recov ms", "over", "result");
  int failed = 0, known = 0;
  for (const Row& r : g_rows) {
    std::string result = r.passed() ? "pass" : (r.known.empty() ? "FAIL" : "known failure");
    if (!r.passed()) (r.known.empty() ? failed : known)++;
    std::printf("%-10s %-58.58s %9.0f %9s %6ld  %s\n", r.deployment.c_str(), r.scenario.c_str(), r.max_ms,
                r.recovery_ms < 0 ? "n/a" : fmt(r.recovery_ms).c_str(), r.over, result.c_str());
    for (auto& f : r.failures) std::printf("           - %s\n", f.c_str());
  }
  std::printf("%zu scenarios: %d failed, %d known failures\n", g_rows.size(), failed, known);
  if (!out_path.empty()) {
    write_markdown(out_path, total);
    std::printf("wrote %s\n", out_path.c_str());
  }
  return failed ? 1 : 0;
}
