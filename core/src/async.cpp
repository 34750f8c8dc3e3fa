// async.cpp - the non-blocking check path, from the limiter down to the
// connection: Limiter::check_async, Backend/RedisBackend::evaluate_async,
// StandaloneTransport::run_script_async and the background runner.
#include <condition_variable>
#include <deque>
#include <thread>

#include "deny_cache.h"
#include "breaker.h"
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
  std::lock_guard<std::mutex> lock(background_mu_);
  if (!background_) background_ = std::make_shared<BackgroundRunner>();
  background_->run(std::move(job));
}

// ------------------------------------------------------------ standalone

struct StandaloneTransport::AsyncCall {
  std::vector<std::string> keys, args;  // the views of the ScriptCall die when run_script_async returns
  bool resent = false;                  // once more after a failure before the send
  bool evaled = false;                  // once more with EVAL after NOSCRIPT
};

bool StandaloneTransport::run_script_async(const scripts::Script& script, const ScriptCall& call,
                                           const ScriptDone& done) {
  auto c = std::make_shared<AsyncCall>();
  c->keys.assign(call.keys.begin(), call.keys.end());
  c->args.assign(call.args.begin(), call.args.end());
  submit_async(script, std::move(c), done);
  return true;
}

void StandaloneTransport::submit_async(const scripts::Script& script, std::shared_ptr<AsyncCall> c,
                                       ScriptDone done) {
  // Only the first attempt may throw to the submitter; later ones run in a
  // callback and report through `done`. The submitter never waits on a
  // connect while a connection is open (grow = false).
  PooledConnection conn = pool_.acquire(/*grow=*/c->resent);
  Argv keys(c->keys.begin(), c->keys.end()), args(c->args.begin(), c->args.end());
  std::string numkeys;
  Argv command = c->evaled ? ScriptCache::eval(script, keys, args, numkeys)
                           : ScriptCache::evalsha(script, keys, args, numkeys);
  conn.submit({command}, [this, &script, c, done](Mux::Call& call) {
    try {
      if (call.error && !call.sent && !c->resent) {
        // Nothing was written (the connection had been closed while idle):
        // once more, on a fresh connection.
        c->resent = true;
        return submit_async(script, c, done);
      }
      if (!call.error && ScriptCache::is_noscript(call.replies.front().get()) && !c->evaled) {
        // The script did not run: once more with EVAL, which carries the
        // source (and caches it again).
        c->evaled = true;
        scripts_.note_reload();
        return submit_async(script, c, done);
      }
    } catch (...) {
      return done(nullptr, std::current_exception());
    }
    if (call.error) return done(nullptr, call.error);
    done(std::move(call.replies.front()), nullptr);
  });
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
  const auto started = DenyCache::Clock::now();
  auto report = [&metrics, started](const Decision& d, const std::exception_ptr& error) {
    const auto us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(DenyCache::Clock::now() - started).count());
    if (error)
      metrics.error(us);
    else
      metrics.decision(d, us);
  };
  uint64_t epoch = 0;
  if (self->deny_cache_) {
    if (auto d = self->deny_cache_->lookup(key, cost, started)) {
      Decision out = self->finish(*d);
      report(out, nullptr);
      return done(out, nullptr);
    }
    epoch = self->deny_cache_->epoch();
  }
  auto rq = std::make_shared<Request>(self->request(Op::kCheck, key, cost, self->now()));
  if (self->breaker_ && !self->breaker_->allow()) {  // as decide(): the failure policy, no round trip
    Decision d;
    std::exception_ptr error;
    try {
      d = self->finish(self->degrade(*rq, self->breaker_open()));
    } catch (...) {
      error = std::current_exception();
    }
    report(d, error);
    return done(d, error);
  }
  auto finish_with = [self, rq, key_copy = std::string(key), epoch, started, report, done](Outcome o) {
    o = self->settle(*rq, std::move(o));
    if (!o.error && self->deny_cache_ && !o.decision.degraded)
      self->deny_cache_->record(key_copy, rq->cost, o.decision, started, epoch);
    if (!o.error) o.decision = self->finish(o.decision);
    report(o.decision, o.error);
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
