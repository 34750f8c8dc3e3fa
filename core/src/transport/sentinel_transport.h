// sentinel_transport.h - Redis Sentinel: commands go to the current master.
//
// The master's address comes from the sentinels (SENTINEL
// get-master-addr-by-name), asked all at once, each on its own short-lived
// thread, under ONE deadline per resolution (connect_timeout_ms +
// command_timeout_ms, a fresh connect each time): the first answer naming a
// node that ROLE confirms as master wins, so hung sentinels cost nothing while
// one healthy sentinel answers, and a resolution never takes more than that
// deadline however many hang. A sentinel still busy with an earlier request
// is not asked again (it counts as not answering), so hung sentinels cannot
// pile up threads.
//
// A caller resolves synchronously only when no master is known yet (first
// use) or when its command failed on the master: on a connection failure or a
// READONLY reply (the old master came back as a replica) the master is
// resolved again - single-flight and at most once per kMinResolveInterval -
// and the command is retried once, only when it certainly did not run: the
// connection could not be made, or the reply was READONLY. NOSCRIPT on a
// promoted replica is recovered by the ScriptCache. After a failure on a sent
// command (timeout, reset) nothing is retried: the script may have run.
//
// Off the callers' threads, follower threads (started on first use, one set
// per process: a forked child starts its own on its first call and never
// touches the parent's; stopped and joined by close() and the destructor):
// one per sentinel keeps a connection SUBSCRIBEd to +switch-master (and
// -failover-abort-no-good-slave: resolve again) on it, reconnecting with a
// jittered backoff, and moves to the announced master as soon as the message
// arrives, and one resolves the master again every
// kRecheckInterval as a safety net (also after each (re)subscription).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "transport/node_pools.h"
#include "transport/transport.h"
#include "util/per_process.h"

namespace polylimit {

class SentinelTransport : public Transport {
 public:
  static constexpr std::chrono::milliseconds kMinResolveInterval{100};
  // While in use, the follower asks the sentinels again this often (a safety
  // net for a missed +switch-master: Sentinel demotes a reachable old master
  // only seconds later).
  static constexpr std::chrono::milliseconds kRecheckInterval{1000};
  // Between two subscription attempts after failures: doubling from the
  // first to the last, jittered.
  static constexpr std::chrono::milliseconds kSubscribeBackoffMin{50};
  static constexpr std::chrono::milliseconds kSubscribeBackoffMax{2000};

  // `endpoint` is a kSentinel endpoint. Nothing is connected until the first
  // command. With endpoint.tls the sentinels and the data nodes they name are
  // all reached over TLS with `tls`.
  // `clock`: of the master pool's reconnect backoff (null: the real clock).
  SentinelTransport(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls = nullptr,
                    std::shared_ptr<const MonotonicClock> clock = nullptr);

  SentinelTransport(const SentinelTransport&) = delete;
  SentinelTransport& operator=(const SentinelTransport&) = delete;
  ~SentinelTransport() override;

  ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) override;
  std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                    const Durability& durable = {}, std::vector<Ack>* acks = nullptr) override;
  ReplyPtr run_command(std::string_view key, const Argv& argv) override;
  long noscript_reloads() const override { return scripts_.reloads(); }
  void close() override;
  long evicting_nodes() override;
  long connect_attempts() override;
  int command_timeout_ms() const override { return options_.command_timeout_ms; }
  bool one_node() const override { return true; }
  // Once a master is known: on its pool, without a thread. A READONLY reply
  // (a demoted master) or a failed send re-resolves on a library thread, as
  // execute() does; so does the first resolution (run_in_background).
  bool run_script_async(const scripts::Script& script, const ScriptCall& call, ScriptDone&& done) override;

  // host:port of the master in use (resolves it first if needed).
  std::string master_address();
  long resolutions() const { return resolutions_.load(); }
  long readonly_replies() const { return readonly_replies_.load(); }
  // +switch-master messages for our master that moved the client.
  long switch_messages() const { return switch_messages_.load(); }
  // Subscriptions to sentinels held now (for tests).
  int subscriptions() const { return subscriptions_.load(); }

 private:
  using MasterPtr = NodePtr;

  // One sentinel's answer (or failure) to get-master-addr-by-name.
 public:
  struct Answer {
    enum class Kind { kAddress, kNil, kErrorReply, kFailed } kind = Kind::kFailed;
    size_t sentinel = 0;
    std::string host, text;  // text: the error reply or the failure
    int port = 0;
    ErrorCode code = ErrorCode::kUnavailable;
    bool tls_failure = false;
  };

 private:
  struct Query;  // the answers of one resolution, shared with its probes
  struct Probe {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  MasterPtr current();
  bool divert_async(const std::shared_ptr<AsyncCall>& call, Mux::Call& attempt) override;
  // The master in use (null before the first resolution), and its change:
  // pools_ then holds that one node.
  MasterPtr master();
  void use(MasterPtr m);
  // Resolves again unless that was done less than kMinResolveInterval ago;
  // returns the master in use afterwards (unchanged when resolution fails).
  MasterPtr re_resolve();
  MasterPtr resolve(const MasterPtr& previous);  // locks().resolve held; throws
  // The node at host:port (`previous` when it is the same address), or null
  // when ROLE says it is not a master; throws kAuth/kPermission, appends
  // other failures to `failures`.
  MasterPtr confirm(const MasterPtr& previous, const std::string& host, int port, const std::string& where,
                    std::string& failures);
  void launch_probe(size_t i, const std::shared_ptr<Query>& q);
  Endpoint sentinel_endpoint(size_t i) const;

  // The followers: one thread re-checks every kRecheckInterval, one per
  // sentinel keeps a subscription to it.
  void ensure_follower();
  void recheck_loop();
  void subscribe_loop(size_t i);
  // Waits up to `wait` for stop_threads(); true when it was called.
  bool stopping(std::chrono::milliseconds wait);
  // Resolves unless someone is at it or did it less than min_age ago.
  void background_resolve(std::chrono::milliseconds min_age);
  void on_message(const Reply* m);
  std::unique_ptr<Connection> subscribe(size_t i);
  void stop_threads();

  template <class R>
  R execute(const std::function<R(Link&)>& run, const std::function<bool(const R&)>& readonly);

  const Endpoint endpoint_;
  const PoolOptions options_;
  const std::shared_ptr<const TlsContext> tls_;
  ScriptCache scripts_;
  NodePools pools_;  // the master in use
  // Apart, so that a forked child starts with fresh locks and threads of its
  // own (see ClusterTransport): the parent's follower does not exist there.
  struct Locks {
    std::mutex master;   // guards master_
    std::mutex resolve;  // single flight
    std::mutex threads;  // guards what follows
    std::condition_variable wake;
    bool stop = false;
    std::atomic<bool> started{false};  // read without the lock on every call
    std::vector<std::thread> followers;
    std::vector<Probe> probes;
    // Per sentinel, shared with its probe: a request still waiting for it.
    std::vector<std::shared_ptr<std::atomic<bool>>> busy;
  };
  Locks& locks() { return locks_.get(); }
  PerProcess<Locks> locks_;
  // Per sentinel: consecutive failures (for healthy-first choices).
  std::unique_ptr<std::atomic<int>[]> failures_;
  std::atomic<bool> closed_{false};
  std::atomic<int> subscriptions_{0};
  std::atomic<long> switch_messages_{0};
  MasterPtr master_;
  std::atomic<int64_t> last_resolve_ns_{0};
  std::atomic<long> resolutions_{0};
  std::atomic<long> readonly_replies_{0};
};

}  // namespace polylimit
