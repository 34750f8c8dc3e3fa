// async.cpp - the non-blocking check path, from the limiter down to the
// connection: Limiter::check_async, Backend/RedisBackend::evaluate_async,
// StandaloneTransport::run_script_async and the background runner; the
// non-blocking forms of the other limiter calls and the client's timer.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <thread>

#include "breaker.h"
#include "call_deadline.h"
#include "clock.h"
#include "deny_cache.h"
#include "lease.h"
#include "memory_backend.h"
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

// ------------------------------------------------------------ timer

// One thread waiting for the earliest job's time (Client::run_at). As with
// BackgroundRunner, the thread touches only the shared state, so a job that
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

Transport::~Transport() {
  std::shared_ptr<BackgroundRunner> runner, blocking;
  {
    std::lock_guard<std::mutex> lock(background_mu_);
    runner.swap(background_);
    blocking.swap(blocking_jobs_);
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

void Transport::run_blocking_job(std::function<void()> job) {
  std::lock_guard<std::mutex> lock(background_mu_);
  if (!blocking_jobs_) blocking_jobs_ = std::make_shared<BackgroundRunner>();
  blocking_jobs_->run(std::move(job));
}

// ------------------------------------------------------------ script calls

Transport::AsyncCall::AsyncCall(Transport& transport, ScriptCache& cache, const scripts::Script& script,
                                const ScriptCall& call, int timeout_ms, ScriptDone done)
    : transport(transport),
      script(script),
      attempts(cache, script, /*can_load=*/false),
      deadline(Mux::Clock::now() + std::chrono::milliseconds(timeout_ms)),
      done(std::move(done)) {
  size_t size = 0;
  for (std::string_view k : call.keys) size += k.size();
  for (std::string_view a : call.args) size += a.size();
  storage.reserve(size);  // no growth below: the views stay valid
  auto copy = [this](const Argv& from, Argv& to) {
    to.reserve(from.size());
    for (std::string_view v : from) {
      const size_t at = storage.size();
      storage.append(v);
      to.emplace_back(storage.data() + at, v.size());
    }
  };
  copy(call.keys, keys);
  copy(call.args, args);
}

void Transport::submit_async(const std::shared_ptr<AsyncCall>& c) {
  // The submitter never waits on a connect while a connection is open
  // (grow = false); a resend may open a fresh one.
  PooledConnection conn = c->pool->acquire(/*grow=*/c->attempts.resent());
  std::string numkeys;
  conn.submit(c->attempts.command(c->keys, c->args, numkeys), [c](Mux::Call& call) {
    Transport* const self = &c->transport;
    try {
      // Once more on a fresh connection when nothing was written (the
      // connection had been closed while idle; see Mux::Call::may_resend)
      // and time is left, or after NOSCRIPT.
      if (call.error ? call.may_resend && c->attempts.resend_unsent(call.sent)
                     : ScriptCache::is_noscript(call.replies.front().get()) && c->attempts.retry_noscript())
        return self->submit_async(c);
      if (self->divert_async(c, call)) return;
    } catch (...) {
      return c->done(nullptr, std::current_exception());
    }
    if (call.error) return c->done(nullptr, call.error);
    c->done(std::move(call.replies.front()), nullptr);
  }, c->deadline);
}

bool Transport::submit_async_on(std::shared_ptr<Node> node, ScriptCache& cache, const scripts::Script& script,
                                const ScriptCall& call, int timeout_ms, ScriptDone&& done) {
  auto c = std::make_shared<AsyncCall>(*this, cache, script, call, timeout_ms, std::move(done));
  c->pool = &node->pool;
  c->node = std::move(node);
  try {
    submit_async(c);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnavailable && e.code() != ErrorCode::kTimeout) throw;
    done = std::move(c->done);  // nothing was queued: the caller's again
    return false;
  }
  return true;
}

void Transport::finish_in_background(const std::shared_ptr<AsyncCall>& c, std::function<void()> first) {
  run_in_background([this, c, first = std::move(first)] {
    ReplyPtr reply;
    try {
      if (first) first();
      InheritedDeadline scope(c->deadline);  // the call's one deadline, not a fresh one
      reply = run_script(c->script, c->keys, c->args);
    } catch (...) {
      return c->done(nullptr, std::current_exception());
    }
    c->done(std::move(reply), nullptr);
  });
}

// ------------------------------------------------------------ standalone

bool StandaloneTransport::run_script_async(const scripts::Script& script, const ScriptCall& call,
                                           ScriptDone&& done) {
  auto c = std::make_shared<AsyncCall>(*this, scripts_, script, call, pool_.options().command_timeout_ms, std::move(done));
  c->pool = &pool_;
  submit_async(c);
  return true;
}

bool StandaloneTransport::run_command_async(std::string_view key, const Argv& argv, const ScriptDone& done) {
  (void)key;  // one server
  auto words = std::make_shared<const std::vector<std::string>>(argv.begin(), argv.end());
  send_command_async(words, Mux::Clock::now() + std::chrono::milliseconds(pool_.options().command_timeout_ms),
                     false, done);
  return true;
}

void StandaloneTransport::send_command_async(std::shared_ptr<const std::vector<std::string>> words,
                                             Mux::Clock::time_point deadline, bool resent, ScriptDone done) {
  // As submit_async: no connect while a connection is open, except to resend.
  PooledConnection conn = pool_.acquire(/*grow=*/resent);
  Argv argv(words->begin(), words->end());
  conn.submit(argv, [this, words, deadline, resent, done](Mux::Call& call) {
    if (call.error && call.may_resend && !resent && Mux::Clock::now() < deadline) {
      try {
        return send_command_async(words, deadline, true, done);
      } catch (...) {
        return done(nullptr, std::current_exception());
      }
    }
    if (call.error) return done(nullptr, call.error);
    done(std::move(call.replies.front()), nullptr);
  }, deadline);
}

// ------------------------------------------------------------ backends

void Backend::reset_async(const std::vector<std::string>& keys, std::function<void(std::exception_ptr)> done) {
  std::exception_ptr error;
  try {
    reset(keys);
  } catch (...) {
    error = std::current_exception();
  }
  done(error);
}

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

namespace {

// Records a decision in the client's metrics as measured() does for check():
// latency on the real clock, before shadow mode turns a denial into an
// admission.
struct Report {
  Metrics* metrics;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  void operator()(const Decision& d, const std::exception_ptr& error) const {
    const auto us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
    if (error)
      metrics->error(us);
    else
      metrics->decision(d, us);
  }
};

}  // namespace

template <typename State>
void Limiter::decide_in(const std::shared_ptr<State>& st) {
  Limiter& self = *st->self;
  if (self.breaker_ && !self.breaker_->allow()) {  // as decide(): the failure policy, no round trip
    Outcome o;
    try {
      o.decision = self.degrade(st->request(), self.breaker_open());
    } catch (...) {
      o.error = std::current_exception();
    }
    return st->done(std::move(o));
  }
  try {
    // The completion holds the state: nothing of it is copied on the way.
    self.client_->backend().evaluate_async(
        st->request(), [st](Outcome o) { st->done(st->self->settle(st->request(), std::move(o))); });
  } catch (const Error& e) {
    // Refused before anything was queued (a failed connect, reconnect
    // backoff, a full queue, a refused AUTH or TLS handshake): the call's
    // completion says so, after the failure policy for an outage, as
    // decide() would answer. Only a bad argument and a closed client are the
    // submitter's error (the C ABI's contract).
    if (e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kClosed) throw;
    st->done(self.settle(st->request(), Outcome{Decision{}, std::current_exception()}));
  }
}

void Limiter::decide_async(const std::shared_ptr<Limiter>& self, std::shared_ptr<const Request> rq,
                           std::function<void(Outcome)> done) {
  struct State {
    std::shared_ptr<Limiter> self;
    std::shared_ptr<const Request> rq;
    std::function<void(Outcome)> fn;
    const Request& request() const { return *rq; }
    void done(Outcome o) const { fn(std::move(o)); }
  };
  decide_in(std::make_shared<State>(State{self, std::move(rq), std::move(done)}));
}

void Limiter::check_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost,
                          CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  self->validate_cost(cost);
  Report report{&self->client_->metrics()};
  if (self->leases_) {
    // A live lease answers at once.
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t now_ns = self->leases_->now_ns();
    if (auto d = self->leases_->with(key, [&](Lease& l) { return l.try_take(cost, now_ns); })) {
      self->client_->metrics().decision(*d, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                                       std::chrono::steady_clock::now() - t0)
                                                                       .count()));
      return done(*d, nullptr);
    }
    if (cost <= self->options_.lease_units) {
      // None: the blocking leased check renews it, on a library thread, so
      // that renewals stay one at a time per key with the blocking callers'
      // (lease.cpp). One hop per renewal (every lease_units units), not per
      // check; checks that miss meanwhile queue on the lease's lock and are
      // then answered from the new lease.
      self->client_->backend().run_blocking([self, key_copy = std::string(key), cost, done] {
        Decision d;
        std::exception_ptr error;
        try {
          d = self->leased_check(key_copy, cost);
        } catch (...) {
          error = std::current_exception();
        }
        done(d, error);
      });
      return;
    }
  }
  // The deny cache on the client's clock (clock.h).
  const auto started = self->deny_cache_ ? self->client_->clock()->now() : DenyCache::TimePoint{};
  uint64_t epoch = 0;
  if (self->deny_cache_) {
    if (auto d = self->deny_cache_->lookup(key, cost, started)) {
      report(*d, nullptr);
      return done(self->finish(*d), nullptr);
    }
    epoch = self->deny_cache_->epoch();
  }
  // The request and what its completion needs, in one allocation.
  struct State {
    std::shared_ptr<Limiter> self;
    Request rq;
    std::string cache_key;  // the caller's key, kept only for the deny cache (a copy allocates)
    uint64_t epoch;
    DenyCache::TimePoint started;
    Report report;
    CheckDone fn;
    const Request& request() const { return rq; }
    void done(Outcome o) const {
      if (!o.error && self->deny_cache_ && !o.decision.degraded)
        self->deny_cache_->record(cache_key, rq.cost, o.decision, started, epoch);
      report(o.decision, o.error);
      if (!o.error) o.decision = self->finish(o.decision);
      fn(o.decision, o.error);
    }
  };
  decide_in(std::make_shared<State>(State{self, self->request(Op::kCheck, key, cost, self->now()),
                                          self->deny_cache_ ? std::string(key) : std::string(), epoch, started,
                                          report, std::move(done)}));
}

