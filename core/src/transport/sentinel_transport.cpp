// sentinel_transport.cpp - master discovery and failover handling.
#include "transport/sentinel_transport.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
#include <sstream>

#include "net/redis_errors.h"

namespace polylimit {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool is_readonly(const Reply* r) {
  return r && r->type == ReplyType::kError && r->len >= 8 && std::memcmp(r->str, "READONLY", 8) == 0;
}

void append(std::string& list, const std::string& item) { list += (list.empty() ? "" : "; ") + item; }

using Clock = std::chrono::steady_clock;

std::string text_of(const Reply* r) { return r && r->str ? std::string(r->str, r->len) : std::string(); }

}  // namespace

struct SentinelTransport::Query {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Answer> answers;
};

SentinelTransport::SentinelTransport(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls,
                                     std::shared_ptr<const MonotonicClock> clock)
    : endpoint_(std::move(endpoint)),
      options_(options),
      tls_(std::move(tls)),
      pools_(endpoint_, options_, tls_, std::move(clock)) {
  if (endpoint_.seeds.empty()) throw_invalid("redis+sentinel:// needs at least one sentinel");
  if (endpoint_.master_name.empty()) throw_invalid("redis+sentinel:// needs a master name");
  failures_.reset(new std::atomic<int>[endpoint_.seeds.size()]);
  for (size_t i = 0; i < endpoint_.seeds.size(); ++i) failures_[i].store(0);
}

SentinelTransport::~SentinelTransport() { stop_threads(); }

void SentinelTransport::stop_threads() {
  Locks& l = locks();
  std::vector<std::thread> followers;
  std::vector<Probe> probes;
  {
    std::lock_guard<std::mutex> lock(l.threads);
    l.stop = true;
    followers = std::move(l.followers);
  }
  l.wake.notify_all();
  for (std::thread& t : followers) t.join();
  {
    std::lock_guard<std::mutex> lock(l.threads);
    probes = std::move(l.probes);
    l.probes.clear();
  }
  // A probe waiting on a hung sentinel ends within its own timeouts.
  for (Probe& p : probes)
    if (p.thread.joinable()) p.thread.join();
}

Endpoint SentinelTransport::sentinel_endpoint(size_t i) const {
  Endpoint sep;
  sep.kind = Endpoint::Kind::kTcp;
  sep.host = endpoint_.seeds[i].host;
  sep.port = endpoint_.seeds[i].port;
  sep.user = endpoint_.sentinel_user;
  sep.password = endpoint_.sentinel_password;
  sep.tls = endpoint_.tls;
  return sep;
}

namespace {

// One request to one sentinel, on a probe thread.
SentinelTransport::Answer ask(const Endpoint& sep, const PoolOptions& options, const TlsContext* tls,
                              const std::string& name, size_t i) {
  using Answer = SentinelTransport::Answer;
  Answer a;
  a.sentinel = i;
  try {
    Connection conn(sep, options, tls);
    ReplyPtr r = conn.command({"SENTINEL", "get-master-addr-by-name", name});
    if (r->type == ReplyType::kNil) {
      a.kind = Answer::Kind::kNil;
    } else if (r->type == ReplyType::kError) {
      a.kind = Answer::Kind::kErrorReply;
      a.text = text_of(r.get());
    } else if (r->type == ReplyType::kArray && r->elements == 2 && r->element[0]->type == ReplyType::kString &&
               r->element[1]->type == ReplyType::kString) {
      a.kind = Answer::Kind::kAddress;
      a.host = text_of(r->element[0]);
      a.port = std::atoi(text_of(r->element[1]).c_str());
    } else {
      a.kind = Answer::Kind::kErrorReply;
      a.text = "unexpected reply to SENTINEL get-master-addr-by-name";
    }
  } catch (const Error& e) {
    a.kind = Answer::Kind::kFailed;
    a.code = e.code();
    a.text = e.what();
    // kAuth from the TLS layer (a certificate failed verification) is not
    // the sentinel refusing our credentials.
    a.tls_failure = e.code() == ErrorCode::kAuth && std::strncmp(e.what(), "TLS ", 4) == 0;
  } catch (const std::exception& e) {
    a.kind = Answer::Kind::kFailed;
    a.code = ErrorCode::kInternal;
    a.text = e.what();
  }
  return a;
}

}  // namespace

