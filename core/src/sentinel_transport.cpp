// sentinel_transport.cpp - master discovery and failover handling.
#include "sentinel_transport.h"

#include <hiredis/hiredis.h>

#include <unistd.h>

#include <cstring>
#include <optional>

#include "redis_errors.h"

namespace polylimit {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool is_readonly(const redisReply* r) {
  return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && std::memcmp(r->str, "READONLY", 8) == 0;
}

void append(std::string& list, const std::string& item) { list += (list.empty() ? "" : "; ") + item; }

}  // namespace

SentinelTransport::SentinelTransport(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls)
    : endpoint_(std::move(endpoint)), options_(options), tls_(std::move(tls)) {
  if (endpoint_.seeds.empty()) throw_invalid("redis+sentinel:// needs at least one sentinel");
  if (endpoint_.master_name.empty()) throw_invalid("redis+sentinel:// needs a master name");
}

SentinelTransport::MasterPtr SentinelTransport::resolve(const MasterPtr& previous) {
  last_resolve_ns_.store(now_ns());
  resolutions_.fetch_add(1, std::memory_order_relaxed);
  const std::string& name = endpoint_.master_name;
  std::string failures;
  int answered = 0, unknown = 0, not_sentinel = 0, refused = 0, tls_refused = 0;
  for (const HostPort& s : endpoint_.seeds) {
    Endpoint sep;
    sep.kind = Endpoint::Kind::kTcp;
    sep.host = s.host;
    sep.port = s.port;
    sep.user = endpoint_.sentinel_user;
    sep.password = endpoint_.sentinel_password;
    sep.tls = endpoint_.tls;
    const std::string where = "sentinel " + s.describe();
    ReplyPtr r;
    try {
      Connection conn(sep, options_, tls_.get());
      r = conn.command({"SENTINEL", "get-master-addr-by-name", name});
    } catch (const Error& e) {
      // kAuth from the TLS layer (a certificate failed verification) is not
      // the sentinel refusing our credentials.
      const bool tls_failure = e.code() == ErrorCode::kAuth && std::strncmp(e.what(), "TLS ", 4) == 0;
      if (tls_failure)
        ++tls_refused;
      else if (e.code() == ErrorCode::kAuth || e.code() == ErrorCode::kPermission)
        ++refused;
      append(failures, where + ": " + e.what());
      continue;
    }
    ++answered;
    if (r->type == REDIS_REPLY_NIL) {
      ++unknown;
      append(failures, where + " knows no master named \"" + name + "\"");
      continue;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      std::string text(r->str, r->len);
      if (text.find("unknown command") != std::string::npos || text.find("unknown subcommand") != std::string::npos)
        ++not_sentinel;
      append(failures, where + ": " + text);
      continue;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING) {
      append(failures, where + ": unexpected reply to SENTINEL get-master-addr-by-name");
      continue;
    }
    Endpoint data;
    data.kind = Endpoint::Kind::kTcp;
    data.host.assign(r->element[0]->str, r->element[0]->len);
    data.port = std::atoi(std::string(r->element[1]->str, r->element[1]->len).c_str());
    data.user = endpoint_.user;
    data.password = endpoint_.password;
    data.db = endpoint_.db;
    data.tls = endpoint_.tls;
    MasterPtr m = previous && previous->address == data.describe() ? previous
                                                                      : std::make_shared<Master>(data, options_, tls_);
    try {
      PooledConnection conn = m->pool.acquire();
      ReplyPtr role = conn->command({"ROLE"});
      if (role->type == REDIS_REPLY_ERROR) throw_reply_error(std::string(role->str, role->len), "ROLE");
      if (role->type != REDIS_REPLY_ARRAY || role->elements < 1 || role->element[0]->type != REDIS_REPLY_STRING ||
          std::string(role->element[0]->str, role->element[0]->len) != "master") {
        append(failures, where + " names " + m->address + ", which is not a master (yet)");
        continue;
      }
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kAuth || e.code() == ErrorCode::kPermission) throw;
      append(failures, where + " names " + m->address + ": " + e.what());
      continue;
    }
    return m;
  }
  if (tls_refused > 0 && tls_refused + refused == static_cast<int>(endpoint_.seeds.size()))
    throw Error(ErrorCode::kAuth, "rediss+sentinel://: TLS with the sentinels failed: " + failures);
  if (refused > 0 && refused == static_cast<int>(endpoint_.seeds.size()))
    throw Error(ErrorCode::kAuth, "redis+sentinel://: every sentinel refused the credentials (sentinel_user / "
                                  "sentinel_password): " + failures);
  if (answered > 0 && unknown == answered)
    throw Error(ErrorCode::kInvalidArgument,
                "redis+sentinel://: no sentinel knows a master named \"" + name + "\" (" + failures + ")");
  if (answered > 0 && not_sentinel == answered)
    throw Error(ErrorCode::kInvalidArgument, "redis+sentinel://: the hosts are not sentinels (" + failures + ")");
  throw Error(ErrorCode::kUnavailable,
              "redis+sentinel://: no usable master \"" + name + "\" from the sentinels (" + failures + ")");
}