void Limiter::peek_async(const std::shared_ptr<Limiter>& self, std::string_view key, CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  auto rq = std::make_shared<const Request>(self->request(Op::kPeek, key, 1, self->now()));
  decide_async(self, rq, [done](Outcome o) { done(o.decision, o.error); });
}

void Limiter::refund_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t units,
                           CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  check_bound(bounds::kUnits, units);
  auto rq = std::make_shared<const Request>(self->request(Op::kRefund, key, units, self->now()));
  decide_async(self, rq, [self, key_copy = std::string(key), done](Outcome o) {
    if (!o.error && self->deny_cache_) self->deny_cache_->erase(key_copy);  // the key may fit again
    if (!o.error && self->leases_) self->leases_->forget_denial(key_copy);
    done(o.decision, o.error);
  });
}

void Limiter::check_with_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost,
                               std::vector<LimitParams> limits, CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  check_bound(bounds::kLimits, static_cast<long long>(limits.size()));
  for (size_t i = 0; i < limits.size(); ++i) {
    validate(limits[i]);
    if (limits[i].algorithm != self->limits_[0].algorithm)
      throw_invalid("limits[" + std::to_string(i) + "]: algorithm " + algorithm_name(limits[i].algorithm) +
                    " is not the limiter's " + algorithm_name(self->limits_[0].algorithm));
  }
  self->validate_cost(cost, limits);
  // The request points at the limits: they travel with it.
  auto owned = std::make_shared<const std::vector<LimitParams>>(std::move(limits));
  auto rq = std::make_shared<const Request>(self->request(Op::kCheck, key, cost, self->now(), owned.get()));
  Report report{&self->client_->metrics()};
  decide_async(self, rq, [self, owned, report, done](Outcome o) {
    report(o.decision, o.error);
    if (!o.error) o.decision = self->finish(o.decision);
    done(o.decision, o.error);
  });
}

