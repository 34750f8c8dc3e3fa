// bench_tls - checks/s through ONE client over TLS (rediss://) against the
// same client over plain TCP, on one redis-server that listens on both a
// plain and a TLS port (certificates made with the openssl command line in a
// temporary directory). 1 and 64 threads, allow and deny paths, default
// client options; the runs are interleaved (plain, TLS, plain, TLS, ...) so
// that drift of the machine hits both alike, and each rate is divided by the
// measured time. Prints the median of the rounds and every round's ratio.
// A program that prints, not a test: no timed assertions.
//
//   bench_tls [rounds=5] [seconds_per_run=1.5] [only]
//
// `only` (for profiling one case) runs just the cells and modes whose
// "<threads> <path> <mode>" contains it, e.g. "64 deny tls".
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "polylimit/limiter.h"
#include "redis_server.h"

using namespace polylimit;
using Clock = std::chrono::steady_clock;

namespace {

void run(const std::string& cmd) {
  if (std::system(("(" + cmd + ") >/dev/null 2>&1").c_str()) != 0)
    throw std::runtime_error("failed (is the openssl command installed?): " + cmd);
}

struct Certs {
  std::string dir, ca, cert, key;
  Certs() {
    char tmpl[] = "/tmp/polylimit-bench-tls-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
    dir = tmpl;
    ca = dir + "/ca.crt";
    cert = dir + "/server.crt";
    key = dir + "/server.key";
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    run("openssl req -x509 " + ec + " -keyout " + dir + "/ca.key -out " + ca + " -days 2 -subj /CN=bench-ca");
    run("openssl req " + ec + " -keyout " + key + " -out " + dir + "/server.csr -subj /CN=localhost");
    std::ofstream(dir + "/ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    run("openssl x509 -req -in " + dir + "/server.csr -CA " + ca + " -CAkey " + dir + "/ca.key -CAcreateserial -out " +
        cert + " -days 2 -extfile " + dir + "/ext");
  }
  ~Certs() {
    if (std::system(("rm -rf '" + dir + "'").c_str()) != 0) { /* best effort */
    }
  }
};

// checks/s of `threads` threads for `seconds` through `client`; deny: every
// check is denied (each thread's key is exhausted first), else admitted.
double measure(const std::shared_ptr<Client>& client, int threads, bool deny, double seconds, int run_id) {
  LimiterOptions o;
  o.prefix = "bench" + std::to_string(run_id);
  o.limit =
      deny ? LimitParams{Algorithm::kSlidingLog, 1, 3600 * 1000} : LimitParams{Algorithm::kSlidingLog, 1000000, 1000};
  Limiter l(client, o);
  if (deny)
    for (int t = 0; t < threads; ++t) l.check("deny:" + std::to_string(t));
  std::atomic<bool> go{false}, stop{false};
  std::atomic<long> total{0}, wrong{0}, errors{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<std::string> keys;
      for (int i = 0; i < 64; ++i)
        keys.push_back(deny ? "deny:" + std::to_string(t) : "allow:" + std::to_string(t) + ":" + std::to_string(i));
      while (!go.load()) std::this_thread::yield();
      long n = 0, bad = 0, failed = 0;
      for (size_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        try {
          if (l.check(keys[deny ? 0 : i % keys.size()]).allowed == deny) ++bad;
          ++n;
        } catch (const Error&) {
          ++failed;
        }
      }
      total += n;
      wrong += bad;
      errors += failed;
    });
  auto t0 = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  if (wrong.load() != 0) std::fprintf(stderr, "warning: %ld checks had the unexpected outcome\n", wrong.load());
  if (errors.load() != 0) std::fprintf(stderr, "warning: %ld checks failed (not counted)\n", errors.load());
  return static_cast<double>(total.load()) / elapsed;
}