void SentinelTransport::launch_probe(size_t i, const std::shared_ptr<Query>& q) {
  Locks& l = locks();
  std::lock_guard<std::mutex> lock(l.threads);
  // Finished probes are joined here, so that they never accumulate.
  for (auto it = l.probes.begin(); it != l.probes.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = l.probes.erase(it);
    } else {
      ++it;
    }
  }
  std::shared_ptr<std::atomic<bool>> busy = l.busy[i];
  busy->store(true);
  auto done = std::make_shared<std::atomic<bool>>(false);
  // The probe uses nothing of `this`: it may outlive the resolution that
  // started it (it is joined by a later launch or by stop_threads()).
  std::thread t(
      [sep = sentinel_endpoint(i), options = options_, tls = tls_, name = endpoint_.master_name, q, i, busy, done] {
        Answer a = ask(sep, options, tls.get(), name, i);
        busy->store(false);
        {
          std::lock_guard<std::mutex> guard(q->mu);
          q->answers.push_back(std::move(a));
        }
        q->cv.notify_all();
        done->store(true);
      });
  l.probes.push_back(Probe{std::move(t), done});
}

SentinelTransport::MasterPtr SentinelTransport::confirm(const MasterPtr& previous, const std::string& host, int port,
                                                        const std::string& where, std::string& failures) {
  const HostPort address{host, port};
  MasterPtr m = previous && previous->address == address.describe() ? previous : pools_.make(address);
  try {
    PooledConnection conn = m->pool.acquire();
    ReplyPtr role = conn->command({"ROLE"});
    if (role->type == ReplyType::kError) throw_reply_error(text_of(role.get()), "ROLE");
    if (role->type != ReplyType::kArray || role->elements < 1 || role->element[0]->type != ReplyType::kString ||
        text_of(role->element[0]) != "master") {
      append(failures, where + " names " + m->address + ", which is not a master (yet)");
      return nullptr;
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kAuth || e.code() == ErrorCode::kPermission) throw;
    append(failures, where + " names " + m->address + ": " + e.what());
    return nullptr;
  }
  return m;
}

SentinelTransport::MasterPtr SentinelTransport::resolve(const MasterPtr& previous) {
  last_resolve_ns_.store(now_ns());
  resolutions_.fetch_add(1, std::memory_order_relaxed);
  const std::string& name = endpoint_.master_name;
  const size_t n = endpoint_.seeds.size();
  const int budget_ms = options_.connect_timeout_ms + options_.command_timeout_ms;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
  std::vector<std::shared_ptr<std::atomic<bool>>> busy;
  {
    Locks& l = locks();
    std::lock_guard<std::mutex> lock(l.threads);
    while (l.busy.size() < n) l.busy.push_back(std::make_shared<std::atomic<bool>>(false));
    busy = l.busy;
  }
  auto q = std::make_shared<Query>();
  std::string failures;
  std::vector<bool> heard(n, false);
  size_t launched = 0;
  for (size_t i = 0; i < n; ++i) {
    if (busy[i]->load()) {
      // Still waiting for an earlier request: it hangs or is slow; asking
      // again would only add a thread.
      heard[i] = true;
      failures_[i].fetch_add(1);
      append(failures, "sentinel " + endpoint_.seeds[i].describe() + ": has not answered an earlier request yet");
      continue;
    }
    launch_probe(i, q);
    ++launched;
  }
  int answered = 0, unknown = 0, not_sentinel = 0, refused = 0, tls_refused = 0;
  size_t received = 0;
  std::unique_lock<std::mutex> lock(q->mu);
  while (received < launched) {
    if (!q->cv.wait_until(lock, deadline, [&] { return !q->answers.empty(); })) break;
    Answer a = std::move(q->answers.front());
    q->answers.pop_front();
    ++received;
    lock.unlock();
    heard[a.sentinel] = true;
    const std::string where = "sentinel " + endpoint_.seeds[a.sentinel].describe();
    if (a.kind == Answer::Kind::kFailed) {
      failures_[a.sentinel].fetch_add(1);
      if (a.tls_failure)
        ++tls_refused;
      else if (a.code == ErrorCode::kAuth || a.code == ErrorCode::kPermission)
        ++refused;
      append(failures, where + ": " + a.text);
    } else {
      failures_[a.sentinel].store(0);
      ++answered;
      if (a.kind == Answer::Kind::kNil) {
        ++unknown;
        append(failures, where + " knows no master named \"" + name + "\"");
      } else if (a.kind == Answer::Kind::kErrorReply) {
        if (a.text.find("unknown command") != std::string::npos ||
            a.text.find("unknown subcommand") != std::string::npos)
          ++not_sentinel;
        append(failures, where + ": " + a.text);
      } else if (MasterPtr m = confirm(previous, a.host, a.port, where, failures)) {
        return m;
      }
    }
    lock.lock();
  }
  lock.unlock();
  for (size_t i = 0; i < n; ++i)
    if (!heard[i]) {
      failures_[i].fetch_add(1);
      append(failures,
             "sentinel " + endpoint_.seeds[i].describe() + ": no answer within " + std::to_string(budget_ms) + " ms");
    }
  if (tls_refused > 0 && tls_refused + refused == static_cast<int>(n))
    throw Error(ErrorCode::kAuth, "rediss+sentinel://: TLS with the sentinels failed: " + failures);
  if (refused > 0 && refused == static_cast<int>(n))
    throw Error(ErrorCode::kAuth,
                "redis+sentinel://: every sentinel refused the credentials (sentinel_user / "
                "sentinel_password): " +
                    failures);
  if (answered > 0 && unknown == answered)
    throw Error(ErrorCode::kInvalidArgument,
                "redis+sentinel://: no sentinel knows a master named \"" + name +
                    "\": check the name at the end of the URL (redis+sentinel://hosts/<name>, as in the "
                    "sentinels' \"sentinel monitor\" line) (" +
                    failures + ")");
  if (answered > 0 && not_sentinel == answered)
    throw Error(ErrorCode::kInvalidArgument, "redis+sentinel://: the hosts are not sentinels (" + failures + ")");
  throw Error(ErrorCode::kUnavailable,
              "redis+sentinel://: no usable master \"" + name + "\" from the sentinels (" + failures + ")");
}

