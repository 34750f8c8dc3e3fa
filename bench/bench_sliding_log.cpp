// bench_sliding_log - the sliding log's two storage layouts side by side, in
// one run, against a redis-server it starts:
//   OLD  a ZSET, one member per admitted unit (the script of commit 0b2b4d8,
//        embedded from bench/legacy/sliding_log_zset.lua)
//   NEW  a ring of 8-byte admission times in a STRING (the script the
//        library runs for a check, core/scripts/single/sliding_log.lua, from
//        scripts_generated.h)
// Both are run with the same KEYS/ARGV, through EVALSHA on one connection;
// keys are named as each layout's library named them (Limiter::storage_key,
// prefix "pl").
//   (c) memory: MEMORY USAGE of one key filled to the limit, unit by unit;
//   (d) Lua time per call: cmdstat_evalsha usec / calls (CONFIG RESETSTAT
//       before each measurement), repeated, old and new interleaved.
// A program that prints, not a test: no timed assertions.
//   bench_sliding_log [repetitions]     (default 5)
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "legacy_sliding_log_zset.h"
#include "polylimit/limiter.h"
#include "redis_server.h"
#include "scripts_generated.h"

using namespace polylimit;

namespace {

using Argv = std::vector<std::string>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// One connection; commands are pipelined in batches (the server-side time
// measured below does not depend on it; it only keeps the run short).
class Conn {
 public:
  explicit Conn(int port) : c_(redisConnect("127.0.0.1", port)) {
    if (!c_ || c_->err) throw std::runtime_error("cannot connect to redis-server");
  }
  ~Conn() { redisFree(c_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  Reply run(const Argv& argv) { return std::move(pipeline({argv})[0]); }

  std::vector<Reply> pipeline(const std::vector<Argv>& calls) {
    for (const Argv& a : calls) {
      std::vector<const char*> p;
      std::vector<size_t> n;
      for (const std::string& s : a) {
        p.push_back(s.data());
        n.push_back(s.size());
      }
      redisAppendCommandArgv(c_, static_cast<int>(a.size()), p.data(), n.data());
    }
    std::vector<Reply> out;
    for (size_t i = 0; i < calls.size(); ++i) {
      void* r = nullptr;
      if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) throw std::runtime_error("connection lost");
      out.emplace_back(static_cast<redisReply*>(r));
    }
    return out;
  }

  std::string text(const Argv& argv) {
    Reply r = run(argv);
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(argv[0] + ": " + std::string(r->str, r->len));
    if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
    return r->str ? std::string(r->str, r->len) : std::string();
  }
  long long integer(const Argv& argv) { return std::stoll(text(argv)); }

 private:
  redisContext* c_;
};

struct Layout {
  const char* name;     // OLD / NEW
  const char* storage;  // what it stores
  const char* source;
  const char* sha1;
  bool needs_token;  // OLD: members are token..':'..j, unique per call
};

const Layout kOld = {"OLD", "ZSET", legacy::kSlidingLogZsetSource, legacy::kSlidingLogZsetSha1, true};
const Layout kNew = {"NEW", "ring", scripts::k_sliding_log_single.source, scripts::k_sliding_log_single.sha1, false};

// The token the old library sent (RedisBackend::next_token at 0b2b4d8):
// a random instance id, the pid and a counter, e.g. 3f2a...9c.1a2b.7f.
class Tokens {
 public:
  Tokens() {
    std::random_device rd;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx",
                  static_cast<unsigned long long>((static_cast<uint64_t>(rd()) << 32) ^ rd()));
    id_ = buf;
  }
  std::string next() {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s.%x.%llx", id_.c_str(), static_cast<unsigned>(::getpid()), counter_++);
    return buf;
  }

