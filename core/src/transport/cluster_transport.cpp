// cluster_transport.cpp - slot map, redirections, per-node pipelines.
#include "transport/cluster_transport.h"

#include <unistd.h>
#include <algorithm>

#include <cstring>
#include <optional>
#include <thread>

#include "net/call_deadline.h"
#include "net/redis_errors.h"
#include "transport/crc16.h"

namespace polylimit {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool reply_starts_with(const Reply* r, const char* prefix) {
  size_t n = std::strlen(prefix);
  return r->type == ReplyType::kError && r->len >= n && std::memcmp(r->str, prefix, n) == 0;
}

struct Redirect {
  bool moved = false;  // else ASK
  int slot = 0;
  HostPort address;
};

// "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381"; an empty host
// (":6381", a node that does not know its own address) means `current_host`.
bool parse_redirect(const Reply* r, const std::string& current_host, Redirect& out) {
  bool moved = reply_starts_with(r, "MOVED ");
  if (!moved && !reply_starts_with(r, "ASK ")) return false;
  std::string text(r->str, r->len);
  size_t sp1 = text.find(' ');
  size_t sp2 = text.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return false;
  std::string target = text.substr(sp2 + 1);
  size_t colon = target.rfind(':');
  if (colon == std::string::npos) return false;
  try {
    out.moved = moved;
    out.slot = std::stoi(text.substr(sp1 + 1, sp2 - sp1 - 1));
    out.address.host = target.substr(0, colon);
    out.address.port = std::stoi(target.substr(colon + 1));
  } catch (const std::exception&) {
    return false;
  }
  if (out.address.host.empty()) out.address.host = current_host;
  return out.slot >= 0 && out.slot < kClusterSlots && out.address.port > 0 && out.address.port < 65536;
}

// "host:port" or "[v6]:port" (HostPort::describe) -> the bare host.
std::string host_of(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

// One entry of CLUSTER SLOTS: [start, end, [ip, port, id, ...], replica...].
bool node_of(const Reply* e, const std::string& asked_host, HostPort& out) {
  if (e->type != ReplyType::kArray || e->elements < 2) return false;
  const Reply* ip = e->element[0];
  const Reply* port = e->element[1];
  if (ip->type != ReplyType::kString || port->type != ReplyType::kInteger) return false;
  out.host.assign(ip->str, ip->len);
  // An empty or "?" address means "the node you asked" (unknown endpoint).
  if (out.host.empty() || out.host == "?") out.host = asked_host;
  out.port = static_cast<int>(port->integer);
  return out.port > 0 && out.port < 65536;
}

}  // namespace

ClusterTransport::ClusterTransport(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls,
                                   std::shared_ptr<const MonotonicClock> clock)
    : endpoint_(std::move(endpoint)),
      options_(options),
      tls_(std::move(tls)),
      pools_(endpoint_, options_, tls_, std::move(clock)),
      slots_(kClusterSlots) {
  if (endpoint_.seeds.empty()) throw_invalid("redis+cluster:// needs at least one seed node");
}

ClusterTransport::~ClusterTransport() { stop_refresher(); }

int ClusterTransport::slot_of(const Argv& keys) const {
  if (keys.empty()) throw Error(ErrorCode::kInternal, "a cluster command needs at least one key to be routed");
  int slot = key_slot(keys[0]);
  for (size_t i = 1; i < keys.size(); ++i)
    if (key_slot(keys[i]) != slot)
      throw Error(ErrorCode::kInvalidArgument, "the keys of one script call map to different cluster slots (" +
                                                   std::to_string(slot) + " and " + std::to_string(key_slot(keys[i])) +
                                                   "); all keys of a call must share a hash tag");
  return slot;
}

void ClusterTransport::ensure_map() {
  if (loaded_.load(std::memory_order_acquire)) {
    if (now_ns() - last_refresh_ns_.load() > std::chrono::nanoseconds(kPeriodicRefresh).count()) request_refresh();
    return;
  }
  std::lock_guard<std::mutex> lock(locks().refresh);
  if (!loaded_.load()) load_map();  // the first load is never rate-limited: its error is the caller's answer
}

void ClusterTransport::refresh(bool wait) {
  const int64_t min_gap = std::chrono::nanoseconds(kMinRefreshInterval).count();
  int64_t asked = now_ns();
  if (asked - last_refresh_ns_.load() < min_gap) return;
  std::unique_lock<std::mutex> lock(locks().refresh, std::defer_lock);
  if (wait)
    lock.lock();
  else if (!lock.try_lock())
    return;  // another thread is refreshing; the current map serves meanwhile
  if (now_ns() - last_refresh_ns_.load() < min_gap) return;  // done while we waited
  try {
    load_map();
  } catch (const Error&) {
    // The caller reports its own failure; the next refresh tries again.
  }
}

void ClusterTransport::request_refresh(const HostPort* first) {
  Locks& l = locks();
  if (!first && l.pending.load(std::memory_order_acquire)) return;  // already asked: one refresh serves all
  {
    std::lock_guard<std::mutex> lock(l.refresher);
    if (l.stop) return;
    if (first) l.first = *first;
    l.requested_ns = now_ns();
    l.pending.store(true, std::memory_order_release);
    if (!l.thread.joinable()) l.thread = std::thread([this] { refresher_loop(); });
  }
  l.wake.notify_one();
}

void ClusterTransport::refresher_loop() {
  Locks& l = locks();
  const int64_t min_gap = std::chrono::nanoseconds(kMinRefreshInterval).count();
  std::unique_lock<std::mutex> lock(l.refresher);
  for (;;) {
    l.wake.wait(lock, [&] { return l.stop || l.pending.load(); });
    // Rate limit: not sooner than kMinRefreshInterval after the last refresh,
    // whoever ran it; requests made meanwhile are served by this one.
    for (int64_t left; !l.stop && (left = last_refresh_ns_.load() + min_gap - now_ns()) > 0;)
      l.wake.wait_for(lock, std::chrono::nanoseconds(left));
    if (l.stop) return;
    std::optional<HostPort> first = std::move(l.first);
    l.first.reset();
    const int64_t asked = l.requested_ns;
    l.pending.store(false);
    lock.unlock();
    bool again = false;
    {
      std::lock_guard<std::mutex> single(l.refresh);
      // A caller may have refreshed while we waited for its lock: that serves
      // the request only if it started after it.
      const int64_t last = last_refresh_ns_.load();
      if (last < asked && now_ns() - last >= min_gap) {
        background_refreshes_.fetch_add(1, std::memory_order_relaxed);
        try {
          load_map(first ? &*first : nullptr);
        } catch (const Error&) {
          // The callers see their own failures; the next request tries again.
        }
      } else if (last < asked) {
        again = true;  // after the gap
      }
    }
    lock.lock();
    if (again) {
      if (!l.first) l.first = std::move(first);
      l.pending.store(true);
    }
  }
}

void ClusterTransport::stop_refresher() {
  Locks& l = locks();
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(l.refresher);
    l.stop = true;
    l.stopping.store(true);
    thread = std::move(l.thread);
  }
  l.wake.notify_all();
  // A refresh in progress ends after the node it is asking answers or times out.
  if (thread.joinable()) thread.join();
}