// ------------------------------------------------------------ follower

void SentinelTransport::ensure_follower() {
  Locks& l = locks();
  if (l.started.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(l.threads);
  if (l.started.load() || l.stop || closed_.load()) return;
  l.started.store(true, std::memory_order_release);
  l.followers.emplace_back([this] { recheck_loop(); });
  for (size_t i = 0; i < endpoint_.seeds.size(); ++i) l.followers.emplace_back([this, i] { subscribe_loop(i); });
}

std::unique_ptr<Connection> SentinelTransport::subscribe(size_t i) {
  const std::string where = "SUBSCRIBE on sentinel " + endpoint_.seeds[i].describe();
  auto conn = std::make_unique<Connection>(sentinel_endpoint(i), options_, tls_.get());
  // One channel per SUBSCRIBE: one confirmation per command.
  std::vector<ReplyPtr> rs = conn->pipeline({{"SUBSCRIBE", "+switch-master"},
                                             {"SUBSCRIBE", "-failover-abort-no-good-slave"},
                                             {"SUBSCRIBE", "+sdown"},
                                             {"SUBSCRIBE", "-sdown"}});
  for (const ReplyPtr& r : rs) {
    if (r->type == ReplyType::kError) throw Error(ErrorCode::kUnavailable, where + ": " + text_of(r.get()));
    if (r->type != ReplyType::kArray || r->elements != 3 || text_of(r->element[0]) != "subscribe")
      throw Error(ErrorCode::kUnavailable, where + ": unexpected reply");
  }
  // A message that arrived with the confirmation marked it broken: start over.
  if (conn->broken()) throw Error(ErrorCode::kUnavailable, where + ": a message arrived with the confirmation");
  return conn;
}

void SentinelTransport::background_resolve(std::chrono::milliseconds min_age) {
  std::unique_lock<std::mutex> single(locks().resolve, std::try_to_lock);
  if (!single.owns_lock()) return;  // someone is at it
  if (now_ns() - last_resolve_ns_.load() < std::chrono::nanoseconds(min_age).count()) return;
  try {
    use(resolve(master()));
  } catch (const Error&) {
    // Keep the master in use; a failing command will re-resolve.
  }
}

void SentinelTransport::on_message(const Reply* m) {
  // ["message", "+switch-master", "<name> <old-ip> <old-port> <new-ip> <new-port>"]
  // ["message", "-failover-abort-no-good-slave", "master <name> <ip> <port>"]
  // ["message", "+sdown" or "-sdown", "master <name> <ip> <port>"] (also for replicas and sentinels)
  if (!m || m->type != ReplyType::kArray || m->elements != 3 || text_of(m->element[0]) != "message") return;
  const std::string channel = text_of(m->element[1]);
  std::istringstream in(text_of(m->element[2]));
  if (channel == "-failover-abort-no-good-slave" || channel == "+sdown" || channel == "-sdown") {
    std::string type, name;
    // The master stays where it was (an aborted failover), or a sentinel
    // lost or regained sight of it: re-check it now instead of at the next
    // periodic re-check (on this follower thread, never a caller's).
    if (in >> type >> name && type == "master" && name == endpoint_.master_name)
      background_resolve(kMinResolveInterval);
    return;
  }
  if (channel != "+switch-master") return;
  std::string name, old_host, old_port, host;
  int port = 0;
  if (!(in >> name >> old_host >> old_port >> host >> port) || name != endpoint_.master_name) return;
  std::lock_guard<std::mutex> single(locks().resolve);
  MasterPtr previous = master();
  std::string failures;
  MasterPtr next;
  try {
    next = confirm(previous, host, port, "+switch-master", failures);
  } catch (const Error&) {
  }
  if (next == previous) return;  // already there (another sentinel's announcement)
  if (!next) {
    try {
      next = resolve(previous);
    } catch (const Error&) {
      return;
    }
  }
  last_resolve_ns_.store(now_ns());
  use(next);
  switch_messages_.fetch_add(1);
}

bool SentinelTransport::stopping(std::chrono::milliseconds wait) {
  Locks& l = locks();
  std::unique_lock<std::mutex> lock(l.threads);
  if (wait.count() > 0) l.wake.wait_for(lock, wait, [&] { return l.stop; });
  return l.stop;
}

void SentinelTransport::recheck_loop() {
  while (!stopping(kRecheckInterval)) background_resolve(kRecheckInterval - std::chrono::milliseconds(10));
}

void SentinelTransport::subscribe_loop(size_t i) {
  uint64_t seed = static_cast<uint64_t>(now_ns()) ^ (reinterpret_cast<uintptr_t>(this) + i);
  int failures = 0;
  while (!stopping(std::chrono::milliseconds(0))) {
    std::unique_ptr<Connection> sub;
    try {
      sub = subscribe(i);
    } catch (const Error&) {
      failures_[i].fetch_add(1);
      ++failures;
      int64_t wait =
          std::min<int64_t>(kSubscribeBackoffMax.count(), kSubscribeBackoffMin.count() << std::min(failures - 1, 10));
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      stopping(std::chrono::milliseconds(wait / 2 + static_cast<int64_t>((seed >> 33) % (wait / 2 + 1))));
      continue;
    }
    failures = 0;
    subscriptions_.fetch_add(1);
    // Whatever was announced while we were not subscribed.
    background_resolve(kMinResolveInterval);
    try {
      // Short waits, so that stop_threads() is never kept waiting long.
      while (!stopping(std::chrono::milliseconds(0))) {
        ReplyPtr m = sub->receive(std::chrono::milliseconds(50));
        if (m) on_message(m.get());
      }
    } catch (const Error&) {
      failures_[i].fetch_add(1);
    }
    subscriptions_.fetch_sub(1);
  }
}

SentinelTransport::MasterPtr SentinelTransport::current() {
  {
    std::unique_lock<std::mutex> lock(locks().master);
    if (master_) {
      MasterPtr m = master_;
      lock.unlock();
      ensure_follower();
      return m;
    }
  }
  std::lock_guard<std::mutex> single(locks().resolve);
  {
    std::lock_guard<std::mutex> lock(locks().master);
    if (master_) return master_;
  }
  MasterPtr m = resolve(nullptr);  // the first resolution's error is the caller's answer
  use(m);
  ensure_follower();
  return m;
}

SentinelTransport::MasterPtr SentinelTransport::re_resolve() {
  const int64_t min_gap = std::chrono::nanoseconds(kMinResolveInterval).count();
  std::lock_guard<std::mutex> single(locks().resolve);
  MasterPtr previous = master();
  if (now_ns() - last_resolve_ns_.load() < min_gap) return previous;  // just done, maybe by another thread
  try {
    MasterPtr m = resolve(previous);
    use(m);
    return m;
  } catch (const Error&) {
    return previous;  // the caller reports its own failure
  }
}

template <class R>
R SentinelTransport::execute(const std::function<R(Link&)>& run, const std::function<bool(const R&)>& readonly) {
  MasterPtr m = current();
  for (bool retried = false;; retried = true) {
    MasterPtr here = m;  // outlives the lease below
    std::optional<PooledConnection> conn;
    try {
      conn.emplace(here->pool.acquire());
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnavailable && e.code() != ErrorCode::kTimeout) throw;
      m = re_resolve();
      if (retried || m == here) throw;  // nothing was sent; no other master to try yet
      continue;
    }
    R result;
    try {
      result = run(**conn);
    } catch (const Error&) {
      re_resolve();  // for the next call; this one may have run, so it is not retried
      throw;
    }
    if (!readonly(result)) return result;
    readonly_replies_.fetch_add(1, std::memory_order_relaxed);
    if (retried) return result;
    conn.reset();
    m = re_resolve();  // a READONLY reply: the command did not run
    if (m == here) return result;
  }
}

