// polylimit - command-line front end over the C ABI: check, peek and reset a
// key, show keys' server-side state, and benchmark a deployment. Built for
// scripts: getopt_long options, POLYLIMIT_URL, --json (one object per line),
// and fixed exit codes (0 admitted, 1 denied, 2 error or bad usage).
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "policy.h"
#include "polylimit.h"

namespace {

const char* kUsage = R"(usage: polylimit [options] <command> [arguments]
       polylimit [options] <command> -- KEY     (a KEY that starts with '-')

Commands:
  check KEY       admit --cost units for KEY under --spec (consumes them).
                  Exit status: 0 admitted, 1 denied, 2 error.
  peek KEY        what a check of one unit would answer now; consumes nothing.
                  Exit status as for check.
  reset KEY       clear KEY's state: it is back to full capacity.
  stats KEY...    the server-side state of each KEY (a peek: limit, remaining,
                  retry_after_ms, reset_after_ms), read from the server, so it
                  shows what every client did. It then prints the client
                  counters (checks, round trips, latency histogram; Prometheus
                  text, or one JSON object with "scope":"process"). Those are
                  per client and per process: here they count only this one
                  polylimit run (the peeks above), never your application's
                  checks; read those from your application's own client.
  policy check FILE, policy explain FILE [...]
                  check a policy document, or say what it does with one
                  request ('polylimit policy --help').
  bench           benchmark --threads threads for --seconds seconds, half on
                  the allow path (every check on a new key, so it is admitted)
                  and half on the deny path (one key, drained first, so checks
                  are denied; drained again, outside the measured time, when
                  it refills); prints checks/s over the measured time and
                  latency percentiles for each path. Keys of the allow path
                  expire after the --spec window.

Options (--opt VALUE and --opt=VALUE both work; '--' ends the options):
  --url URL          redis://[user:pass@]host:port[/db], unix:///path.sock,
                     redis+cluster://h1:p1,h2:p2, redis+sentinel://s1:p1/master
                     or memory:// (in-process: nothing is shared with other
                     processes). Default: $POLYLIMIT_URL. There is no built-in
                     default: with neither, polylimit stops with an error.
  --spec SPEC        rate spec, e.g. "100/minute" or "10/s; 1000/hour"
                     (default "10/s"; bench default "1000/minute")
  --algorithm NAME   sliding_log (default), sliding_counter, fixed_window, gcra
  --prefix P         Redis key prefix (default "pl")
  --cost N           units per check, 1..1000000 (default 1)
  --deny-cache N     local deny cache of N keys (default 0: off)
  --timeout-ms MS    command timeout, 1..3600000 (default 1000)
  --threads N        bench: threads, 1..1024 (default 4)
  --pool-size N      connections per Redis node, 1..4096 (default: the
                     library's, 2; the threads share them, pipelined, as an
                     application's threads do)
  --no-coalescing    every check is its own script call (by default checks of
                     one key waiting behind a call of it go out as one call,
                     and checks of one limit on many keys as keys calls)
  --seconds S        bench: total duration in seconds; fractions allowed
                     (e.g. 0.5), 0 < S <= 86400 (default 5)
  --json             check, peek, reset, stats, bench: print one JSON object
                     per line. Fields are named like the C structs:
                     polylimit_decision (allowed, cached, degraded, shadowed:
                     true/false; limit, remaining, retry_after_ms,
                     reset_after_ms, granted: integers) and polylimit_stats.
                     "key" holds the key; invalid UTF-8 bytes become U+FFFD
                     and "key_hex" then holds the exact bytes.
  -V, --version      print the library version and exit
  -h, --help         this text

Environment:
  POLYLIMIT_URL      the URL when --url is not given

Exit status: 0 admitted (or done), 1 denied (check, peek), 2 error or bad
usage (with a message on stderr). Passwords in URLs are never printed.
)";

// ---- secrets --------------------------------------------------------------

// The URL and the library's redaction of it (polylimit_redact_url, the one
// every message of the library already uses): what this program prints.
struct Secrets {
  std::string url, redacted;
};
Secrets g_secrets;