void ClusterTransport::load_map(const HostPort* first) {
  last_refresh_ns_.store(now_ns());
  refreshes_.fetch_add(1, std::memory_order_relaxed);
  std::vector<HostPort> candidates;
  {
    std::shared_lock<std::shared_mutex> lock(locks().map);
    candidates = known_;
  }
  for (const HostPort& s : endpoint_.seeds) {
    bool seen = std::any_of(candidates.begin(), candidates.end(),
                            [&](const HostPort& c) { return c.host == s.host && c.port == s.port; });
    if (!seen) candidates.push_back(s);
  }

  // Start at a different node each time, so that one node that hangs (rather
  // than refusing) does not delay every refresh.
  if (candidates.size() > 1 && !endpoint_.seeds.empty()) {
    long turn = refreshes_.load(std::memory_order_relaxed);
    std::rotate(candidates.begin(), candidates.begin() + turn % static_cast<long>(candidates.size()), candidates.end());
  }
  // The node a MOVED named claims the slot: its map is the newest for it.
  if (first) {
    auto same = [&](const HostPort& c) { return c.host == first->host && c.port == first->port; };
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(), same), candidates.end());
    candidates.insert(candidates.begin(), *first);
  }
  std::string failures;
  bool not_a_cluster = false;
  for (const HostPort& candidate : candidates) {
    if (locks().stopping.load()) throw Error(ErrorCode::kClosed, "the client is closed");
    Endpoint ep = pools_.endpoint(candidate);
    std::string where = candidate.describe();
    ReplyPtr r;
    try {
      Connection conn(ep, options_, tls_.get());
      r = conn.command({"CLUSTER", "SLOTS"});
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kAuth || e.code() == ErrorCode::kPermission) throw;
      failures += (failures.empty() ? "" : "; ") + std::string(e.what());
      continue;
    }
    if (r->type == ReplyType::kError) {
      std::string text(r->str, r->len);
      if (text.find("cluster support disabled") != std::string::npos) not_a_cluster = true;
      failures += (failures.empty() ? "" : "; ") + where + ": CLUSTER SLOTS: " + text;
      continue;
    }
    if (r->type != ReplyType::kArray) {
      failures += (failures.empty() ? "" : "; ") + where + ": CLUSTER SLOTS: unexpected reply";
      continue;
    }

    std::vector<NodePtr> slots(kClusterSlots);
    std::map<std::string, NodePtr> nodes;
    std::vector<HostPort> masters, replicas;
    size_t served = 0;
    for (size_t i = 0; i < r->elements; ++i) {
      const Reply* e = r->element[i];
      if (e->type != ReplyType::kArray || e->elements < 3 || e->element[0]->type != ReplyType::kInteger ||
          e->element[1]->type != ReplyType::kInteger)
        continue;
      long long lo = e->element[0]->integer, hi = e->element[1]->integer;
      HostPort master;
      if (lo < 0 || hi >= kClusterSlots || lo > hi || !node_of(e->element[2], candidate.host, master)) continue;
      std::string key = master.describe();
      NodePtr& node = nodes[key];
      if (!node) {
        node = pools_.make(master);
        masters.push_back(master);
      }
      for (long long s = lo; s <= hi; ++s) slots[static_cast<size_t>(s)] = node;
      served += static_cast<size_t>(hi - lo + 1);
      for (size_t k = 3; k < e->elements; ++k) {
        HostPort replica;
        if (node_of(e->element[k], candidate.host, replica)) replicas.push_back(replica);
      }
    }
    if (served == 0) {
      failures += (failures.empty() ? "" : "; ") + where + ": CLUSTER SLOTS: no slot is assigned";
      continue;
    }
    masters.insert(masters.end(), replicas.begin(), replicas.end());
    std::vector<NodePtr> serving;
    for (auto& entry : nodes) serving.push_back(entry.second);
    pools_.replace(serving);
    {
      std::unique_lock<std::shared_mutex> lock(locks().map);
      slots_.swap(slots);
      known_ = std::move(masters);
    }
    loaded_.store(true, std::memory_order_release);
    return;  // the old pools close when their last lease comes back
  }
  if (not_a_cluster)
    throw Error(ErrorCode::kInvalidArgument,
                "redis+cluster://: not a Redis Cluster (" + failures + "); use redis:// for a standalone server");
  throw Error(ErrorCode::kUnavailable, "redis+cluster://: no node answered CLUSTER SLOTS (" + failures + ")");
}

