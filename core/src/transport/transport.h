// transport.h - where a command for a key runs.
//
// Standalone: one server, one pool. Other deployments (Cluster: the node that
// owns the key's slot; Sentinel: the current master) implement the same
// interface, so the algorithms never know which one they talk to.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "net/connection.h"
#include "net/pool.h"
#include "polylimit/backend.h"
#include "transport/script_cache.h"

namespace polylimit {

// Failover-safe mode: what the WAIT (or WAITAOF) sent right after script
// calls, on the same connection and in the same write, answered. It covers
// every write that connection made before it.
struct Ack {
  bool waited = false;   // a WAIT went out after the calls and answered
  int64_t local = 0;     // WAITAOF: 1 when fsynced to the master's AOF
  int64_t replicas = 0;  // replicas that acknowledged within the timeout
  std::string error;     // WAIT's error reply (ACL, WAITAOF unknown or without AOF, a replica)
};

// WAIT replicas timeout, or WAITAOF 1 replicas timeout; `storage` holds the
// numbers the Argv points into.
Argv wait_command(const Durability& durable, std::string (&storage)[2]);
// Reads a WAIT (integer) or WAITAOF ([local, replicas]) reply.
Ack read_ack(const Reply* reply);

class BackgroundRunner;
struct Node;

// The non-blocking path's result: a reply, or the error (never both).
using ScriptDone = std::function<void(ReplyPtr reply, std::exception_ptr error)>;

class Transport {
 public:
  virtual ~Transport();

  // Runs a script on the node that owns keys[0]; NOSCRIPT is recovered once.
  // Error replies are returned; I/O failures throw.
  virtual ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) = 0;

  // Runs many calls of one script, pipelined (one round trip per node);
  // replies in the order of `calls`. With `durable` on, each node's pipeline
  // ends with WAIT (or WAITAOF) in the same write, and acks[i] is what the
  // WAIT after calls[i] answered (WAIT cannot run inside a script).
  virtual std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                            const Durability& durable = {}, std::vector<Ack>* acks = nullptr) = 0;

  // Runs a plain command on the node that owns `key`.
  virtual ReplyPtr run_command(std::string_view key, const Argv& argv) = 0;

  // SCRIPT LOADs done after a NOSCRIPT reply, over all nodes.
  virtual long noscript_reloads() const = 0;

  // Releases the connections; later calls throw kClosed.
  virtual void close() = 0;

  // Nodes whose memory policy can evict limiter keys (ConnectionPool::evicting).
  virtual long evicting_nodes() = 0;
  // Connects tried to the data nodes (made or failed), this process only.
  virtual long connect_attempts() = 0;
  // The deadline of one command (or pipeline), which a WAIT must fit in.
  virtual int command_timeout_ms() const = 0;
  // One node holds every key (standalone, Sentinel's master): one script
  // call may carry keys of different slots. False on Cluster.
  virtual bool one_node() const { return false; }

  // run_script without waiting: queues the call and returns; `done` runs
  // once, later, on a library I/O thread or a thread driving the same
  // connection (mux.h). Throws (and `done` never runs) when the call cannot
  // be queued. False when this transport has no non-blocking path: then
  // nothing was done (see run_in_background), and `done` is still the
  // caller's (it is moved from only when the call was queued).
  virtual bool run_script_async(const scripts::Script& script, const ScriptCall& call, ScriptDone&& done) {
    (void)script, (void)call, (void)done;
    return false;
  }

  // run_command without waiting, as run_script_async (a command whose
  // repetition is harmless: a connection closed before anything was written
  // gets it once more). False when this transport has no non-blocking path.
  virtual bool run_command_async(std::string_view key, const Argv& argv, const ScriptDone& done) {
    (void)key, (void)argv, (void)done;
    return false;
  }

  // Runs `job` on one of at most kBackgroundThreads library threads of this
  // transport (started on first use): the non-blocking API's path where no
  // non-blocking transport exists yet (Cluster, Sentinel, durable checks).
  static constexpr int kBackgroundThreads = 4;
  void run_in_background(std::function<void()> job);
  // Jobs run_in_background was given (for tests: which path calls took).
  long background_jobs() const { return background_jobs_.load(std::memory_order_relaxed); }
  // Runs `job`, a blocking call made for a non-blocking caller (a lease
  // renewal), on threads of its own (at most kBackgroundThreads): such a job
  // may wait for a call that run_in_background's threads carry (a coalesced
  // batch on Cluster or Sentinel), so it must never take their place.
  void run_blocking_job(std::function<void()> job);

 protected:
  // One script call on the non-blocking path (transport.cpp), for every
  // transport: each attempt goes to `pool`; ScriptCache::Attempts says when
  // another goes (NOSCRIPT, a connection closed before anything was written).
  struct AsyncCall {
    AsyncCall(Transport& transport, ScriptCache& cache, const scripts::Script& script, const ScriptCall& call,
              int timeout_ms, ScriptDone done);
    Transport& transport;
    const scripts::Script& script;
    // The ScriptCall's views die when run_script_async returns: its keys and
    // arguments are copied into one buffer, which these views point into.
    std::string storage;
    Argv keys, args;
    ScriptCache::Attempts attempts;   // no SCRIPT LOAD: a callback must not wait for one
    Mux::Clock::time_point deadline;  // of every attempt: one per call
    ScriptDone done;
    std::shared_ptr<Node> node;  // Cluster, Sentinel: the node of `pool`, held while the call lasts
    ConnectionPool* pool = nullptr;
  };
  // Sends the next attempt of `call`. Only the first may throw to the
  // submitter (then call.done never runs); later ones report through done.
  void submit_async(const std::shared_ptr<AsyncCall>& call);
  // Cluster, Sentinel: the first attempt of a call on `node`. False when the
  // node cannot take it now (unreachable, backing off: nothing was queued),
  // for the blocking path, which tries elsewhere; other refusals throw.
  bool submit_async_on(std::shared_ptr<Node> node, ScriptCache& cache, const scripts::Script& script,
                       const ScriptCall& call, int timeout_ms, ScriptDone&& done);
  // Looks at an attempt's final result (a reply that is not NOSCRIPT, or an
  // error that allows no resend) before call.done gets it, on the thread
  // that completed it. True when it took the call over (a redirection, a
  // demoted master: it goes on elsewhere and reports through call.done).
  virtual bool divert_async(const std::shared_ptr<AsyncCall>& call, Mux::Call& attempt) {
    (void)call, (void)attempt;
    return false;
  }
  // Hands the call to a library thread that runs it with run_script, the
  // blocking path (which follows redirections and re-resolves masters), after
  // `first` (may be null). Safe from a completion: the job holds call.done,
  // and with it whoever keeps this transport alive.
  void finish_in_background(const std::shared_ptr<AsyncCall>& call, std::function<void()> first = nullptr);

 private:
  std::mutex background_mu_;
  std::shared_ptr<BackgroundRunner> background_;
  std::shared_ptr<BackgroundRunner> blocking_jobs_;  // run_blocking_job's
  std::atomic<long> background_jobs_{0};
};