void set_url_secrets(const std::string& url) {
  g_secrets = Secrets();
  g_secrets.url = url;
  char* out = nullptr;
  size_t len = 0;
  if (polylimit_redact_url(url.c_str(), &out, &len, nullptr) == POLYLIMIT_OK) {
    g_secrets.redacted.assign(out, len);
    polylimit_free(out);
  } else {
    g_secrets.redacted = "***";  // out of memory: show nothing of it
  }
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

// A message with the URL, should it quote it whole, shown redacted. (The
// library's own messages never hold a password.)
std::string scrub(std::string msg, bool /*truncated*/) {
  if (g_secrets.url.empty() || g_secrets.url == g_secrets.redacted) return msg;
  replace_all(msg, g_secrets.url, g_secrets.redacted);
  return msg;
}

// ---- errors and usage -----------------------------------------------------

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "polylimit: %s\n(run 'polylimit --help' for usage)\n", scrub(msg, false).c_str());
  std::exit(2);
}

[[noreturn]] void die(const std::string& what, const polylimit_error& err) {
  size_t n = strnlen(err.message, sizeof err.message);
  std::string msg(err.message, n);
  std::fprintf(stderr, "polylimit: %s: %s (%s)\n", scrub(what, false).c_str(),
               scrub(msg, n + 1 >= sizeof err.message).c_str(), polylimit_status_name(err.code));
  std::exit(2);
}

// ---- output ---------------------------------------------------------------

// Length of the valid UTF-8 sequence at s[i], or 0 (overlongs, surrogates
// and code points above U+10FFFF are invalid).
size_t utf8_len(const std::string& s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  return n;
}

// A JSON string literal. Invalid UTF-8 bytes become U+FFFD; *lossy says so.
std::string json_string(const std::string& s, bool* lossy = nullptr) {
  std::string out = "\"";
  if (lossy) *lossy = false;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_len(s, i);
    if (n == 0) {
      out += "\\ufffd";
      if (lossy) *lossy = true;
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s, i, n);
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
    i += n;
  }
  return out + "\"";
}

std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// One JSON object, built field by field and printed as one line.
class JsonLine {
 public:
  explicit JsonLine(const char* command) { str("command", command); }
  JsonLine& raw(const char* name, const std::string& value) {
    text_ += text_.empty() ? "{" : ",";
    text_ += json_string(name) + ":" + value;
    return *this;
  }
  JsonLine& str(const char* name, const std::string& v) { return raw(name, json_string(v)); }
  JsonLine& key(const std::string& k) {
    bool lossy = false;
    raw("key", json_string(k, &lossy));
    if (lossy) str("key_hex", hex(k));
    return *this;
  }
  JsonLine& field(const char* name, uint8_t v) { return raw(name, v ? "true" : "false"); }
  JsonLine& field(const char* name, int64_t v) { return raw(name, std::to_string(v)); }
  JsonLine& field(const char* name, uint64_t v) { return raw(name, std::to_string(v)); }
  JsonLine& field(const char* name, int v) { return raw(name, std::to_string(v)); }
  JsonLine& number(const char* name, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", std::isfinite(v) ? v : 0.0);
    return raw(name, buf);
  }
  void print() const { std::printf("%s}\n", text_.c_str()); }

 private:
  std::string text_;
};