NodePtr ClusterTransport::node_for_slot(int slot) {
  std::shared_lock<std::shared_mutex> lock(locks().map);
  return slots_[static_cast<size_t>(slot)];
}

long ClusterTransport::evicting_nodes() { return pools_.evicting(); }

long ClusterTransport::connect_attempts() { return pools_.connect_attempts(); }

void ClusterTransport::close() {
  stop_refresher();
  pools_.close();
}

namespace {

// The pause before redirection number `n` (n >= 2): 1 ms doubling to 32 ms,
// jittered down to half so that callers of one slot spread out, never past
// `deadline`. False when the deadline has passed.
bool pause_before_redirect(int n, std::chrono::steady_clock::time_point deadline) {
  const auto now = std::chrono::steady_clock::now();
  if (now >= deadline) return false;
  const long base_us = 1000L << std::min(n - 2, 5);
  static thread_local unsigned seed = static_cast<unsigned>(reinterpret_cast<uintptr_t>(&seed) ^ ::getpid());
  seed = seed * 1103515245u + 12345u;
  auto pause = std::chrono::microseconds(base_us / 2 + static_cast<long>((seed >> 8) % (base_us / 2 + 1)));
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
  std::this_thread::sleep_for(std::min(pause, left));
  return true;
}

}  // namespace

