// pool.cpp - ConnectionPool and the links it hands out.
#include "net/pool.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "net/call_deadline.h"
#include "polylimit/errors.h"

namespace polylimit {

namespace {

// A command the server answers only when something else happens (WAIT and
// WAITAOF wait for replicas): the connection carries nothing else meanwhile.
bool holds_connection(const Argv& argv) { return !argv.empty() && (argv[0] == "WAIT" || argv[0] == "WAITAOF"); }

}  // namespace

Mux::CallPtr PooledConnection::prepare(const Argv* const* commands, size_t count, Mux::Clock::time_point deadline) {
  // One Call per thread, reused while nobody else holds it (an abandoned
  // call stays with its connection until its reply is read).
  static thread_local Mux::CallPtr spare;
  Mux::CallPtr call;
  if (spare && spare.use_count() == 1)
    call = spare;
  else
    call = spare = std::make_shared<Mux::Call>();
  call->reset(count, deadline);
  for (size_t i = 0; i < count; ++i) {
    Connection::encode(call->bytes, *commands[i]);
    call->holds = call->holds || holds_connection(*commands[i]);
  }
  return call;
}

Mux::CallPtr PooledConnection::run(const Argv* const* commands, size_t count) {
  sent_ = false;
  // One deadline for the call, the retry included.
  const Mux::Clock::time_point deadline =
      InheritedDeadline::cap(Mux::Clock::now() + std::chrono::milliseconds(pool_->options_.command_timeout_ms));
  for (int attempt = 0;; ++attempt) {
    Mux::CallPtr call = prepare(commands, count, deadline);
    try {
      mux_->run(call, std::chrono::milliseconds(pool_->options_.acquire_timeout_ms));
    } catch (const Error&) {
      sent_ = call->sent;
      // Nothing of it was written and the connection is gone (closed while
      // idle, or broken by another call): once more on a fresh connection.
      if (attempt == 0 && call->may_resend && !pool_->closed_.load()) {
        mux_ = pool_->acquire().mux_;
        continue;
      }
      throw;
    }
    sent_ = true;
    return call;
  }
}

ReplyPtr PooledConnection::command(const Argv& argv) {
  const Argv* one = &argv;
  Mux::CallPtr call = run(&one, 1);
  ReplyPtr reply = std::move(call->replies.front());
  call->replies.clear();
  return reply;
}

std::vector<ReplyPtr> PooledConnection::pipeline(const std::vector<Argv>& commands) {
  std::vector<const Argv*> all;
  all.reserve(commands.size());
  for (const Argv& c : commands) all.push_back(&c);
  return run(all.data(), all.size())->replies.take();
}

void PooledConnection::submit(const std::vector<Argv>& commands, std::function<void(Mux::Call&)> done,
                              Mux::Clock::time_point deadline) {
  std::vector<const Argv*> all;
  all.reserve(commands.size());
  for (const Argv& c : commands) all.push_back(&c);
  submit(all.data(), all.size(), std::move(done), deadline);
}

void PooledConnection::submit(const Argv& command, std::function<void(Mux::Call&)> done,
                              Mux::Clock::time_point deadline) {
  const Argv* one = &command;
  submit(&one, 1, std::move(done), deadline);
}

void PooledConnection::submit(const Argv* const* commands, size_t count, std::function<void(Mux::Call&)> done,
                              Mux::Clock::time_point deadline) {
  auto call = std::make_shared<Mux::Call>();
  if (deadline == Mux::Clock::time_point{})
    deadline = Mux::Clock::now() + std::chrono::milliseconds(pool_->options_.command_timeout_ms);
  call->reset(count, deadline);
  for (size_t i = 0; i < count; ++i) {
    Connection::encode(call->bytes, *commands[i]);
    call->holds = call->holds || holds_connection(*commands[i]);
  }
  call->on_done = std::move(done);
  mux_->submit(call);
}

ConnectionPool::ConnectionPool(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls,
                               std::shared_ptr<const MonotonicClock> clock)
    : endpoint_(std::move(endpoint)),
      options_(options),
      tls_(std::move(tls)),
      clock_(clock ? std::move(clock) : MonotonicClock::real()) {}

ConnectionPool::~ConnectionPool() { close(); }

ConnectionPool::State* ConnectionPool::current() {
  return &states_.get([](State&) {
    // We are a forked child: the parent's connections (and their I/O
    // threads, which do not exist here) are left alone, never closed or
    // written to.
  });
}

bool ConnectionPool::usable(Mux& mux) {
  if (mux.broken()) return false;
  if (mux.idle_for() < std::chrono::milliseconds(options_.idle_check_ms)) return true;
  try {  // idle for long: a PING first, so a dead connection costs no caller its call
    auto call = std::make_shared<Mux::Call>();
    call->reset(1, Mux::Clock::now() + std::chrono::milliseconds(options_.command_timeout_ms));
    Connection::encode(call->bytes, {"PING"});
    mux.run(call);
    return call->replies.front()->type == ReplyType::kStatus;
  } catch (const Error&) {
    return false;
  }
}

void ConnectionPool::close() {
  closed_.store(true);
  State* s = current();
  std::vector<std::shared_ptr<Mux>> muxes;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    muxes.swap(s->muxes);
  }
  for (auto& m : muxes) m->shut_down();
}