 private:
  std::string id_;
  unsigned long long counter_ = 0;
};

Tokens g_tokens;

// The storage key each layout's library used for caller key `id`, prefix
// "pl": the current one from Limiter::storage_key ("pl:sliding_log.ring:{tag}:id");
// the old layout's segment was the algorithm's name ("pl:sliding_log:{tag}:id").
std::string key_for(const Layout& layout, const std::string& id) {
  LimiterOptions o;
  o.limit = {Algorithm::kSlidingLog, 10, 1000};
  o.prefix = "pl";
  // A limiter only names keys here; the memory backend needs no server.
  static std::shared_ptr<Client> offline = Client::open("memory://");
  std::string key = Limiter(offline, o).storage_key(id);
  if (&layout == &kOld) {
    const std::string seg = std::string(":") + storage_segment(Algorithm::kSlidingLog) + ":";
    key.replace(key.find(seg), seg.size(), std::string(":") + algorithm_name(Algorithm::kSlidingLog) + ":");
  }
  return key;
}

// One check of `cost` units against one limit (limit per window), with the
// server's clock, no block: the ARGV the library sends.
Argv check_argv(const Layout& layout, const std::string& key, int64_t cost, int64_t limit, int64_t window_us) {
  if (!layout.needs_token)  // the library's layout: only what the script reads
    return {"EVALSHA",
            layout.sha1,
            "1",
            key,
            "check",
            std::to_string(cost),
            "",
            std::to_string(limit),
            std::to_string(window_us)};
  return {"EVALSHA",
          layout.sha1,
          "1",
          key,
          "check",
          std::to_string(cost),
          "",
          g_tokens.next(),
          "0",
          std::to_string(limit),
          std::to_string(window_us),
          std::to_string(limit),
          std::to_string((window_us + limit - 1) / limit)};
}

// Runs n checks (pipelined); returns how many were admitted. Throws on a
// script error.
// `fresh`: the i-th check goes to its own key, key + "#i" (none exists yet).
int64_t run_checks(Conn& c, const Layout& layout, const std::string& key, int64_t n, int64_t cost, int64_t limit,
                   int64_t window_us, bool fresh = false) {
  const int64_t kBatch = 200;
  int64_t admitted = 0;
  for (int64_t done = 0; done < n;) {
    std::vector<Argv> calls;
    for (; done < n && static_cast<int64_t>(calls.size()) < kBatch; ++done)
      calls.push_back(check_argv(layout, fresh ? key + "#" + std::to_string(done) : key, cost, limit, window_us));
    // OLD answers with an array, NEW with one string ("allowed limit ...").
    for (Reply& r : c.pipeline(calls)) {
      if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && r->element[0]->type == REDIS_REPLY_INTEGER)
        admitted += r->element[0]->integer;
      else if (r->type == REDIS_REPLY_STRING && r->len >= 2 && (r->str[0] == '0' || r->str[0] == '1') &&
               r->str[1] == ' ')
        admitted += r->str[0] - '0';
      else
        throw std::runtime_error(std::string(layout.name) + " script: " +
                                 (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "unexpected reply"));
    }
  }
  return admitted;
}

void load_scripts(Conn& c) {
  for (const Layout* l : {&kOld, &kNew}) {
    std::string sha = c.text({"SCRIPT", "LOAD", l->source});
    if (sha != l->sha1) throw std::runtime_error(std::string(l->name) + " script SHA1 mismatch: " + sha);
  }
}

const int64_t kHourUs = 3600LL * 1000 * 1000;

// ---------------------------------------------------------------- (c) memory

