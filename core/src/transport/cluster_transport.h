// cluster_transport.h - Redis Cluster: each key goes to the master of its slot.
//
// The slot map comes from CLUSTER SLOTS, asked of any reachable node (the
// seeds from the URL, then every node seen in an earlier map). Each master has
// its own ConnectionPool (NodePools). MOVED updates the slot at once and asks
// for a refresh of the whole map (other slots have probably moved too); ASK sends
// ASKING plus the command to the importing node, once. A command is retried
// on another node only when it was certainly not executed (the connection
// could not be made, or the reply was a redirection); after a timeout on a
// sent script nothing is retried, since it may have run.
//
// Refreshes are single-flight and rate-limited (kMinRefreshInterval), so a
// dead node seen by many threads at once costs one CLUSTER SLOTS, not one per
// thread; the map is also refreshed every kPeriodicRefresh while in use. A
// caller that needs the map to go on (no owner for its slot, its node
// refused the connection) refreshes it itself; every other refresh (after a
// MOVED, a failed command, CLUSTERDOWN, the periodic one) runs on a refresher
// thread, so callers never wait on CLUSTER SLOTS: a request made within
// kMinRefreshInterval of the last refresh is served when that interval ends,
// never dropped. The thread starts on the first request (one per process: a
// forked child starts its own) and is stopped by close() and the destructor.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>

#include <sys/types.h>
#include <vector>

#include "transport/node_pools.h"
#include "transport/transport.h"
#include "util/per_process.h"

namespace polylimit {

class ClusterTransport : public Transport {
 public:
  // Redirections (MOVED/ASK/TRYAGAIN) are followed until the call's deadline
  // (command_timeout_ms after it started). From the second on the call
  // pauses (jittered, 1 ms doubling to 32 ms) so that a slot whose owners
  // briefly point at each other during a handover settles. kMaxRedirects is
  // only a backstop: with the pauses, 100 redirections take at least ~1.5 s,
  // so with command_timeout_ms up to that the deadline is what ends a call,
  // and a handover that completes within it costs no error.
  static constexpr int kMaxRedirects = 100;
  static constexpr int kMaxConnectRetries = 3;
  static constexpr std::chrono::milliseconds kMinRefreshInterval{100};
  static constexpr std::chrono::milliseconds kPeriodicRefresh{10000};

  // `endpoint` is a kCluster endpoint: seeds plus the credentials of every
  // node. Nothing is connected until the first command. With endpoint.tls
  // every node (seeds and the nodes CLUSTER SLOTS names) is reached over TLS
  // with `tls`.
  // `clock`: of the pools' reconnect backoff (null: the real clock).
  ClusterTransport(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls = nullptr,
                   std::shared_ptr<const MonotonicClock> clock = nullptr);

  ClusterTransport(const ClusterTransport&) = delete;
  ClusterTransport& operator=(const ClusterTransport&) = delete;
  ~ClusterTransport() override;

  ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) override;
  std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                    const Durability& durable = {}, std::vector<Ack>* acks = nullptr) override;
  ReplyPtr run_command(std::string_view key, const Argv& argv) override;
  int command_timeout_ms() const override { return options_.command_timeout_ms; }
  long noscript_reloads() const override { return scripts_.reloads(); }
  void close() override;
  long evicting_nodes() override;
  long connect_attempts() override;
  // Once the map is loaded: on the node of the call's slot, without a
  // thread. A redirection hands the call to the blocking path (execute) on a
  // library thread, under the deadline it was submitted with
  // (call_deadline.h); so do the first map load and a node that cannot be
  // reached (nothing was queued: run_in_background).
  bool run_script_async(const scripts::Script& script, const ScriptCall& call, ScriptDone&& done) override;

  // host:port of the master that owns `key` in the current map (loads it).
  std::string master_for(std::string_view key);
  long refreshes() const { return refreshes_.load(); }
  // Of those, the ones the refresher thread ran.
  long background_refreshes() const { return background_refreshes_.load(); }
  long redirects() const { return redirects_.load(); }

 private:
  // Runs one command on a connection; `asking` means ASKING must precede it.
  using RunFn = std::function<ReplyPtr(Link&, bool asking)>;

  ReplyPtr execute(int slot, const RunFn& run);
  bool divert_async(const std::shared_ptr<AsyncCall>& call, Mux::Call& attempt) override;
  int slot_of(const Argv& keys) const;
  NodePtr node_for_slot(int slot);
  void ensure_map();
  // Reloads the slot map unless one was loaded less than kMinRefreshInterval
  // ago; `wait`: wait for a refresh another thread is running.
  void refresh(bool wait);
  // Asks the refresher thread for a refresh (`first`: the node to ask first,
  // e.g. the one a MOVED named) and returns at once.
  void request_refresh(const HostPort* first = nullptr);
  void refresher_loop();
  void stop_refresher();
  // locks().refresh held; throws when no node answers. `first`: asked first.
  void load_map(const HostPort* first = nullptr);
  // One script call on `conn` (run_scripts_on), ASKING first when `asking`.
  ReplyPtr run_script_on(Link& conn, const scripts::Script& script, const ScriptCall& call, bool asking,
                         const Durability& durable = {}, Ack* ack = nullptr);

  const Endpoint endpoint_;
  const PoolOptions options_;
  const std::shared_ptr<const TlsContext> tls_;
  ScriptCache scripts_;  // stateless apart from counters: one for all nodes

  // The locks live apart so that a forked child can start with fresh ones: a
  // parent thread may hold them at the time of fork().
  struct Locks {
    std::shared_mutex map;  // guards slots_, known_
    std::mutex refresh;     // single flight
    std::mutex refresher;   // guards what follows
    std::condition_variable wake;
    bool stop = false;
    std::optional<HostPort> first;  // for the next background refresh
    int64_t requested_ns = 0;       // steady clock, the last request
    std::thread thread;
    std::atomic<bool> pending{false};   // asked for; read without the lock first
    std::atomic<bool> stopping{false};  // ends a load_map() in progress early
  };
  Locks& locks() { return locks_.get(); }
  PerProcess<Locks> locks_;

  NodePools pools_;              // the masters of the map, by host:port
  std::vector<NodePtr> slots_;   // kClusterSlots entries; null: unserved
  std::vector<HostPort> known_;  // every node of the last map, masters first

  std::atomic<bool> loaded_{false};
  std::atomic<int64_t> last_refresh_ns_{0};  // steady clock, last attempt
  std::atomic<long> refreshes_{0};
  std::atomic<long> background_refreshes_{0};
  std::atomic<long> redirects_{0};
};

}  // namespace polylimit
