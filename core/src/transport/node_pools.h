// node_pools.h - the connection pools of a deployment's data nodes.
//
// Cluster (the master of each slot range) and Sentinel (the current master)
// route to nodes kept here: one ConnectionPool per host:port, all made with
// the deployment's credentials, TLS context and clock. The set is what the
// transport routes to now; eviction and connect figures and close() cover it.
// A node dropped from the set stays usable by whoever still holds it: its
// pool closes when the last holder lets go. The lock is per process (see
// PerProcess): a parent thread may hold it at the time of fork().
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "net/pool.h"
#include "util/clock.h"
#include "util/per_process.h"

namespace polylimit {

struct Node {
  Node(const Endpoint& ep, const PoolOptions& options, std::shared_ptr<const TlsContext> tls,
       std::shared_ptr<const MonotonicClock> clock)
      : address(ep.describe()), pool(ep, options, std::move(tls), std::move(clock)) {}
  std::string address;  // host:port
  ConnectionPool pool;
};
using NodePtr = std::shared_ptr<Node>;

class NodePools {
 public:
  // `deployment`: the Cluster or Sentinel endpoint, whose user, password, db
  // and TLS every node shares (host and port come with each node).
  NodePools(const Endpoint& deployment, PoolOptions options, std::shared_ptr<const TlsContext> tls,
            std::shared_ptr<const MonotonicClock> clock);
  NodePools(const NodePools&) = delete;
  NodePools& operator=(const NodePools&) = delete;

  // The endpoint of the node at `address`.
  Endpoint endpoint(const HostPort& address) const;
  // The node at `address` when it is in the set, else a new one that is not
  // (for a caller that checks it first, or builds the next set).
  NodePtr make(const HostPort& address);
  // The node at `address`, added to the set when missing.
  NodePtr get(const HostPort& address);
  // Makes `nodes` the set.
  void replace(const std::vector<NodePtr>& nodes);

  // Nodes of the set whose memory policy can evict limiter keys.
  long evicting();
  // Connects tried to the nodes of the set (made or failed), this process only.
  long connect_attempts();
  // Closes every pool of the set; nodes made afterwards start closed, so
  // nothing connects again.
  void close();

 private:
  NodePtr find(const std::string& key);
  NodePtr create(const HostPort& address);
  std::shared_mutex& mu() { return mu_.get(); }

  Endpoint base_;  // a node's endpoint but for host and port
  const PoolOptions options_;
  const std::shared_ptr<const TlsContext> tls_;
  const std::shared_ptr<const MonotonicClock> clock_;
  PerProcess<std::shared_mutex> mu_;      // guards nodes_
  std::map<std::string, NodePtr> nodes_;  // by HostPort::describe()
  std::atomic<bool> closed_{false};
};

}  // namespace polylimit
