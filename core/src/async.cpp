// async.cpp - the non-blocking check path, from the limiter down to the
// connection: Limiter::check_async, Backend/RedisBackend::evaluate_async,
// StandaloneTransport::run_script_async and the background runner.
#include <condition_variable>
#include <deque>
#include <thread>

#include "breaker.h"
#include "call_deadline.h"
#include "deny_cache.h"
#include "node_pools.h"
#include "polylimit/limiter.h"
#include "polylimit/metrics.h"
#include "transport.h"

namespace polylimit {

// ------------------------------------------------------------ background runner

// A few threads running jobs. The state is shared with the threads, so a job
// that drops the last reference to the transport (and so to this runner)
// from one of them is safe: that thread is detached and returns at once.
class BackgroundRunner {
 public:
  void run(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->jobs.push_back(std::move(job));
    if (state_->idle > 0 || static_cast<int>(threads_.size()) >= Transport::kBackgroundThreads) {
      state_->cv.notify_one();
      return;
    }
    std::shared_ptr<State> state = state_;
    threads_.emplace_back([state] { work(*state); });
  }

  ~BackgroundRunner() {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->stop = true;
      state_->cv.notify_all();
    }
    for (std::thread& t : threads_) {
      if (t.get_id() == std::this_thread::get_id())
        t.detach();
      else
        t.join();
    }
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    int idle = 0;
    bool stop = false;
  };

  static void work(State& s) {
    std::unique_lock<std::mutex> lock(s.mu);
    for (;;) {
      if (!s.jobs.empty()) {
        std::function<void()> job = std::move(s.jobs.front());
        s.jobs.pop_front();
        lock.unlock();
        job();
        job = nullptr;  // may release the runner's owner: only `s` is touched below
        lock.lock();
        continue;
      }
      if (s.stop) return;
      ++s.idle;
      s.cv.wait(lock);
      --s.idle;
    }
  }

  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::vector<std::thread> threads_;
};

Transport::~Transport() {
  std::shared_ptr<BackgroundRunner> runner;
  {
    std::lock_guard<std::mutex> lock(background_mu_);
    runner.swap(background_);
  }
  // Jobs still queued run first (they fail with kClosed once the transport
  // is closed), so every `done` runs.
}

void Transport::run_in_background(std::function<void()> job) {
  background_jobs_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(background_mu_);
  if (!background_) background_ = std::make_shared<BackgroundRunner>();
  background_->run(std::move(job));
}

// ------------------------------------------------------------ script calls

Transport::AsyncCall::AsyncCall(ScriptCache& cache, const scripts::Script& script, const ScriptCall& call,
                                int timeout_ms, ScriptDone done)
    : script(script), keys(call.keys.begin(), call.keys.end()), args(call.args.begin(), call.args.end()),
      attempts(cache, script, /*can_load=*/false),
      deadline(Mux::Clock::now() + std::chrono::milliseconds(timeout_ms)), done(std::move(done)) {}

void Transport::submit_async(const std::shared_ptr<AsyncCall>& c) {
  // The submitter never waits on a connect while a connection is open
  // (grow = false); a resend may open a fresh one.
  PooledConnection conn = c->pool->acquire(/*grow=*/c->attempts.resent());
  Argv keys(c->keys.begin(), c->keys.end()), args(c->args.begin(), c->args.end());
  std::string numkeys;
  conn.submit({c->attempts.command(keys, args, numkeys)}, [this, c](Mux::Call& call) {
    try {
      // Once more on a fresh connection when nothing was written (the
      // connection had been closed while idle; see Mux::Call::may_resend)
      // and time is left, or after NOSCRIPT.
      if (call.error ? call.may_resend && c->attempts.resend_unsent(call.sent)
                     : ScriptCache::is_noscript(call.replies.front().get()) && c->attempts.retry_noscript())
        return submit_async(c);
      if (divert_async(c, call)) return;
    } catch (...) {
      return c->done(nullptr, std::current_exception());
    }
    if (call.error) return c->done(nullptr, call.error);
    c->done(std::move(call.replies.front()), nullptr);
  }, c->deadline);
}