void SentinelTransport::recheck() {
  if (now_ns() - last_resolve_ns_.load() < std::chrono::nanoseconds(kRecheckInterval).count()) return;
  std::unique_lock<std::mutex> single(locks().resolve, std::try_to_lock);
  if (!single.owns_lock()) return;  // another thread is at it
  if (now_ns() - last_resolve_ns_.load() < std::chrono::nanoseconds(kRecheckInterval).count()) return;
  MasterPtr previous;
  {
    std::lock_guard<std::mutex> lock(locks().master);
    previous = master_;
  }
  try {
    MasterPtr m = resolve(previous);
    std::lock_guard<std::mutex> lock(locks().master);
    master_ = m;
  } catch (const Error&) {
    // Keep the master in use; a failing command will re-resolve.
  }
}

SentinelTransport::MasterPtr SentinelTransport::current() {
  {
    std::unique_lock<std::mutex> lock(locks().master);
    if (master_) {
      lock.unlock();
      recheck();
      lock.lock();
      return master_;
    }
  }
  std::lock_guard<std::mutex> single(locks().resolve);
  {
    std::lock_guard<std::mutex> lock(locks().master);
    if (master_) return master_;
  }
  MasterPtr m = resolve(nullptr);  // the first resolution's error is the caller's answer
  std::lock_guard<std::mutex> lock(locks().master);
  master_ = m;
  return m;
}

SentinelTransport::MasterPtr SentinelTransport::re_resolve() {
  const int64_t min_gap = std::chrono::nanoseconds(kMinResolveInterval).count();
  std::lock_guard<std::mutex> single(locks().resolve);
  MasterPtr previous;
  {
    std::lock_guard<std::mutex> lock(locks().master);
    previous = master_;
  }
  if (now_ns() - last_resolve_ns_.load() < min_gap) return previous;  // just done, maybe by another thread
  try {
    MasterPtr m = resolve(previous);
    std::lock_guard<std::mutex> lock(locks().master);
    master_ = m;  // the old pool closes when its last lease comes back
    return m;
  } catch (const Error&) {
    return previous;  // the caller reports its own failure
  }
}

template <class R>
R SentinelTransport::execute(const std::function<R(Connection&)>& run,
                             const std::function<bool(const R&)>& readonly) {
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
  return execute<ReplyPtr>([&](Connection& c) { return scripts_.run(c, script, keys, args); },
                           [](const ReplyPtr& r) { return is_readonly(r.get()); });
}

ReplyPtr SentinelTransport::run_command(std::string_view, const Argv& argv) {
  return execute<ReplyPtr>([&](Connection& c) { return send_with_outcome(c, [&] { return c.command(argv); }); },
                           [](const ReplyPtr& r) { return is_readonly(r.get()); });
}

std::vector<ReplyPtr> SentinelTransport::run_scripts(const scripts::Script& script,
                                                     const std::vector<ScriptCall>& calls) {
  if (calls.empty()) return {};
  // All READONLY or none: the pipeline went to one server.
  return execute<std::vector<ReplyPtr>>(
      [&](Connection& c) { return run_scripts_on(c, scripts_, script, calls); },
      [](const std::vector<ReplyPtr>& rs) { return !rs.empty() && is_readonly(rs.front().get()); });
}

std::string SentinelTransport::master_address() { return current()->address; }

}  // namespace polylimit

namespace polylimit {

long SentinelTransport::evicting_nodes() {
  MasterPtr master;
  {
    std::lock_guard<std::mutex> lock(locks().master);
    master = master_;
  }
  return master && master->pool.evicting() == 1 ? 1 : 0;
}

long SentinelTransport::connect_attempts() {
  MasterPtr master;
  {
    std::lock_guard<std::mutex> lock(locks().master);
    master = master_;
  }
  return master ? master->pool.connect_attempts() : 0;
}

void SentinelTransport::close() {
  MasterPtr master;
  {
    std::lock_guard<std::mutex> lock(locks().master);
    master = master_;
  }
  if (master) master->pool.close();
}

}  // namespace polylimit