// One server (redis:// or unix://).
class StandaloneTransport : public Transport {
 public:
  StandaloneTransport(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls = nullptr,
                      std::shared_ptr<const MonotonicClock> clock = nullptr)
      : pool_(std::move(endpoint), options, std::move(tls), std::move(clock)) {}

  ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) override;
  std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                    const Durability& durable = {}, std::vector<Ack>* acks = nullptr) override;
  ReplyPtr run_command(std::string_view key, const Argv& argv) override;
  long noscript_reloads() const override { return scripts_.reloads(); }
  void close() override { pool_.close(); }
  long evicting_nodes() override { return pool_.evicting() == 1 ? 1 : 0; }
  long connect_attempts() override { return pool_.connect_attempts(); }
  bool run_script_async(const scripts::Script& script, const ScriptCall& call, ScriptDone&& done) override;
  bool run_command_async(std::string_view key, const Argv& argv, const ScriptDone& done) override;
  int command_timeout_ms() const override { return pool_.options().command_timeout_ms; }
  bool one_node() const override { return true; }

  ConnectionPool& pool() { return pool_; }

 private:
  // One attempt of run_command_async; `resent`: the second and last.
  void send_command_async(std::shared_ptr<const std::vector<std::string>> words, Mux::Clock::time_point deadline,
                          bool resent, ScriptDone done);

  ConnectionPool pool_;
  ScriptCache scripts_;
};

// Runs `calls` pipelined on one connection through ScriptCache::run_all
// (NOSCRIPT recovery, outcome marking). Shared by every transport once it has
// picked the connection. With `durable` on, every pipeline it sends ends with
// WAIT / WAITAOF, and *ack gets the last one's answer (it covers the earlier
// pipelines too: same connection). `before` (ASKING) precedes each call.
std::vector<ReplyPtr> run_scripts_on(Link& conn, ScriptCache& cache, const scripts::Script& script,
                                     const std::vector<ScriptCall>& calls, const Durability& durable = {},
                                     Ack* ack = nullptr, const Argv& before = {});

}  // namespace polylimit