ReplyPtr SentinelTransport::run_script(const scripts::Script& script, const Argv& keys, const Argv& args) {
  return execute<ReplyPtr>([&](Link& c) { return scripts_.run(c, script, keys, args); },
                           [](const ReplyPtr& r) { return is_readonly(r.get()); });
}

ReplyPtr SentinelTransport::run_command(std::string_view, const Argv& argv) {
  return execute<ReplyPtr>([&](Link& c) { return send_with_outcome(c, [&] { return c.command(argv); }); },
                           [](const ReplyPtr& r) { return is_readonly(r.get()); });
}

std::vector<ReplyPtr> SentinelTransport::run_scripts(const scripts::Script& script,
                                                     const std::vector<ScriptCall>& calls, const Durability& durable,
                                                     std::vector<Ack>* acks) {
  if (calls.empty()) return {};
  // All READONLY or none: the pipeline went to one server. A retry on the
  // re-resolved master replaces the ack of the demoted one.
  Ack ack;
  std::vector<ReplyPtr> replies = execute<std::vector<ReplyPtr>>(
      [&](Link& c) { return run_scripts_on(c, scripts_, script, calls, durable, &ack); },
      [](const std::vector<ReplyPtr>& rs) { return !rs.empty() && is_readonly(rs.front().get()); });
  if (acks) acks->assign(calls.size(), ack);
  return replies;
}