// The steps of the calls that take more than one round trip. Each step after
// the first runs in the completion of the one before, on a library thread:
// whatever it throws goes to `done`, which thus runs exactly once.
struct AsyncSteps {
  struct AtMost {
    std::shared_ptr<Limiter> self;
    std::string key;
    int64_t want = 1;
    int attempt = 0;
    Limiter::CheckDone done;
  };

  struct Acquire {
    std::shared_ptr<Limiter> self;
    std::string key;
    int64_t cost = 1;
    MonotonicClock::time_point deadline;
    Limiter::CheckDone done;
  };

  struct Many {
    std::shared_ptr<Limiter> self;
    Limiter::Batch batch;
    std::vector<Outcome> decided;
    std::atomic<size_t> pending{0};
    Limiter::ManyDone done;
  };

  // Runs `step`; if it throws, `done` gets the error.
  template <typename F>
  static void guarded(const Limiter::CheckDone& done, F&& step) {
    try {
      step();
    } catch (...) {
      done(Decision{}, std::current_exception());
    }
  }

  static void at_most(const std::shared_ptr<AtMost>& s) {
    Limiter& l = *s->self;
    auto rq = std::make_shared<const Request>(l.request(Op::kPeek, s->key, 1, l.now()));
    Limiter::decide_async(s->self, rq, [s](Outcome p) {
      if (p.error) return s->done(Decision{}, p.error);
      if (p.decision.degraded) return s->done(s->self->finish(p.decision), nullptr);
      const int64_t free_units = p.decision.allowed ? std::min(s->want, p.decision.remaining) : 0;
      // Nothing fits: report what a check of one unit answers (and count it).
      if (free_units < 1)
        return guarded(s->done, [&] { Limiter::check_async(s->self, s->key, 1, s->done); });
      guarded(s->done, [&] {
        Limiter::check_async(s->self, s->key, free_units, [s](const Decision& d, std::exception_ptr error) {
          if (error || d.allowed || d.shadowed || ++s->attempt >= 4) return s->done(d, error);
          guarded(s->done, [&] { at_most(s); });  // lost a race: peek again
        });
      });
    });
  }