// A key for the text output: control bytes, space and backslash escaped, so
// one result stays one line of name=value words.
std::string text_key(const std::string& k) {
  std::string out;
  for (unsigned char c : k) {
    if (c <= 0x20 || c == 0x7F || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void print_decision(const char* command, const std::string& key, const polylimit_decision& d, bool json,
                    const char* scope = nullptr) {
  if (json) {
    JsonLine line(command);
    if (scope) line.str("scope", scope);
    line.key(key);
#define POLYLIMIT_CLI_FIELD(f) line.field(#f, d.f);
    POLYLIMIT_DECISION_FIELDS(POLYLIMIT_CLI_FIELD)
#undef POLYLIMIT_CLI_FIELD
    line.print();
    return;
  }
  std::printf("key=%s allowed=%d limit=%lld remaining=%lld retry_after_ms=%lld reset_after_ms=%lld%s%s%s\n",
              text_key(key).c_str(), d.allowed, static_cast<long long>(d.limit), static_cast<long long>(d.remaining),
              static_cast<long long>(d.retry_after_ms), static_cast<long long>(d.reset_after_ms),
              d.cached ? " cached" : "", d.degraded ? " degraded" : "", d.shadowed ? " shadowed" : "");
}

// ---- arguments ------------------------------------------------------------

struct Args {
  std::string url;
  const char* url_source = "--url";
  std::string spec;
  std::string algorithm = "sliding_log";
  std::string prefix = "pl";
  long long cost = 1;
  int threads = 4;
  int pool_size = 0;  // 0: the library's default
  bool no_coalescing = false;
  double seconds = 5;
  int deny_cache = 0;
  int timeout_ms = 1000;
  bool json = false;
  bool url_given = false;
  std::string command;
  std::vector<std::string> rest;
};

long long integer(const std::string& flag, const char* v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi)
    usage_error(flag + " '" + v + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return n;
}

double seconds(const char* v) {
  char* end = nullptr;
  errno = 0;
  double s = std::strtod(v, &end);
  if (errno || end == v || *end || !std::isfinite(s) || !(s > 0) || s > 86400)
    usage_error(std::string("--seconds '") + v + "' is not a number of seconds in (0, 86400]");
  return s;
}

enum Opt {
  kUrl = 256,
  kSpec,
  kAlgorithm,
  kPrefix,
  kCost,
  kThreads,
  kSeconds,
  kDenyCache,
  kTimeoutMs,
  kJson,
  kPoolSize,
  kNoCoalescing
};

Args parse(int argc, char** argv) {
  static const option kOptions[] = {
      {"url", required_argument, nullptr, kUrl},
      {"spec", required_argument, nullptr, kSpec},
      {"algorithm", required_argument, nullptr, kAlgorithm},
      {"prefix", required_argument, nullptr, kPrefix},
      {"cost", required_argument, nullptr, kCost},
      {"threads", required_argument, nullptr, kThreads},
      {"pool-size", required_argument, nullptr, kPoolSize},
      {"no-coalescing", no_argument, nullptr, kNoCoalescing},
      {"seconds", required_argument, nullptr, kSeconds},
      {"deny-cache", required_argument, nullptr, kDenyCache},
      {"timeout-ms", required_argument, nullptr, kTimeoutMs},
      {"json", no_argument, nullptr, kJson},
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, 'V'},
      {nullptr, 0, nullptr, 0},
  };
  Args a;
  opterr = 0;  // our own messages, which name the argument
  // The long option as written ("--cost=x" -> "--cost"), for messages.
  auto written = [&]() -> std::string {
    std::string s = argv[optind - 1];
    return s.substr(0, s.find('='));
  };
  for (;;) {
    int index = -1;
    optopt = 0;
    // "-": operands come back in order as c == 1, so options may follow the
    // command whatever POSIXLY_CORRECT says; ":": a missing value is ':'.
    int c = getopt_long(argc, argv, "-:hV", kOptions, &index);
    if (c == -1) break;
    const std::string name = index >= 0 ? std::string("--") + kOptions[index].name : "";
    switch (c) {
      case 1:
        if (a.command.empty())
          a.command = optarg;
        else
          a.rest.push_back(optarg);
        break;
      case 'h': std::fputs(kUsage, stdout); std::exit(0);
      case 'V': {
        const char* v = polylimit_version_string();
        if (std::strcmp(v, POLYLIMIT_VERSION_STRING) == 0)
          std::printf("polylimit %s\n", v);
        else
          std::printf("polylimit %s (built with polylimit.h %s)\n", v, POLYLIMIT_VERSION_STRING);
        std::exit(0);
      }
      case kUrl:
        a.url = optarg;
        a.url_given = true;
        set_url_secrets(a.url);
        break;
      case kSpec: a.spec = optarg; break;
      case kAlgorithm: a.algorithm = optarg; break;
      case kPrefix: a.prefix = optarg; break;
      case kCost: a.cost = integer(name, optarg, 1, 1000000); break;
      case kThreads: a.threads = static_cast<int>(integer(name, optarg, 1, 1024)); break;
      case kNoCoalescing: a.no_coalescing = true; break;
      case kPoolSize:
        a.pool_size = static_cast<int>(integer(name, optarg, POLYLIMIT_MIN_POOL_SIZE, POLYLIMIT_MAX_POOL_SIZE));
        break;
      case kSeconds: a.seconds = seconds(optarg); break;
      case kDenyCache: a.deny_cache = static_cast<int>(integer(name, optarg, 0, 10000000)); break;
      case kTimeoutMs: a.timeout_ms = static_cast<int>(integer(name, optarg, 1, 3600000)); break;
      case kJson: a.json = true; break;
      case ':': usage_error("option " + written() + " needs a value");
      default:
        // glibc: optopt is the character of an unknown short option, the
        // value of a known long option given "=value" though it takes none,
        // and 0 for an unknown or ambiguous long option.
        if (optopt > 0 && optopt < 128 && optopt != 'h' && optopt != 'V')
          usage_error("unknown option '-" + std::string(1, static_cast<char>(optopt)) +
                      "' (to pass a KEY that starts with '-', put '--' before it)");
        if (optopt != 0) usage_error("option " + written() + " takes no value");
        usage_error("unknown or ambiguous option '" + written() + "'");
    }
  }
  for (int i = optind; i < argc; ++i) {  // after "--"
    if (a.command.empty())
      a.command = argv[i];
    else
      a.rest.push_back(argv[i]);
  }
  if (a.command.empty()) usage_error("no command given (check, peek, reset, stats or bench)");
  return a;
}

int algorithm_of(const std::string& name) {
  if (name == "sliding_log") return POLYLIMIT_ALG_SLIDING_LOG;
  if (name == "sliding_counter") return POLYLIMIT_ALG_SLIDING_COUNTER;
  if (name == "fixed_window") return POLYLIMIT_ALG_FIXED_WINDOW;
  if (name == "gcra") return POLYLIMIT_ALG_GCRA;
  usage_error("unknown --algorithm '" + name + "' (sliding_log, sliding_counter, fixed_window or gcra)");
}

// ---- bench ----------------------------------------------------------------

// Latencies in nanoseconds, log-linear: 64 sub-buckets per power of two
// (under 1.6% error), fixed memory however long the run.
class Histogram {
 public:
  static constexpr int kSub = 64, kBuckets = kSub * 59;
  void add(uint64_t ns) {
    ++counts_[index(ns)];
    ++count_;
    max_ = std::max(max_, ns);
  }
  void merge(const Histogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    count_ += o.count_;
    max_ = std::max(max_, o.max_);
  }
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  // The value at quantile p (0..1): the upper edge of its bucket, capped at max.
  uint64_t quantile(double p) const {
    if (count_ == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_)));
    rank = std::max<uint64_t>(1, std::min(rank, count_));
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(upper(i), max_);
    }
    return max_;
  }

 private:
  static int index(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);  // exact
    int e = 63 - __builtin_clzll(v) - 6;       // v >> e is in [64, 127]
    return e * kSub + static_cast<int>(v >> e);
  }
  static uint64_t upper(int i) {
    if (i < kSub) return static_cast<uint64_t>(i);
    int e = i / kSub - 1;
    uint64_t m = static_cast<uint64_t>(i - e * kSub);
    return e >= 57 ? UINT64_MAX : ((m + 1) << e) - 1;
  }
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0, max_ = 0;
};