// CPU seconds (user + system) this process has used so far.
double client_cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;  // a mode left out by `only`
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const double seconds = argc > 2 ? std::max(0.2, std::atof(argv[2])) : 1.5;
  const std::string only = argc > 3 ? argv[3] : "";
  Certs certs;
  pltest::RedisServer server({}, pltest::TlsFiles{certs.cert, certs.key, certs.ca});
  const int tls_port = server.tls_port();
  // Default options, except a long acquire_timeout_ms: 64 threads share the
  // default pool, and on a loaded machine a 1 s wait for a connection can
  // pass; such failures would be counted neither way.
  ClientOptions plain_options;
  plain_options.pool.acquire_timeout_ms = 10000;
  ClientOptions tls_options = plain_options;
  tls_options.tls.ca_file = certs.ca;
  auto plain = Client::open(server.url(), plain_options);
  auto tls = Client::open("rediss://127.0.0.1:" + std::to_string(tls_port), tls_options);

  std::printf("bench_tls: checks/s through one client, TLS (rediss://, TLS 1.3, verified) vs plain TCP, same server\n");
  std::printf(
      "default client options (pool_size %d; acquire_timeout_ms %d), sliding log, %d interleaved rounds of "
      "%.1f s per cell\n\n",
      plain_options.pool.size, plain_options.pool.acquire_timeout_ms, rounds, seconds);
  struct Cell {
    int threads;
    bool deny;
    std::vector<double> plain, tls;
    // CPU microseconds per check, server and client, of each run.
    std::vector<double> server_us[2], client_us[2];
  };
  std::vector<Cell> cells = {
      {1, false, {}, {}, {}, {}}, {1, true, {}, {}, {}, {}}, {64, false, {}, {}, {}, {}}, {64, true, {}, {}, {}, {}}};
  int run_id = 0;
  for (int r = 0; r < rounds; ++r)
    for (Cell& c : cells) {
      // Alternate which goes first, so neither always runs on a warmer server.
      bool tls_first = r % 2 == 1;
      for (int k = 0; k < 2; ++k) {
        bool use_tls = (k == 0) == tls_first;
        const std::string name =
            std::to_string(c.threads) + (c.deny ? " deny " : " allow ") + (use_tls ? "tls" : "plain");
        if (name.find(only) == std::string::npos) continue;
        const double server0 = server.cpu_seconds(), client0 = client_cpu();
        const auto t0 = Clock::now();
        double rate = measure(use_tls ? tls : plain, c.threads, c.deny, seconds, ++run_id);
        const double calls = rate * std::chrono::duration<double>(Clock::now() - t0).count();
        (use_tls ? c.tls : c.plain).push_back(rate);
        c.server_us[use_tls].push_back((server.cpu_seconds() - server0) * 1e6 / calls);
        c.client_us[use_tls].push_back((client_cpu() - client0) * 1e6 / calls);
      }
      server.command({"FLUSHALL"});
    }

  std::printf(
      "| threads | path  | plain checks/s (median) | TLS checks/s (median) | TLS/plain | TLS/plain per round "
      "| server us/check plain, TLS | client us/check plain, TLS |\n");
  std::printf(
      "|--------:|-------|------------------------:|----------------------:|----------:|---------------------"
      "|---------------------------:|---------------------------:|\n");
  for (const Cell& c : cells) {
    std::string per_round;
    std::vector<double> ratios;
    for (size_t i = 0; i < std::min(c.plain.size(), c.tls.size()); ++i) {
      ratios.push_back(c.tls[i] / c.plain[i]);
      char buf[16];
      std::snprintf(buf, sizeof buf, "%s%.2f", i ? " " : "", ratios.back());
      per_round += buf;
    }
    std::printf("| %7d | %-5s | %23.0f | %21.0f | %9.2f | %s | %12.1f, %5.1f | %12.1f, %5.1f |\n", c.threads,
                c.deny ? "deny" : "allow", median(c.plain), median(c.tls), median(ratios), per_round.c_str(),
                median(c.server_us[0]), median(c.server_us[1]), median(c.client_us[0]), median(c.client_us[1]));
  }
  std::printf(
      "\nTLS/plain is the median of the per-round ratios; CPU per check, the median over rounds of the CPU "
      "the server (INFO cpu) and this process (getrusage, the measuring thread included) used per check. "
      "Connects made: plain %llu, TLS %llu "
      "(no reconnects while measuring).\n",
      static_cast<unsigned long long>(plain->stats().connect_attempts),
      static_cast<unsigned long long>(tls->stats().connect_attempts));
  return 0;
}
