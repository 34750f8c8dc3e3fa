// client.cpp - Client::open picks the backend for a URL; the client's timer
// (Client::run_at).
#include "polylimit/client.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <thread>

#include "backend/memory_backend.h"
#include "backend/redis_backend.h"
#include "net/tls.h"
#include "polylimit/errors.h"
#include "transport/cluster_transport.h"
#include "transport/sentinel_transport.h"
#include "transport/transport.h"
#include "util/clock.h"

namespace polylimit {
namespace {

std::unique_ptr<Transport> make_transport(const Endpoint& ep, const PoolOptions& pool,
                                          std::shared_ptr<const TlsContext> tls,
                                          const std::shared_ptr<const MonotonicClock>& clock) {
  if (ep.kind == Endpoint::Kind::kCluster) return std::make_unique<ClusterTransport>(ep, pool, std::move(tls), clock);
  if (ep.kind == Endpoint::Kind::kSentinel) return std::make_unique<SentinelTransport>(ep, pool, std::move(tls), clock);
  return std::make_unique<StandaloneTransport>(ep, pool, std::move(tls), clock);
}

}  // namespace

void validate(const PoolOptions& o) {
  check_bound(bounds::kPoolSize, o.size);
  check_bound(bounds::kConnectTimeoutMs, o.connect_timeout_ms);
  check_bound(bounds::kCommandTimeoutMs, o.command_timeout_ms);
  check_bound(bounds::kAcquireTimeoutMs, o.acquire_timeout_ms);
  check_bound(bounds::kKeepaliveS, o.keepalive_s);
  check_bound(bounds::kIdleCheckMs, o.idle_check_ms);
}

std::string Client::resolve_url(const std::string& url) {
  if (!url.empty()) return url;
  const char* env = std::getenv("POLYLIMIT_URL");
  if (env != nullptr && *env != '\0') return env;
  throw_invalid(
      "url: none given and POLYLIMIT_URL is not set; pass a redis://, rediss://, redis+cluster:// or "
      "redis+sentinel:// URL, or memory:// for a limiter local to this process");
}

std::shared_ptr<Client> Client::open(const std::string& url, const ClientOptions& options) {
  Endpoint ep = parse_url(resolve_url(url));
  validate(options.pool);
  validate_client_name(options.name);
  // TLS options on a URL without TLS would be silently ignored: refuse them.
  if (!ep.tls && options.tls.any_set())
    throw_invalid(
        "tls options are set but the URL does not use TLS (rediss://, rediss+cluster://, rediss+sentinel://)");
  // One TLS context per client, shared by all its connections; its files are
  // read now, so that a bad path fails here (EINVALID naming the option).
  std::shared_ptr<const TlsContext> tls;
  if (ep.tls) tls = std::make_shared<const TlsContext>(options.tls);
  std::shared_ptr<const MonotonicClock> clock = options.clock ? options.clock : MonotonicClock::real();
  std::unique_ptr<Backend> backend;
  if (ep.kind == Endpoint::Kind::kMemory)
    backend = std::make_unique<MemoryBackend>(options.memory_clock);
  else
    backend = std::make_unique<RedisBackend>(make_transport(ep, options.pool, std::move(tls), clock), options.coalesce);
  return std::shared_ptr<Client>(new Client(std::move(ep), std::move(backend), options.name, std::move(clock)));
}

void Client::close() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  std::vector<std::weak_ptr<std::function<void()>>> hooks;
  {
    std::lock_guard<std::mutex> lock(hooks_mu_);
    hooks.swap(close_hooks_);
  }
  for (auto& h : hooks)
    if (auto hook = h.lock()) (*hook)();
  backend_->close();
  fire_timer();  // pending acquire retries meet the closed client now, not when their wait ends
}

void Client::on_close(std::weak_ptr<std::function<void()>> hook) {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  // Drop hooks whose owners have gone, so a client that outlives many
  // limiters keeps no list of dead ones.
  close_hooks_.erase(std::remove_if(close_hooks_.begin(), close_hooks_.end(),
                                    [](const std::weak_ptr<std::function<void()>>& w) { return w.expired(); }),
                     close_hooks_.end());
  close_hooks_.push_back(std::move(hook));
}

void Client::ensure_open() const {
  if (closed()) throw Error(ErrorCode::kClosed, "the client is closed");
}

Stats Client::stats() const {
  Stats s = metrics_->snapshot();
  s.round_trips = static_cast<uint64_t>(backend_->round_trips());
  s.noscript_reloads = static_cast<uint64_t>(backend_->noscript_reloads());
  s.script_calls = static_cast<uint64_t>(backend_->script_calls());
  s.coalesced = static_cast<uint64_t>(backend_->coalesced());
  s.evicting_nodes = static_cast<uint64_t>(backend_->evicting_nodes());
  s.connect_attempts = static_cast<uint64_t>(backend_->connect_attempts());
  return s;
}

// ------------------------------------------------------------ timer

// One thread waiting for the earliest job's time (Client::run_at). As with
// BackgroundRunner (transport.cpp), the thread touches only the shared state, so a job that
// drops the last reference to the client (and so to this timer) is safe.
class Timer {
 public:
  using TimePoint = MonotonicClock::time_point;

  explicit Timer(std::shared_ptr<const MonotonicClock> clock) { state_->clock = std::move(clock); }

  // False once closed: then the caller runs the job itself.
  bool schedule(TimePoint when, std::function<void()> job) {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->closed) return false;
    state_->jobs.emplace(when, std::move(job));
    if (!thread_.joinable()) {
      std::shared_ptr<State> state = state_;
      thread_ = std::thread([state] { work(*state); });
    }
    state_->cv.notify_one();
    return true;
  }

  // Runs every pending job now, on this thread; later schedule() refuses.
  void close() {
    std::multimap<TimePoint, std::function<void()>> jobs;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->closed = true;
      jobs.swap(state_->jobs);
      state_->cv.notify_all();
    }
    for (auto& job : jobs) job.second();
  }

  ~Timer() {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->closed = true;
      state_->cv.notify_all();
    }
    if (!thread_.joinable()) return;
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();
    else
      thread_.join();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::multimap<TimePoint, std::function<void()>> jobs;
    std::shared_ptr<const MonotonicClock> clock;
    bool closed = false;
  };

  static void work(State& s) {
    std::unique_lock<std::mutex> lock(s.mu);
    while (!s.closed) {
      if (s.jobs.empty()) {
        s.cv.wait(lock);
        continue;
      }
      const TimePoint now = s.clock->now();
      auto first = s.jobs.begin();
      if (first->first > now) {  // on the real clock: see Client::run_at
        s.cv.wait_for(lock, first->first - now);
        continue;
      }
      std::function<void()> job = std::move(first->second);
      s.jobs.erase(first);
      lock.unlock();
      job();
      job = nullptr;  // may release the timer's owner: only `s` is touched below
      lock.lock();
    }
  }

  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;
};

void Client::run_at(std::chrono::steady_clock::time_point when, std::function<void()> job) {
  std::shared_ptr<Timer> timer;
  {
    std::lock_guard<std::mutex> lock(timer_mu_);
    if (!closed()) {
      if (!timer_) timer_ = std::make_shared<Timer>(clock_);
      timer = timer_;
    }
  }
  if (!timer || !timer->schedule(when, job)) job();
}

void Client::fire_timer() {
  std::shared_ptr<Timer> timer;
  {
    std::lock_guard<std::mutex> lock(timer_mu_);
    timer = timer_;
  }
  if (timer) timer->close();
}

}  // namespace polylimit