struct PathResult {
  const char* path;
  double elapsed_s = 0;
  uint64_t checks = 0, admitted = 0, denied = 0, errors = 0;
  uint64_t drains = 0;  // deny path: the key refilled and was drained again
  double drain_s = 0;   // the time those drains took, summed over threads
  Histogram latency;
  std::string first_error;

  // The measured time: a thread's drains are not part of it, so it is the
  // elapsed time less the threads' mean time spent draining.
  double measured_s(int threads) const { return elapsed_s - drain_s / std::max(1, threads); }
  double rate(int threads) const {
    const double measured = measured_s(threads);
    return measured > 0 ? static_cast<double>(checks) / measured : 0;
  }
};

// Empties `key`: takes everything that fits until a check is denied.
bool drain(polylimit_limiter* l, const std::string& key, polylimit_error* err) {
  polylimit_decision d;
  for (int i = 0; i < 64; ++i) {
    if (polylimit_limiter_check_at_most(l, key.data(), key.size(), POLYLIMIT_MAX_LIMIT, &d, err) != POLYLIMIT_OK)
      return false;
    if (!d.allowed) return true;
  }
  return true;  // refilled as fast as drained (a tiny window); measure anyway
}

// Runs one path for `seconds`. allow: every check is on a new key. deny: all
// checks go to `deny_key`, drained first and drained again whenever a check
// got through (the window moved on); those drains are neither counted as
// checks nor part of the measured time (PathResult::rate).
PathResult run_path(const Args& a, polylimit_limiter* l, const char* path, const std::string& run, double secs) {
  PathResult r;
  r.path = path;
  const bool allow = std::strcmp(path, "allow") == 0;
  const std::string deny_key = "bench:" + run + ":deny";
  polylimit_error err;
  if (!allow && !drain(l, deny_key, &err)) die("bench: drain the deny-path key", err);

  std::atomic<bool> go{false}, stop{false};
  std::atomic<int> ready{0};
  std::vector<PathResult> per(a.threads);
  std::mutex error_mutex;
  std::vector<std::thread> threads;
  for (int t = 0; t < a.threads; ++t)
    threads.emplace_back([&, t] {
      PathResult& mine = per[t];
      polylimit_decision d;
      polylimit_error e;
      const std::string base = "bench:" + run + ":allow:" + std::to_string(t) + ":";
      uint64_t n = 0;
      // An error ends the run (exit status 2); the first one is reported.
      auto failed = [&](int code) {
        ++mine.errors;
        std::lock_guard<std::mutex> lock(error_mutex);
        if (r.first_error.empty()) r.first_error = std::string(e.message) + " (" + polylimit_status_name(code) + ")";
        stop = true;
      };
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      while (!stop.load(std::memory_order_relaxed)) {
        std::string key = allow ? base + std::to_string(n++) : deny_key;
        auto t0 = std::chrono::steady_clock::now();
        int rc = polylimit_limiter_check(l, key.data(), key.size(), a.cost, &d, &e);
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
        ++mine.checks;
        mine.latency.add(static_cast<uint64_t>(std::max<int64_t>(0, ns.count())));
        if (rc != POLYLIMIT_OK) {
          failed(rc);
        } else if (d.allowed) {
          ++mine.admitted;
          if (allow) continue;
          const auto d0 = std::chrono::steady_clock::now();
          const bool drained = drain(l, deny_key, &e);
          ++mine.drains;
          mine.drain_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - d0).count();
          if (!drained) failed(e.code);
        } else {
          ++mine.denied;
        }
      }
    });
  while (ready.load() < a.threads) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(secs));
  stop = true;
  for (auto& th : threads) th.join();
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const PathResult& p : per) {
    r.checks += p.checks;
    r.admitted += p.admitted;
    r.denied += p.denied;
    r.errors += p.errors;
    r.drains += p.drains;
    r.drain_s += p.drain_s;
    r.latency.merge(p.latency);
  }
  return r;
}