namespace {

// "maxmemory:<n>" and "maxmemory_policy:<p>" from INFO memory text.
bool parse_info(const std::string& info, long long& maxmemory, std::string& policy) {
  auto field = [&](const char* name, std::string& out) {
    size_t at = info.find(std::string("\n") + name + ":");
    if (at == std::string::npos) return false;
    at += std::strlen(name) + 2;
    size_t end = info.find_first_of("\r\n", at);
    out = info.substr(at, end == std::string::npos ? std::string::npos : end - at);
    return true;
  };
  std::string mm;
  if (!field("maxmemory", mm) || !field("maxmemory_policy", policy)) return false;
  maxmemory = std::atoll(mm.c_str());
  return true;
}

}  // namespace

// The wait after `failures` consecutive failed connects: 10 ms doubling to
// 1 s, jittered down to half so that processes do not reconnect in step.
std::chrono::microseconds ConnectionPool::backoff(int failures) {
  const int64_t base_us = std::min<int64_t>(int64_t{10000} << std::min(failures - 1, 7), 1000000);
  static thread_local uint64_t seed = reinterpret_cast<uintptr_t>(&seed) ^ static_cast<uint64_t>(::getpid());
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return std::chrono::microseconds(base_us / 2 +
                                   static_cast<int64_t>((seed >> 33) % static_cast<uint64_t>(base_us / 2 + 1)));
}

// I/O errors propagate: the connection is new, nothing was sent for a caller.
void ConnectionPool::probe_eviction(Connection& conn) {
  long long maxmemory = -1;
  std::string policy;
  ReplyPtr r = conn.command({"CONFIG", "GET", "maxmemory*"});
  if (r->type == ReplyType::kArray) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      const Reply* k = r->element[i];
      const Reply* v = r->element[i + 1];
      if (k->type != ReplyType::kString || v->type != ReplyType::kString) continue;
      std::string key(k->str, k->len), value(v->str, v->len);
      if (key == "maxmemory") maxmemory = std::atoll(value.c_str());
      if (key == "maxmemory-policy") policy = value;
    }
  }
  if (maxmemory < 0 || policy.empty()) {  // CONFIG denied (ACL, renamed): INFO has both
    ReplyPtr info = conn.command({"INFO", "memory"});
    if (info->type != ReplyType::kString) return;
    if (!parse_info("\n" + std::string(info->str, info->len), maxmemory, policy)) return;
  }
  evicting_.store(maxmemory > 0 && policy != "noeviction" ? 1 : 0, std::memory_order_relaxed);
}