ReplyPtr ClusterTransport::execute(int slot, const RunFn& run) {
  ensure_map();
  const auto deadline =
      InheritedDeadline::cap(std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.command_timeout_ms));
  NodePtr node = node_for_slot(slot);
  bool asking = false;
  int redirects = 0, connect_failures = 0;
  for (;;) {
    if (!node) {
      refresh(true);
      node = node_for_slot(slot);
      if (!node)
        throw Error(ErrorCode::kUnavailable,
                    "redis+cluster://: slot " + std::to_string(slot) + " is served by no master (cluster down?)");
    }
    NodePtr here = node;  // outlives the lease below
    std::optional<PooledConnection> conn;
    try {
      conn.emplace(here->pool.acquire());
    } catch (const Error& e) {
      // Nothing was sent: safe to try again once the map is fresh.
      if (e.code() != ErrorCode::kUnavailable && e.code() != ErrorCode::kTimeout) throw;
      if (++connect_failures > kMaxConnectRetries)
        throw Error(e.code(),
                    std::string(e.what()) + " (slot " + std::to_string(slot) + ", after " +
                        std::to_string(kMaxConnectRetries) + " retries)",
                    e.sys_errno());
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * connect_failures));
      refresh(true);
      node = node_for_slot(slot);
      asking = false;
      continue;
    }
    ReplyPtr r;
    try {
      r = run(**conn, asking);
    } catch (const Error&) {
      request_refresh();  // the node may be gone; the command may have run, so no retry
      throw;
    }
    Redirect rd;
    if (parse_redirect(r.get(), host_of(here->address), rd)) {
      redirects_.fetch_add(1, std::memory_order_relaxed);
      if (++redirects > kMaxRedirects || (redirects >= 2 && !pause_before_redirect(redirects, deadline)))
        throw Error(ErrorCode::kUnavailable, "redis+cluster://: still redirected after " +
                                                 std::to_string(redirects - 1) + " redirections for slot " +
                                                 std::to_string(slot) + " (last: " + std::string(r->str, r->len) + ")");
      NodePtr target = pools_.get(rd.address);
      if (rd.moved) {
        {
          std::unique_lock<std::shared_mutex> lock(locks().map);
          slots_[static_cast<size_t>(rd.slot)] = target;
        }
        request_refresh(&rd.address);  // other slots probably moved too
      }
      asking = !rd.moved;
      node = target;
      continue;
    }
    // TRYAGAIN: a multi-key command met a slot in mid-migration; it did not run.
    if (reply_starts_with(r.get(), "TRYAGAIN") && ++redirects <= kMaxRedirects &&
        pause_before_redirect(redirects + 1, deadline))
      continue;
    if (reply_starts_with(r.get(), "CLUSTERDOWN")) request_refresh();
    return r;
  }
}

ReplyPtr ClusterTransport::run_script_on(Link& conn, const scripts::Script& script, const ScriptCall& call, bool asking,
                                         const Durability& durable, Ack* ack) {
  static const Argv kAsking{"ASKING"};
  return std::move(run_scripts_on(conn, scripts_, script, {call}, durable, ack, asking ? kAsking : Argv{}).front());
}

ReplyPtr ClusterTransport::run_script(const scripts::Script& script, const Argv& keys, const Argv& args) {
  int slot = slot_of(keys);
  return execute(slot, [&](Link& c, bool asking) { return run_script_on(c, script, {keys, args}, asking); });
}

ReplyPtr ClusterTransport::run_command(std::string_view key, const Argv& argv) {
  int slot = key_slot(key);
  return execute(slot, [&](Link& c, bool asking) {
    return send_with_outcome(c, [&] {
      if (!asking) return c.command(argv);
      std::vector<ReplyPtr> rs = c.pipeline({Argv{"ASKING"}, argv});
      return std::move(rs[1]);
    });
  });
}

