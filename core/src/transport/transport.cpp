// transport.cpp - the standalone transport and pipelined script runs; the
// non-blocking script calls of every transport and their background runner.
#include "transport/transport.h"

#include <condition_variable>
#include <deque>
#include <thread>

#include "net/call_deadline.h"
#include "transport/node_pools.h"

namespace polylimit {

Argv wait_command(const Durability& durable, std::string (&storage)[2]) {
  storage[0] = std::to_string(durable.replicas);
  storage[1] = std::to_string(durable.timeout_ms);
  if (durable.aof) return {"WAITAOF", "1", storage[0], storage[1]};
  return {"WAIT", storage[0], storage[1]};
}

Ack read_ack(const Reply* r) {
  Ack a;
  a.waited = true;
  if (r->type == ReplyType::kError) {
    a.error.assign(r->str, r->len);
  } else if (r->type == ReplyType::kInteger) {
    a.replicas = r->integer;
  } else if (r->type == ReplyType::kArray && r->elements == 2 && r->element[0]->type == ReplyType::kInteger &&
             r->element[1]->type == ReplyType::kInteger) {
    a.local = r->element[0]->integer;
    a.replicas = r->element[1]->integer;
  } else {
    a.error = "unexpected reply shape";
  }
  return a;
}

std::vector<ReplyPtr> run_scripts_on(Link& conn, ScriptCache& cache, const scripts::Script& script,
                                     const std::vector<ScriptCall>& calls, const Durability& durable, Ack* ack,
                                     const Argv& before) {
  // In failover-safe mode the WAIT rides in the same write, after the calls.
  std::string wait_storage[2];
  const Argv wait = durable.on() ? wait_command(durable, wait_storage) : Argv{};
  ReplyPtr wait_reply;
  std::vector<ReplyPtr> replies = cache.run_all(conn, script, calls, before, wait, &wait_reply);
  if (ack && wait_reply) *ack = read_ack(wait_reply.get());
  return replies;
}

ReplyPtr StandaloneTransport::run_script(const scripts::Script& script, const Argv& keys, const Argv& args) {
  PooledConnection conn = pool_.acquire();
  return scripts_.run(*conn, script, keys, args);
}

std::vector<ReplyPtr> StandaloneTransport::run_scripts(const scripts::Script& script,
                                                       const std::vector<ScriptCall>& calls, const Durability& durable,
                                                       std::vector<Ack>* acks) {
  if (calls.empty()) return {};
  PooledConnection conn = pool_.acquire();
  Ack ack;
  std::vector<ReplyPtr> replies = run_scripts_on(*conn, scripts_, script, calls, durable, &ack);
  if (acks) acks->assign(calls.size(), ack);
  return replies;
}

ReplyPtr StandaloneTransport::run_command(std::string_view, const Argv& argv) {
  PooledConnection conn = pool_.acquire();
  return send_with_outcome(*conn, [&] { return conn->command(argv); });
}

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
  conn.submit(
      c->attempts.command(c->keys, c->args, numkeys),
      [c](Mux::Call& call) {
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
      },
      c->deadline);
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

bool StandaloneTransport::run_script_async(const scripts::Script& script, const ScriptCall& call, ScriptDone&& done) {
  auto c =
      std::make_shared<AsyncCall>(*this, scripts_, script, call, pool_.options().command_timeout_ms, std::move(done));
  c->pool = &pool_;
  submit_async(c);
  return true;
}

bool StandaloneTransport::run_command_async(std::string_view key, const Argv& argv, const ScriptDone& done) {
  (void)key;  // one server
  auto words = std::make_shared<const std::vector<std::string>>(argv.begin(), argv.end());
  send_command_async(words, Mux::Clock::now() + std::chrono::milliseconds(pool_.options().command_timeout_ms), false,
                     done);
  return true;
}

void StandaloneTransport::send_command_async(std::shared_ptr<const std::vector<std::string>> words,
                                             Mux::Clock::time_point deadline, bool resent, ScriptDone done) {
  // As submit_async: no connect while a connection is open, except to resend.
  PooledConnection conn = pool_.acquire(/*grow=*/resent);
  Argv argv(words->begin(), words->end());
  conn.submit(
      argv,
      [this, words, deadline, resent, done](Mux::Call& call) {
        if (call.error && call.may_resend && !resent && Mux::Clock::now() < deadline) {
          try {
            return send_command_async(words, deadline, true, done);
          } catch (...) {
            return done(nullptr, std::current_exception());
          }
        }
        if (call.error) return done(nullptr, call.error);
        done(std::move(call.replies.front()), nullptr);
      },
      deadline);
}

}  // namespace polylimit