  static void acquire(const std::shared_ptr<Acquire>& s) {
    Limiter::check_async(s->self, s->key, s->cost, [s](const Decision& d, std::exception_ptr error) {
      if (error || d.allowed) return s->done(d, error);
      Client& client = *s->self->client_;
      const auto wake = client.clock()->now() + std::chrono::milliseconds(std::max<int64_t>(1, d.retry_after_ms));
      if (wake > s->deadline) return s->done(d, nullptr);
      guarded(s->done, [&] {
        client.run_at(wake, [s] { guarded(s->done, [&] { acquire(s); }); });
      });
    });
  }

  // One key of a batch answered: the last one finishes the batch.
  static void many_arrived(const std::shared_ptr<Many>& s) {
    if (s->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::vector<Outcome> out;
    try {
      Limiter& l = *s->self;
      out = l.finish_many(s->batch, l.settle_many(s->batch.requests, std::move(s->decided), true));
    } catch (...) {  // out of memory: every key gets the error
      out.assign(s->batch.out.size(), Outcome{Decision{}, std::current_exception()});
    }
    s->done(std::move(out));
  }
};

void Limiter::check_at_most_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t max_cost,
                                  CheckDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  if (max_cost < 1) throw_invalid("max_cost = " + std::to_string(max_cost) + " must be at least 1");
  int64_t cap = self->limits_[0].capacity();
  for (const LimitParams& p : self->limits_) cap = std::min(cap, p.capacity());
  auto s = std::make_shared<AsyncSteps::AtMost>();
  s->self = self;
  s->key.assign(key.data(), key.size());
  s->want = std::min(max_cost, cap);
  s->done = std::move(done);
  AsyncSteps::at_most(s);
}

void Limiter::acquire_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost,
                            std::chrono::milliseconds timeout, CheckDone done) {
  self->client_->ensure_open();
  check_bound(bounds::kTimeoutMs, timeout.count());
  self->validate_key(key);
  self->validate_cost(cost);
  auto s = std::make_shared<AsyncSteps::Acquire>();
  s->self = self;
  s->key.assign(key.data(), key.size());
  s->cost = cost;
  s->deadline = self->client_->clock()->now() + timeout;
  s->done = std::move(done);
  AsyncSteps::acquire(s);
}

void Limiter::reset_async(const std::shared_ptr<Limiter>& self, std::string_view key, ResetDone done) {
  self->client_->ensure_open();
  self->validate_key(key);
  std::vector<std::string> keys = self->storage_keys(key);
  if (self->options_.block_ms > 0) keys.push_back(keys[0] + ":block");
  if (self->fallback_) self->fallback_->reset(keys);
  auto after = [self, key_copy = std::string(key), done](std::exception_ptr error) {
    // After the reset, as reset() does.
    if (!error && self->deny_cache_) self->deny_cache_->erase(key_copy);
    done(error);
  };
  try {
    self->client_->backend().reset_async(keys, after);
  } catch (...) {  // nothing was queued (a failed connect, a full queue): the completion says so
    after(std::current_exception());
  }
}

void Limiter::check_many_async(const std::shared_ptr<Limiter>& self, const std::vector<std::string_view>& keys,
                               int64_t cost, ManyDone done) {
  auto s = std::make_shared<AsyncSteps::Many>();
  s->self = self;
  s->batch = self->plan_many(keys, cost);
  s->done = std::move(done);
  const size_t n = s->batch.requests.size();
  s->decided.resize(n);
  if (n > 0 && self->breaker_ && !self->breaker_->allow()) {  // as decide_many()
    for (auto& o : s->decided) o.error = std::make_exception_ptr(self->breaker_open());
    std::vector<Outcome> settled = self->settle_many(s->batch.requests, std::move(s->decided), false);
    return s->done(self->finish_many(s->batch, std::move(settled)));
  }
  // One more than the keys, released after the loop: no completion that
  // arrives while later keys are still being submitted can finish the batch.
  s->pending.store(n + 1, std::memory_order_relaxed);
  for (size_t j = 0; j < n; ++j) {
    try {
      self->client_->backend().evaluate_async(s->batch.requests[j], [s, j](Outcome o) {
        s->decided[j] = std::move(o);
        AsyncSteps::many_arrived(s);
      });
    } catch (...) {  // this key was not queued; the failure policy sees it with the others
      s->decided[j] = Outcome{Decision{}, std::current_exception()};
      AsyncSteps::many_arrived(s);
    }
  }
  AsyncSteps::many_arrived(s);
}

}  // namespace polylimit