// The connections per node the bench ran with, as the library resolves 0.
int pool_size(const Args& a) { return a.pool_size ? a.pool_size : static_cast<int>(POLYLIMIT_DEFAULT_POOL_SIZE); }

int bench(const Args& a, polylimit_limiter* l, polylimit_client* client) {
  // A first call fails fast with a clear message (no server, bad password).
  polylimit_decision d;
  polylimit_error err;
  const std::string probe = "bench:probe";
  if (polylimit_limiter_peek(l, probe.data(), probe.size(), &d, &err) != POLYLIMIT_OK) die("bench", err);

  // Keys unique to this run, so earlier runs leave nothing that counts.
  char run[64];
  std::snprintf(run, sizeof run, "%llx-%lx",
                static_cast<unsigned long long>(std::chrono::system_clock::now().time_since_epoch().count()),
                static_cast<long>(getpid()));
  std::vector<PathResult> results;
  results.push_back(run_path(a, l, "allow", run, a.seconds / 2));
  if (results.back().errors == 0) results.push_back(run_path(a, l, "deny", run, a.seconds / 2));

  polylimit_stats s = POLYLIMIT_STATS_INIT;
  polylimit_client_stats(client, &s, nullptr);
  int status = 0;
  if (!a.json)
    std::printf("url=%s spec=\"%s\" algorithm=%s threads=%d pool_size=%d seconds=%g cost=%lld\n",
                g_secrets.redacted.c_str(), a.spec.c_str(), a.algorithm.c_str(), a.threads, pool_size(a), a.seconds,
                a.cost);
  for (const PathResult& r : results) {
    const double rate = r.rate(a.threads);
    auto us = [&](double p) { return static_cast<double>(r.latency.quantile(p)) / 1000.0; };
    if (a.json) {
      JsonLine line("bench");
      line.str("path", r.path)
          .str("url", g_secrets.redacted)
          .str("spec", a.spec)
          .str("algorithm", a.algorithm)
          .field("threads", a.threads)
          .field("pool_size", pool_size(a))
          .field("connect_attempts", s.connect_attempts)
          .field("round_trips", s.round_trips)  // these three: the whole run (both paths)
          .field("script_calls", s.script_calls)
          .field("coalesced", s.coalesced)
          .field("cost", static_cast<int64_t>(a.cost))
          .number("elapsed_s", r.elapsed_s)
          .field("checks", r.checks)
          .field("admitted", r.admitted)
          .field("denied", r.denied)
          .field("errors", r.errors)
          .field("drains", r.drains)
          .number("drain_s", r.drain_s)
          .number("checks_per_s", rate)
          .number("p50_us", us(0.50))
          .number("p90_us", us(0.90))
          .number("p99_us", us(0.99))
          .number("p999_us", us(0.999))
          .number("max_us", static_cast<double>(r.latency.max()) / 1000.0)
          .print();
    } else {
      std::printf("%-5s  %llu checks in %.3f s = %.0f checks/s  admitted %llu  denied %llu  errors %llu\n", r.path,
                  static_cast<unsigned long long>(r.checks), r.measured_s(a.threads), rate,
                  static_cast<unsigned long long>(r.admitted), static_cast<unsigned long long>(r.denied),
                  static_cast<unsigned long long>(r.errors));
      if (r.drains > 0)
        std::printf("%-5s  the key refilled %llu times: drained again in %.3f s (all threads), left out of checks/s\n",
                    r.path, static_cast<unsigned long long>(r.drains), r.drain_s);
      std::printf("%-5s  latency us  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", r.path, us(0.50), us(0.90),
                  us(0.99), us(0.999), static_cast<double>(r.latency.max()) / 1000.0);
    }
    if (r.errors) {
      std::fprintf(stderr, "polylimit: bench: %s path: %s\n", r.path, scrub(r.first_error, true).c_str());
      status = 2;
    }
  }
  if (!a.json)
    std::printf("round trips %llu, script calls %llu, checks coalesced %llu (this process, both paths)\n",
                static_cast<unsigned long long>(s.round_trips), static_cast<unsigned long long>(s.script_calls),
                static_cast<unsigned long long>(s.coalesced));
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  // `polylimit policy ...` has options of its own (cli/policy.cpp).
  if (argc >= 2 && std::strcmp(argv[1], "policy") == 0) return run_policy(argc - 1, argv + 1);
  Args a = parse(argc, argv);
  const bool is_bench = a.command == "bench";
  const bool one_key = a.command == "check" || a.command == "peek" || a.command == "reset";
  if (!one_key && a.command != "stats" && !is_bench)
    usage_error("unknown command '" + a.command + "' (check, peek, reset, stats or bench)");
  if (one_key && a.rest.size() != 1)
    usage_error(a.command + " takes exactly one KEY, got " + std::to_string(a.rest.size()) +
                " (to pass a KEY that starts with '-', put '--' before it)");
  if (a.command == "stats" && a.rest.empty())
    usage_error(
        "stats takes one or more KEYs: it reads their state from the server (the client counters of a "
        "one-shot polylimit process count only its own calls)");
  if (is_bench && !a.rest.empty()) usage_error("bench takes no arguments, got '" + a.rest[0] + "'");
  if (a.spec.empty()) a.spec = is_bench ? "1000/minute" : "10/s";
  const int algorithm = algorithm_of(a.algorithm);

  if (!a.url_given) {
    const char* env = std::getenv("POLYLIMIT_URL");
    if (!env || !*env)
      usage_error(
          "no server URL: pass --url URL or set POLYLIMIT_URL (e.g. redis://127.0.0.1:6379); "
          "for the in-process backend, which shares nothing with other processes, pass --url memory:// explicitly");
    a.url = env;
    a.url_source = "POLYLIMIT_URL";
    set_url_secrets(a.url);
  }

  polylimit_error err;
  polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
  co.command_timeout_ms = a.timeout_ms;
  // The library's default unless asked: bench measures what an application
  // with these many threads gets, not one connection per thread.
  co.pool_size = a.pool_size;
  co.no_coalescing = a.no_coalescing ? 1 : 0;
  polylimit_client* client = nullptr;
  if (polylimit_client_open(a.url.c_str(), &co, &client, &err) != POLYLIMIT_OK) die(a.url_source, err);
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.algorithm = algorithm;
  lo.prefix = a.prefix.c_str();
  lo.deny_cache_size = a.deny_cache;
  polylimit_limiter* l = nullptr;
  if (polylimit_limiter_new_spec(client, a.spec.c_str(), &lo, &l, &err) != POLYLIMIT_OK) die("--spec", err);

  int status = 0;
  polylimit_decision d;
  if (a.command == "check" || a.command == "peek") {
    const std::string& key = a.rest[0];
    int rc = a.command == "check" ? polylimit_limiter_check(l, key.data(), key.size(), a.cost, &d, &err)
                                  : polylimit_limiter_peek(l, key.data(), key.size(), &d, &err);
    if (rc != POLYLIMIT_OK) die(a.command, err);
    print_decision(a.command.c_str(), key, d, a.json);
    status = d.allowed ? 0 : 1;
  } else if (a.command == "reset") {
    const std::string& key = a.rest[0];
    if (polylimit_limiter_reset(l, key.data(), key.size(), &err) != POLYLIMIT_OK) die("reset", err);
    if (a.json)
      JsonLine("reset").key(key).field("reset", static_cast<uint8_t>(1)).print();
    else
      std::printf("key=%s reset\n", text_key(key).c_str());
  } else if (a.command == "stats") {
    for (const std::string& key : a.rest) {
      if (polylimit_limiter_peek(l, key.data(), key.size(), &d, &err) != POLYLIMIT_OK) die("stats: peek", err);
      print_decision("stats", key, d, a.json, "server");
    }
    if (a.json) {
      polylimit_stats s = POLYLIMIT_STATS_INIT;
      if (polylimit_client_stats(client, &s, &err) != POLYLIMIT_OK) die("stats", err);
      JsonLine line("stats");
      line.str("scope", "process");
#define POLYLIMIT_CLI_COUNTER(f) line.field(#f, static_cast<uint64_t>(s.f));
      POLYLIMIT_STATS_COUNTERS(POLYLIMIT_CLI_COUNTER)
#undef POLYLIMIT_CLI_COUNTER
      line.print();
    } else {
      char* text = nullptr;
      size_t len = 0;
      if (polylimit_client_stats_prometheus(client, &text, &len, &err) != POLYLIMIT_OK) die("stats", err);
      std::printf("# Client counters of this polylimit process only (the peeks above), not of other clients.\n");
      std::fwrite(text, 1, len, stdout);
      if (len > 0 && text[len - 1] != '\n') std::fputc('\n', stdout);
      polylimit_free(text);
    }
  } else {
    status = bench(a, l, client);
  }
  polylimit_limiter_free(l);
  polylimit_client_close(client);
  std::fflush(stdout);
  if (std::ferror(stdout)) {
    std::fprintf(stderr, "polylimit: cannot write to standard output\n");
    return 2;
  }
  return status;
}