void memory_table(Conn& c, pltest::RedisServer& server) {
  std::printf("(c) sliding log, one key filled to the limit (limit cost-1 checks, window 1 h):\n");
  std::printf("    Redis MEMORY USAGE <key> SAMPLES 0, bytes, and bytes per entry (usage / limit)\n");
  std::printf("    keys: OLD %s, NEW %s\n\n", key_for(kOld, "user-<limit>").c_str(),
              key_for(kNew, "user-<limit>").c_str());
  std::printf(
      "| limit | OLD ZSET bytes | OLD B/entry | OLD encoding | NEW ring bytes | NEW B/entry | NEW STRLEN | "
      "NEW target    | met | NEW, 1 check of cost=limit  |\n");
  std::printf(
      "|------:|---------------:|------------:|--------------|---------------:|------------:|-----------:|"
      "---------------|-----|----------------------------:|\n");
  bool all_met = true;
  for (int64_t limit : {10, 100, 128, 1000, 10000}) {
    const std::string id = "user-" + std::to_string(limit);
    long long bytes[2] = {0, 0};
    std::string encoding[2];
    long long strlen_new = 0;
    for (int i = 0; i < 2; ++i) {
      const Layout& l = i == 0 ? kOld : kNew;
      const std::string key = key_for(l, id);
      c.run({"DEL", key});
      int64_t admitted = run_checks(c, l, key, limit, 1, limit, kHourUs);
      if (admitted != limit)
        throw std::runtime_error(std::string(l.name) + ": " + std::to_string(admitted) + " of " +
                                 std::to_string(limit) + " admitted while filling");
      bytes[i] = c.integer({"MEMORY", "USAGE", key, "SAMPLES", "0"});
      encoding[i] = c.text({"OBJECT", "ENCODING", key});
      if (i == 0) {
        if (c.integer({"ZCARD", key}) != limit) throw std::runtime_error("OLD: ZCARD differs from the limit");
      } else {
        strlen_new = c.integer({"STRLEN", key});
        if (server.integer(pltest::ring_units(key)) != limit)
          throw std::runtime_error("NEW: the ring's used field differs from the limit");
        // The library's own view of the key filled through raw EVALSHA: full.
        LimiterOptions o;
        o.limit = {Algorithm::kSlidingLog, limit, 3600 * 1000};
        o.prefix = "pl";
        Limiter lim(Client::open(server.url()), o);
        if (lim.storage_key(id) != key || lim.peek(id).remaining != 0)
          throw std::runtime_error("NEW: the library does not see the filled key as full");
      }
      c.run({"DEL", key});
    }
    // For comparison: the same ring written by one check (no growth step by step).
    long long one_call = 0;
    {
      const std::string key = key_for(kNew, id);
      if (run_checks(c, kNew, key, 1, limit, limit, kHourUs) != 1) throw std::runtime_error("NEW: one-call fill");
      one_call = c.integer({"MEMORY", "USAGE", key, "SAMPLES", "0"});
      c.run({"DEL", key});
    }
    const double per_old = static_cast<double>(bytes[0]) / limit, per_new = static_cast<double>(bytes[1]) / limit;
    const double target = limit <= 128 ? 24 : 60;
    const bool met = per_new <= target;
    all_met = all_met && met;
    std::printf(
        "| %5lld | %14lld | %11.1f | %-12s | %14lld | %11.1f | %10lld | <= %2.0f B/entry | %-3s "
        "| %9lld B (%5.1f B/entry) |\n",
        static_cast<long long>(limit), bytes[0], per_old, encoding[0].c_str(), bytes[1], per_new, strlen_new, target,
        met ? "yes" : "NO", one_call, static_cast<double>(one_call) / limit);
  }
  std::printf("\nNEW memory targets (<= 24 B/entry up to 128 entries, <= 60 B above): %s\n\n",
              all_met ? "all met" : "NOT all met");
}

// ------------------------------------------------------------ (d) Lua time

struct Scenario {
  const char* name;
  int64_t limit;
  int64_t prefill_calls, prefill_cost;  // untimed, before CONFIG RESETSTAT
  int64_t calls, cost;                  // timed
  bool admit;                           // every timed check is expected to be admitted (else denied)
  bool fresh = false;                   // every timed check on a key of its own that does not exist yet
};

const Scenario kScenarios[] = {
    {"admit, cost 1", 1000000, 100, 1000, 2000, 1, true},
    {"admit, cost 1000", 1000000, 100, 1000, 100, 1000, true},
    {"deny (full), cost 1", 1000, 1000, 1, 2000, 1, false},
    {"deny (full), cost 1000", 1000, 1000, 1, 2000, 1000, false},
    // Not part of a target: a smaller key (the ring's search is O(log units)).
    {"admit, cost 1 (smaller)", 1000, 500, 1, 400, 1, true},
    // The first check of a key (a new client): the ring is created.
    {"admit, cost 1, new", 1000, 0, 0, 2000, 1, true, true},
    {"admit, cost 1000, new", 1000, 0, 0, 2000, 1000, true, true},
};
constexpr size_t kNumScenarios = sizeof kScenarios / sizeof kScenarios[0];

struct Sample {
  double usec_per_call;
  long long calls;
  double inner_per_call;  // redis.call()s per EVALSHA
  std::string breakdown;  // per command, per EVALSHA: "getrange 17.0, ..."
};

// INFO commandstats after a measurement: cmdstat_evalsha's calls and usec,
// and the commands the scripts ran (every other command but INFO and CONFIG).
struct CommandStats {
  long long calls = 0, usec = 0;
  long long inner = 0;
  std::vector<std::pair<std::string, long long>> inner_by_name;
};