bool SentinelTransport::run_script_async(const scripts::Script& script, const ScriptCall& call, ScriptDone&& done) {
  MasterPtr m = master();
  if (!m) return false;  // a caller waits for the first resolution
  ensure_follower();     // as current() does
  // An unreachable master: the blocking path re-resolves and tries again.
  return submit_async_on(m, scripts_, script, call, options_.command_timeout_ms, std::move(done));
}

bool SentinelTransport::divert_async(const std::shared_ptr<AsyncCall>& c, Mux::Call& attempt) {
  if (attempt.error) {
    // As execute(): re-resolve for the next call; this one may have run, so
    // it fails (after the resolution, which must not run on an I/O thread).
    if (closed_.load()) return false;
    // The job gets an error of its own: the call's exception object is
    // released on this I/O thread, through a reference count that
    // ThreadSanitizer cannot see (libstdc++ is not instrumented).
    ErrorCode code = ErrorCode::kUnavailable;
    std::string message;
    int sys_errno = 0;
    bool unknown = false;
    try {
      std::rethrow_exception(attempt.error);
    } catch (const Error& e) {
      code = e.code(), message = e.what(), sys_errno = e.sys_errno(), unknown = e.outcome_unknown();
    } catch (const std::exception& e) {
      code = ErrorCode::kInternal, message = e.what();
    }
    run_in_background([this, c, code, message, sys_errno, unknown] {
      re_resolve();
      Error error(code, message, sys_errno);
      error.set_outcome_unknown(unknown);
      c->done(nullptr, std::make_exception_ptr(error));
    });
    return true;
  }
  if (!is_readonly(attempt.replies.front().get())) return false;
  readonly_replies_.fetch_add(1, std::memory_order_relaxed);
  finish_in_background(c, [this] { re_resolve(); });  // the command did not run
  return true;
}

std::string SentinelTransport::master_address() { return current()->address; }

}  // namespace polylimit

namespace polylimit {

SentinelTransport::MasterPtr SentinelTransport::master() {
  std::lock_guard<std::mutex> lock(locks().master);
  return master_;
}

void SentinelTransport::use(MasterPtr m) {
  {
    std::lock_guard<std::mutex> lock(locks().master);
    master_ = m;
  }
  pools_.replace({m});  // the old pool closes when its last lease comes back
}

long SentinelTransport::evicting_nodes() { return pools_.evicting(); }

long SentinelTransport::connect_attempts() { return pools_.connect_attempts(); }

void SentinelTransport::close() {
  closed_.store(true);
  stop_threads();
  pools_.close();
}

}  // namespace polylimit
