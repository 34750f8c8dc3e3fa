// pool.cpp - ConnectionPool.
#include "pool.h"

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "polylimit/errors.h"

namespace polylimit {

PooledConnection::~PooledConnection() {
  if (conn_) pool_->release(static_cast<ConnectionPool::State*>(state_), std::move(conn_));
}

ConnectionPool::ConnectionPool(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls)
    : endpoint_(std::move(endpoint)), options_(options), tls_(std::move(tls)) {}

ConnectionPool::State* ConnectionPool::current() {
  return &states_.get([](State& parent) {
    // We are a forked child. Its idle sockets are shared with the parent:
    // close our copies when the state is not locked (closing our fd does not
    // disturb the parent's connection), and never send anything on them.
    if (parent.mu.try_lock()) {
      parent.idle.clear();
      parent.mu.unlock();
    }
  });
}

bool ConnectionPool::usable(Connection& conn) {
  if (conn.stale()) return false;
  auto idle = std::chrono::steady_clock::now() - conn.last_used();
  if (idle < std::chrono::milliseconds(options_.idle_check_ms)) return true;
  try {
    ReplyPtr r = conn.command({"PING"});
    return r->type == REDIS_REPLY_STATUS;
  } catch (const Error&) {
    return false;
  }
}

void ConnectionPool::close() {
  closed_.store(true);
  State* s = current();
  std::vector<std::unique_ptr<Connection>> idle;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    idle.swap(s->idle);
    s->open -= static_cast<int>(idle.size());
    s->cv.notify_all();
  }
  // `idle` closes its sockets here, outside the lock; leased ones close when
  // they come back.
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
  return std::chrono::microseconds(base_us / 2 + static_cast<int64_t>((seed >> 33) % static_cast<uint64_t>(base_us / 2 + 1)));
}

// I/O errors propagate: the connection is new, nothing was sent for a caller.
void ConnectionPool::probe_eviction(Connection& conn) {
  long long maxmemory = -1;
  std::string policy;
  ReplyPtr r = conn.command({"CONFIG", "GET", "maxmemory*"});
  if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      const redisReply* k = r->element[i];
      const redisReply* v = r->element[i + 1];
      if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
      std::string key(k->str, k->len), value(v->str, v->len);
      if (key == "maxmemory") maxmemory = std::atoll(value.c_str());
      if (key == "maxmemory-policy") policy = value;
    }
  }
  if (maxmemory < 0 || policy.empty()) {  // CONFIG denied (ACL, renamed): INFO has both
    ReplyPtr info = conn.command({"INFO", "memory"});
    if (info->type != REDIS_REPLY_STRING) return;
    if (!parse_info("\n" + std::string(info->str, info->len), maxmemory, policy)) return;
  }
  evicting_.store(maxmemory > 0 && policy != "noeviction" ? 1 : 0, std::memory_order_relaxed);
}

PooledConnection ConnectionPool::acquire() {
  if (closed_.load()) throw Error(ErrorCode::kClosed, "the client is closed");
  State* s = current();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.acquire_timeout_ms);
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    while (!s->idle.empty()) {
      std::unique_ptr<Connection> conn = std::move(s->idle.back());
      s->idle.pop_back();
      lock.unlock();
      if (usable(*conn)) return PooledConnection(this, s, std::move(conn));
      conn.reset();  // closed outside the lock
      lock.lock();
      --s->open;
    }
    if (s->open < options_.size) {
      const auto now = std::chrono::steady_clock::now();
      if (s->failures > 0 && now < s->retry_at) {
        // The node is down: fail fast instead of a connect per call.
        auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(s->retry_at - now).count() + 1;
        throw Error(ErrorCode::kUnavailable,
                    s->last_error + " (" + std::to_string(s->failures) + " failed connects in a row; next try in " +
                        std::to_string(wait) + " ms)",
                    s->last_errno);
      }
      ++s->open;
      lock.unlock();
      attempts_.fetch_add(1, std::memory_order_relaxed);
      try {
        auto conn = std::make_unique<Connection>(endpoint_, options_, tls_.get());
        made_.fetch_add(1, std::memory_order_relaxed);
        probe_eviction(*conn);
        if (conn->broken())  // the handshake's replies came with bytes nobody asked for
          throw Error(ErrorCode::kServer, "reply from " + endpoint_.describe() + ": unsolicited bytes after a reply");
        lock.lock();
        s->failures = 0;
        lock.unlock();
        return PooledConnection(this, s, std::move(conn));
      } catch (const Error& e) {
        lock.lock();
        --s->open;
        if (e.code() == ErrorCode::kUnavailable || e.code() == ErrorCode::kTimeout) {
          ++s->failures;
          s->retry_at = std::chrono::steady_clock::now() + backoff(s->failures);
          s->last_error = e.what();
          s->last_errno = e.sys_errno();
        }
        s->cv.notify_one();
        throw;
      } catch (...) {
        lock.lock();
        --s->open;
        s->cv.notify_one();
        throw;
      }
    }
    if (s->cv.wait_until(lock, deadline) == std::cv_status::timeout && s->idle.empty() &&
        s->open >= options_.size) {
      throw Error(ErrorCode::kPoolExhausted,
                  "no free connection to " + endpoint_.describe() + " within acquire_timeout_ms=" +
                      std::to_string(options_.acquire_timeout_ms) + " (pool_size=" +
                      std::to_string(options_.size) + ")");
    }
  }
}

void ConnectionPool::release(State* s, std::unique_ptr<Connection> conn) {
  if (s != current()) {
    conn.reset();  // leased before fork(): our copy of the socket is only closed
    return;
  }
  bool keep = !conn->broken() && !closed_.load();
  if (!keep) conn.reset();
  std::lock_guard<std::mutex> lock(s->mu);
  if (keep)
    s->idle.push_back(std::move(conn));
  else
    --s->open;
  s->cv.notify_one();
}

int ConnectionPool::open_connections() {
  State* s = current();
  std::lock_guard<std::mutex> lock(s->mu);
  return s->open;
}

}  // namespace polylimit