CommandStats command_stats(Conn& c) {
  const std::string info = c.text({"INFO", "commandstats"});
  CommandStats out;
  size_t p = 0;
  while ((p = info.find("cmdstat_", p)) != std::string::npos) {
    size_t e = info.find_first_of("\r\n", p);
    const std::string line = info.substr(p, e == std::string::npos ? std::string::npos : e - p);
    p = e;
    const std::string name = line.substr(8, line.find(':') - 8);
    auto field = [&](const std::string& f) {
      size_t q = line.find(f + "=");
      if (q == std::string::npos) throw std::runtime_error("INFO commandstats: no " + f + " in " + line);
      return std::atoll(line.c_str() + q + f.size() + 1);
    };
    if (name == "evalsha") {
      out.calls = field("calls");
      out.usec = field("usec");
    } else if (name != "info" && name.compare(0, 6, "config") != 0) {
      out.inner += field("calls");
      out.inner_by_name.emplace_back(name, field("calls"));
    }
  }
  return out;
}

Sample measure(Conn& c, const Layout& l, const Scenario& s) {
  const std::string key = key_for(l, "user-42");
  c.run({"DEL", key});
  int64_t pre = run_checks(c, l, key, s.prefill_calls, s.prefill_cost, s.limit, kHourUs);
  if (pre != s.prefill_calls) throw std::runtime_error(std::string(l.name) + ": prefill not admitted");
  c.text({"CONFIG", "RESETSTAT"});
  int64_t admitted = run_checks(c, l, key, s.calls, s.cost, s.limit, kHourUs, s.fresh);
  CommandStats st = command_stats(c);
  if (admitted != (s.admit ? s.calls : 0))
    throw std::runtime_error(std::string(l.name) + " " + s.name + ": " + std::to_string(admitted) + " of " +
                             std::to_string(s.calls) + " admitted");
  c.run({"DEL", key});
  if (s.fresh) {
    std::vector<Argv> dels;
    for (int64_t i = 0; i < s.calls; ++i) dels.push_back({"DEL", key + "#" + std::to_string(i)});
    c.pipeline(dels);
  }
  if (st.calls <= 0) throw std::runtime_error("INFO commandstats counted no EVALSHA");
  std::sort(st.inner_by_name.begin(), st.inner_by_name.end());
  std::string breakdown;
  for (const auto& [name, n] : st.inner_by_name) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.1f", breakdown.empty() ? "" : ", ", name.c_str(),
                  static_cast<double>(n) / st.calls);
    breakdown += buf;
  }
  return {static_cast<double>(st.usec) / st.calls, st.calls, static_cast<double>(st.inner) / st.calls, breakdown};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string spread(const std::vector<double>& v, const char* fmt) {
  char buf[96];
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string f = std::string(fmt) + " (" + fmt + ".." + fmt + ")";
  std::snprintf(buf, sizeof buf, f.c_str(), median(v), *lo, *hi);
  return buf;
}