PooledConnection ConnectionPool::acquire(bool grow) {
  if (closed_.load()) throw Error(ErrorCode::kClosed, "the client is closed");
  State* s = current();
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    s->muxes.erase(std::remove_if(s->muxes.begin(), s->muxes.end(), [](const auto& m) { return m->broken(); }),
                   s->muxes.end());
    // The first connection with fewer than kFill calls waiting takes the
    // call: calls concentrated on one connection make larger batches, which
    // cost both sides less per call. When every one has kFill, the least
    // busy takes it (or a new one is opened). One with a WAIT in flight
    // counts as full (Mux::load), so calls do not queue behind it.
    std::shared_ptr<Mux> best;
    size_t best_load = 0;
    for (const auto& m : s->muxes) {
      const size_t load = m->load();
      if (!best || load < best_load) best = m, best_load = load;
      if (load < kFill) break;
    }
    const bool may_open =
        static_cast<int>(s->muxes.size()) + s->connecting < options_.size && (grow || s->muxes.empty());
    if (best && (best_load < kFill || !may_open)) {
      lock.unlock();
      // (The non-blocking path skips the idle PING: a connection found closed
      // when written fails its calls unsent, and they are retried.)
      if (!grow || usable(*best)) return PooledConnection(this, std::move(best));
      best->shut_down();  // failed its idle check: drop it, and look again
      lock.lock();
      continue;
    }
    if (!may_open) {  // every allowed connection is being made: share the first to finish
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      lock.lock();
      continue;
    }
    try {
      return PooledConnection(this, connect(s, lock));
    } catch (const Error&) {
      // The node refuses: while another connection is still good, use it.
      if (best) return PooledConnection(this, std::move(best));
      throw;
    }
  }
}

// Makes a connection (the lock is released meanwhile); throws the connect
// error, or kUnavailable at once while failed connects back off.
std::shared_ptr<Mux> ConnectionPool::connect(State* s, std::unique_lock<std::mutex>& lock) {
  const auto now = clock_->now();
  if (s->failures > 0 && now < s->retry_at) {
    // The node is down: fail fast instead of a connect per call.
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(s->retry_at - now).count() + 1;
    throw Error(s->last_code,
                s->last_error + " (" + std::to_string(s->failures) + " failed connects in a row; next try in " +
                    std::to_string(wait) + " ms)",
                s->last_errno);
  }
  ++s->connecting;
  lock.unlock();
  attempts_.fetch_add(1, std::memory_order_relaxed);
  try {
    auto conn = std::make_unique<Connection>(endpoint_, options_, tls_.get());
    made_.fetch_add(1, std::memory_order_relaxed);
    probe_eviction(*conn);
    if (conn->broken())  // the handshake's replies came with bytes nobody asked for
      throw Error(ErrorCode::kServer, "reply from " + endpoint_.describe() + ": unsolicited bytes after a reply");
    auto mux = std::make_shared<Mux>(std::move(conn));
    lock.lock();
    --s->connecting;
    s->failures = 0;
    if (closed_.load()) {
      lock.unlock();
      mux->shut_down();
      throw Error(ErrorCode::kClosed, "the client is closed");
    }
    s->muxes.push_back(mux);
    return mux;
  } catch (const Error& e) {
    if (!lock.owns_lock()) lock.lock();
    if (e.code() == ErrorCode::kClosed) throw;  // (connecting already counted down)
    --s->connecting;
    // A refused certificate or password is retried no faster than a dead
    // node: a misconfigured client must not hammer the server with handshakes.
    if (e.code() == ErrorCode::kUnavailable || e.code() == ErrorCode::kTimeout || e.code() == ErrorCode::kAuth) {
      ++s->failures;
      s->retry_at = clock_->now() + backoff(s->failures);
      s->last_error = e.what();
      s->last_errno = e.sys_errno();
      // Failing fast is "not reachable now" whatever the last try met, except
      // a refused certificate or password, which stays the caller's to fix.
      s->last_code = e.code() == ErrorCode::kAuth ? ErrorCode::kAuth : ErrorCode::kUnavailable;
    }
    throw;
  } catch (...) {
    if (!lock.owns_lock()) lock.lock();
    --s->connecting;
    throw;
  }
}

int ConnectionPool::open_connections() {
  State* s = current();
  std::lock_guard<std::mutex> lock(s->mu);
  int open = 0;
  for (const auto& m : s->muxes) open += m->broken() ? 0 : 1;
  return open;
}

}  // namespace polylimit
