// node_pools.cpp - one ConnectionPool per data node, shared by the transports.
#include "transport/node_pools.h"

#include <mutex>

namespace polylimit {

NodePools::NodePools(const Endpoint& deployment, PoolOptions options, std::shared_ptr<const TlsContext> tls,
                     std::shared_ptr<const MonotonicClock> clock)
    : options_(options), tls_(std::move(tls)), clock_(std::move(clock)) {
  base_.kind = Endpoint::Kind::kTcp;
  base_.user = deployment.user;
  base_.password = deployment.password;
  base_.db = deployment.db;  // always 0 for a cluster (parse_url)
  base_.tls = deployment.tls;
}

NodePtr NodePools::find(const std::string& key) {
  std::shared_lock<std::shared_mutex> lock(mu());
  auto it = nodes_.find(key);
  return it != nodes_.end() ? it->second : nullptr;
}

Endpoint NodePools::endpoint(const HostPort& address) const {
  Endpoint ep = base_;
  ep.host = address.host;
  ep.port = address.port;
  return ep;
}

NodePtr NodePools::create(const HostPort& address) {
  auto node = std::make_shared<Node>(endpoint(address), options_, tls_, clock_);
  if (closed_.load()) node->pool.close();
  return node;
}

NodePtr NodePools::make(const HostPort& address) {
  NodePtr node = find(address.describe());
  return node ? node : create(address);
}

NodePtr NodePools::get(const HostPort& address) {
  const std::string key = address.describe();
  if (NodePtr node = find(key)) return node;
  std::unique_lock<std::shared_mutex> lock(mu());
  NodePtr& node = nodes_[key];
  if (!node) node = create(address);
  return node;
}

void NodePools::replace(const std::vector<NodePtr>& nodes) {
  std::map<std::string, NodePtr> next;
  for (const NodePtr& node : nodes) next.emplace(node->address, node);
  std::unique_lock<std::shared_mutex> lock(mu());
  nodes_.swap(next);
  // The nodes left out go when `next` does, outside the lock: a pool closes
  // (joining its I/O threads) once its last holder lets go.
  lock.unlock();
}

long NodePools::evicting() {
  std::shared_lock<std::shared_mutex> lock(mu());
  long n = 0;
  for (auto& entry : nodes_) n += entry.second->pool.evicting() == 1 ? 1 : 0;
  return n;
}

long NodePools::connect_attempts() {
  std::shared_lock<std::shared_mutex> lock(mu());
  long n = 0;
  for (auto& entry : nodes_) n += entry.second->pool.connect_attempts();
  return n;
}

void NodePools::close() {
  closed_.store(true);
  std::shared_lock<std::shared_mutex> lock(mu());
  for (auto& entry : nodes_) entry.second->pool.close();
}

}  // namespace polylimit