void time_table(Conn& c, int reps) {
  std::printf("(d) sliding log, Lua time per call: INFO commandstats cmdstat_evalsha usec / calls (calls as\n");
  std::printf("    counted by Redis), CONFIG RESETSTAT after the untimed prefill; window 1 h, server clock;\n");
  std::printf("    median (min..max) of %d repetitions, OLD and NEW interleaved (order alternating)\n\n", reps);
  // us[layout][scenario][rep]
  std::vector<double> us[2][kNumScenarios];
  long long calls[2][kNumScenarios] = {};
  Sample last[2][kNumScenarios];  // of the last repetition: the commands each script ran
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t si = 0; si < kNumScenarios; ++si) {
      for (int k = 0; k < 2; ++k) {
        int li = (rep % 2 == 0) ? k : 1 - k;
        Sample smp = measure(c, li == 0 ? kOld : kNew, kScenarios[si]);
        us[li][si].push_back(smp.usec_per_call);
        calls[li][si] += smp.calls;
        last[li][si] = smp;
      }
    }
  }
  std::printf(
      "| scenario                | limit   | state before (units) | calls x cost | OLD ZSET us/call        | "
      "NEW ring us/call     | OLD / NEW |\n");
  std::printf(
      "|-------------------------|--------:|---------------------:|-------------:|------------------------:|"
      "---------------------:|----------:|\n");
  for (size_t si = 0; si < kNumScenarios; ++si) {
    const Scenario& s = kScenarios[si];
    char calls_cost[32];
    std::snprintf(calls_cost, sizeof calls_cost, "%lld x %lld", static_cast<long long>(s.calls),
                  static_cast<long long>(s.cost));
    std::printf("| %-23s | %7lld | %20lld | %12s | %23s | %20s | %8.2fx |\n", s.name, static_cast<long long>(s.limit),
                static_cast<long long>(s.prefill_calls * s.prefill_cost), calls_cost, spread(us[0][si], "%.1f").c_str(),
                spread(us[1][si], "%.1f").c_str(), median(us[0][si]) / median(us[1][si]));
  }
  std::printf("\nEVALSHA calls as Redis counted them over all repetitions (the divisor), and the Redis commands\n");
  std::printf("each script ran per EVALSHA (redis.call, from the other cmdstat_ lines, last repetition):\n\n");
  std::printf("| scenario                | EVALSHA counted OLD / NEW (requested) | OLD cmds/call | NEW cmds/call |\n");
  std::printf("|-------------------------|--------------------------------------:|--------------:|--------------:|\n");
  for (size_t si = 0; si < kNumScenarios; ++si) {
    char counted[64];
    std::snprintf(counted, sizeof counted, "%lld / %lld (%lld)", calls[0][si], calls[1][si],
                  static_cast<long long>(kScenarios[si].calls) * reps);
    std::printf("| %-23s | %37s | %13.1f | %13.1f |\n", kScenarios[si].name, counted, last[0][si].inner_per_call,
                last[1][si].inner_per_call);
  }
  std::printf("\n");
  for (size_t si = 0; si < kNumScenarios; ++si)
    std::printf("  %-23s OLD: %s\n  %-23s NEW: %s\n", kScenarios[si].name, last[0][si].breakdown.c_str(), "",
                last[1][si].breakdown.c_str());

  // cost 1000 / cost 1, per layout: of the medians, and per repetition (the
  // two measurements of one repetition ran back to back) as min..max.
  std::printf(
      "\n| ratio cost 1000 / cost 1 | OLD ZSET                 | NEW ring               | NEW target |"
      " met |\n");
  std::printf("|--------------------------|-------------------------:|-----------------------:|------------|-----|\n");
  bool all_met = true;
  // Each pair: the kScenarios index of its cost-1 row; the cost-1000 row follows it.
  for (size_t pair : {size_t{0}, size_t{2}, size_t{5}}) {
    std::string cell[2];
    double med[2];
    for (int li = 0; li < 2; ++li) {
      std::vector<double> per_rep;
      for (int rep = 0; rep < reps; ++rep) per_rep.push_back(us[li][pair + 1][rep] / us[li][pair][rep]);
      med[li] = median(us[li][pair + 1]) / median(us[li][pair]);
      auto [lo, hi] = std::minmax_element(per_rep.begin(), per_rep.end());
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2fx (%.2f..%.2f)", med[li], *lo, *hi);
      cell[li] = buf;
    }
    const bool target = pair != 2;  // the target is for admitted checks
    const bool met = med[1] <= 2.0;
    if (target) all_met = all_met && met;
    const char* row = pair == 0 ? "admitted" : pair == 2 ? "denied (full key)" : "admitted, new key";
    std::printf("| %-24s | %24s | %22s | %-10s | %-3s |\n", row, cell[0].c_str(), cell[1].c_str(),
                target ? "<= 2x" : "(none)", target ? (met ? "yes" : "NO") : "-");
  }
  std::printf("\n(ratio of the medians; in brackets the range of the per-repetition ratios)\n");
  std::printf("NEW time target (admitted cost 1000 / cost 1 <= 2x): %s\n\n", all_met ? "met" : "NOT met");
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  if (reps < 1) reps = 1;
  pltest::RedisServer server;
  Conn c(server.port());
  load_scripts(c);
  std::string version = c.text({"INFO", "server"});
  size_t p = version.find("redis_version:");
  version = p == std::string::npos ? "?" : version.substr(p + 14, version.find_first_of("\r\n", p) - p - 14);
  std::printf("redis-server %s\n", version.c_str());
  std::printf("OLD: ZSET, script SHA1 %s (bench/legacy/sliding_log_zset.lua: commit 0b2b4d8's prelude + script)\n",
              kOld.sha1);
  std::printf("NEW: ring, script SHA1 %s (core/scripts/single/sliding_log.lua, as the library embeds it)\n\n",
              kNew.sha1);
  memory_table(c, server);
  time_table(c, reps);
  return 0;
}