bool Transport::submit_async_on(std::shared_ptr<Node> node, ScriptCache& cache, const scripts::Script& script,
                                const ScriptCall& call, int timeout_ms, const ScriptDone& done) {
  auto c = std::make_shared<AsyncCall>(cache, script, call, timeout_ms, done);
  c->pool = &node->pool;
  c->node = std::move(node);
  try {
    submit_async(c);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnavailable && e.code() != ErrorCode::kTimeout) throw;
    return false;
  }
  return true;
}

void Transport::finish_in_background(const std::shared_ptr<AsyncCall>& c, std::function<void()> first) {
  run_in_background([this, c, first = std::move(first)] {
    ReplyPtr reply;
    try {
      if (first) first();
      Argv keys(c->keys.begin(), c->keys.end()), args(c->args.begin(), c->args.end());
      InheritedDeadline scope(c->deadline);  // the call's one deadline, not a fresh one
      reply = run_script(c->script, keys, args);
    } catch (...) {
      return c->done(nullptr, std::current_exception());
    }
    c->done(std::move(reply), nullptr);
  });
}

// ------------------------------------------------------------ standalone

bool StandaloneTransport::run_script_async(const scripts::Script& script, const ScriptCall& call,
                                           const ScriptDone& done) {
  auto c = std::make_shared<AsyncCall>(scripts_, script, call, pool_.options().command_timeout_ms, done);
  c->pool = &pool_;
  submit_async(c);
  return true;
}

// ------------------------------------------------------------ backends

void Backend::evaluate_async(const Request& request, std::function<void(Outcome)> done) {
  Outcome o;
  try {
    o.decision = evaluate(request);
  } catch (...) {
    o.error = std::current_exception();
  }
  done(std::move(o));
}

// ------------------------------------------------------------ limiter

void Limiter::check_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost,
                          CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  self->validate_cost(cost);
  Metrics& metrics = self->client_->metrics();
  // Latency on the real clock; the deny cache on the client's (clock.h).
  const auto t0 = std::chrono::steady_clock::now();
  const auto started = self->deny_cache_ ? self->client_->clock()->now() : DenyCache::TimePoint{};
  // Records the decision as check() does: before shadow mode turns a
  // denial into an admission (finish()).
  auto report = [&metrics, t0](const Decision& d, const std::exception_ptr& error) {
    const auto us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
    if (error)
      metrics.error(us);
    else
      metrics.decision(d, us);
  };
  uint64_t epoch = 0;
  if (self->deny_cache_) {
    if (auto d = self->deny_cache_->lookup(key, cost, started)) {
      report(*d, nullptr);
      return done(self->finish(*d), nullptr);
    }
    epoch = self->deny_cache_->epoch();
  }
  auto rq = std::make_shared<Request>(self->request(Op::kCheck, key, cost, self->now()));
  if (self->breaker_ && !self->breaker_->allow()) {  // as decide(): the failure policy, no round trip
    Decision d;
    std::exception_ptr error;
    try {
      d = self->degrade(*rq, self->breaker_open());
    } catch (...) {
      error = std::current_exception();
    }
    report(d, error);
    return done(error ? d : self->finish(d), error);
  }
  auto finish_with = [self, rq, key_copy = std::string(key), epoch, started, report, done](Outcome o) {
    o = self->settle(*rq, std::move(o));
    if (!o.error && self->deny_cache_ && !o.decision.degraded)
      self->deny_cache_->record(key_copy, rq->cost, o.decision, started, epoch);
    report(o.decision, o.error);
    if (!o.error) o.decision = self->finish(o.decision);
    done(o.decision, o.error);
  };
  try {
    self->client_->backend().evaluate_async(*rq, finish_with);
  } catch (const Error& e) {
    // Refused before anything was queued (a failed connect, reconnect
    // backoff, a full queue): an outage gets the failure policy here, as
    // check() would give it; anything else is the caller's error.
    if (!is_outage(e.code())) throw;
    finish_with(Outcome{Decision{}, std::current_exception()});
  }
}

}  // namespace polylimit