std::vector<ReplyPtr> ClusterTransport::run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                                    const Durability& durable, std::vector<Ack>* acks) {
  if (calls.empty()) return {};
  if (acks) acks->assign(calls.size(), Ack{});
  std::vector<int> slots;
  slots.reserve(calls.size());
  for (const ScriptCall& c : calls) slots.push_back(slot_of(c.keys));
  ensure_map();

  // One pipeline per master, in the order of the map; what comes back as a
  // redirection (or could not be sent) goes through the one-call path.
  std::map<NodePtr, std::vector<size_t>> groups;
  std::vector<size_t> alone;
  for (size_t i = 0; i < calls.size(); ++i) {
    NodePtr node = node_for_slot(slots[i]);
    if (node)
      groups[node].push_back(i);
    else
      alone.push_back(i);
  }
  std::vector<ReplyPtr> replies(calls.size());
  // The batch fails as a whole: once one node's pipeline has run, a later
  // failure (another node, a redirected call) leaves those calls consumed,
  // so its error has an unknown outcome for every call.
  bool some_ran = false;
  return mark_outcome_unknown_if(
      [&some_ran] { return some_ran; },
      [&] {
        for (auto& [node, which] : groups) {
          std::optional<PooledConnection> conn;
          try {
            conn.emplace(node->pool.acquire());
          } catch (const Error& e) {
            if (e.code() != ErrorCode::kUnavailable && e.code() != ErrorCode::kTimeout) throw;
            alone.insert(alone.end(), which.begin(), which.end());
            continue;
          }
          std::vector<ScriptCall> batch;
          batch.reserve(which.size());
          for (size_t i : which) batch.push_back(calls[i]);
          std::vector<ReplyPtr> got;
          Ack ack;  // one WAIT per master, after its pipeline
          try {
            got = run_scripts_on(**conn, scripts_, script, batch, durable, &ack);
          } catch (const Error&) {
            request_refresh();
            throw;
          }
          for (size_t k = 0; k < which.size(); ++k) {
            const Reply* r = got[k].get();
            if (reply_starts_with(r, "MOVED ") || reply_starts_with(r, "ASK ") || reply_starts_with(r, "TRYAGAIN"))
              alone.push_back(which[k]);
            else {
              replies[which[k]] = std::move(got[k]);
              if (acks) (*acks)[which[k]] = ack;
              some_ran = true;
            }
          }
        }
        for (size_t i : alone) {
          // Through the redirections, with its own WAIT on whichever node ran it.
          replies[i] = execute(slot_of(calls[i].keys), [&](Link& c, bool asking) {
            return run_script_on(c, script, calls[i], asking, durable, acks ? &(*acks)[i] : nullptr);
          });
          some_ran = true;
        }
        return std::move(replies);
      });
}

bool ClusterTransport::run_script_async(const scripts::Script& script, const ScriptCall& call, ScriptDone&& done) {
  if (!loaded_.load(std::memory_order_acquire)) return false;  // a caller waits for the first map
  ensure_map();                                                // loaded: at most asks for the periodic refresh
  NodePtr node = node_for_slot(slot_of(call.keys));
  // Unserved slot, unreachable node: the blocking path refreshes the map and retries.
  return node && submit_async_on(std::move(node), scripts_, script, call, options_.command_timeout_ms, std::move(done));
}

bool ClusterTransport::divert_async(const std::shared_ptr<AsyncCall>& c, Mux::Call& attempt) {
  if (attempt.error) {
    request_refresh();  // as execute(): the node may be gone; the call may have run, so no retry
    return false;
  }
  const Reply* r = attempt.replies.front().get();
  Redirect rd;
  if (parse_redirect(r, host_of(c->node->address), rd)) {
    redirects_.fetch_add(1, std::memory_order_relaxed);
    if (rd.moved) {
      NodePtr target = pools_.get(rd.address);
      {
        std::unique_lock<std::shared_mutex> lock(locks().map);
        slots_[static_cast<size_t>(rd.slot)] = target;
      }
      request_refresh(&rd.address);
    }
    finish_in_background(c);  // the call did not run: execute() follows the redirection
    return true;
  }
  if (reply_starts_with(r, "TRYAGAIN")) {
    finish_in_background(c);  // did not run either; execute() pauses and retries
    return true;
  }
  if (reply_starts_with(r, "CLUSTERDOWN")) request_refresh();
  return false;
}

std::string ClusterTransport::master_for(std::string_view key) {
  ensure_map();
  NodePtr node = node_for_slot(key_slot(key));
  return node ? node->address : std::string();
}

}  // namespace polylimit
