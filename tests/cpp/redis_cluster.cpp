// redis_cluster.cpp - Redis Cluster and Sentinel deployments for tests.
#include "redis_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "polylimit/errors.h"
#include "transport/crc16.h"

namespace pltest {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) {
    if (!item.empty() && item.back() == '\r') item.pop_back();
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// One command against 127.0.0.1:port; the reply as text, "" when unreachable.
// Flat arrays are joined by '\n'.
std::string command_at(int port, const std::vector<std::string>& argv, const std::string& password = "") {
  polylimit::ReplyPtr r;
  try {
    r = raw_command(port, argv, 1000, password);
  } catch (const polylimit::Error&) {
    return "";
  }
  std::string out;
  if (r->type == polylimit::ReplyType::kArray) {
    for (size_t i = 0; i < r->elements; ++i) {
      if (i) out += "\n";
      const polylimit::Reply* e = r->element[i];
      if (e->type == polylimit::ReplyType::kInteger)
        out += std::to_string(e->integer);
      else if (e->str)
        out.append(e->str, e->len);
    }
  } else if (r->type == polylimit::ReplyType::kInteger) {
    out = std::to_string(r->integer);
  } else if (r->str) {
    out.assign(r->str, r->len);
  }
  return out;
}

}  // namespace

std::string info_field(const std::string& text, const std::string& field) {
  for (const std::string& line : split(text, '\n'))
    if (line.compare(0, field.size() + 1, field + ":") == 0) return line.substr(field.size() + 1);
  return "";
}

pid_t server_pid(const RedisServer& server) {
  return static_cast<pid_t>(std::stol(info_field(server.command({"INFO", "server"}), "process_id")));
}

// ---------------------------------------------------------------- cluster

RedisCluster::RedisCluster(int masters, int replicas, std::string password) : password_(std::move(password)) {
  std::vector<std::string> args = {"cluster", "--masters", std::to_string(masters), "--replicas",
                                   std::to_string(replicas)};
  if (!password_.empty()) args.insert(args.end(), {"--password", password_});
  start(std::move(args));
}

RedisCluster::RedisCluster(int masters, int replicas, const TlsFiles& tls) {
  // The launcher picks the TLS ports with the others, and picks again when a
  // node cannot bind one: a port chosen here could be taken by the time the
  // node binds it, with no second choice.
  start({"cluster", "--masters", std::to_string(masters), "--replicas", std::to_string(replicas), "--tls-cert-file",
         tls.cert, "--tls-key-file", tls.key, "--tls-ca-cert-file", tls.ca});
}

void RedisCluster::start(std::vector<std::string> args) {
  // tests/fixture/redisfix starts the nodes, forms the cluster and waits
  // until it is ready (the same conditions as wait_ready()).
  auto launcher = std::make_shared<Launcher>(args);
  const Json& d = launcher->description();
  for (size_t i = 0; i < d["nodes"].items.size(); ++i) {
    nodes_.push_back(std::unique_ptr<RedisServer>(new RedisServer(launcher, i)));
    alive_.push_back(true);
  }
}

RedisCluster::~RedisCluster() = default;

std::string RedisCluster::url() const {
  std::string out = "redis+cluster://";
  if (!password_.empty()) out += ":" + password_ + "@";
  for (size_t i = 0; i < nodes_.size(); ++i)
    out += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(nodes_[i]->port());
  return out;
}

std::string RedisCluster::node_id(size_t i) const {
  return command_at(nodes_[i]->port(), {"CLUSTER", "MYID"}, password_);
}

namespace {

struct NodeLine {
  std::string id;
  int port = 0;
  bool master = false, failed = false;
  std::string master_id;
  std::vector<std::pair<int, int>> slots;
};

std::vector<NodeLine> cluster_nodes(int port, const std::string& password) {
  std::vector<NodeLine> out;
  for (const std::string& line : split(command_at(port, {"CLUSTER", "NODES"}, password), '\n')) {
    std::vector<std::string> f = split(line, ' ');
    if (f.size() < 8) continue;
    NodeLine n;
    n.id = f[0];
    std::string addr = f[1].substr(0, f[1].find('@'));
    n.port = std::atoi(addr.substr(addr.rfind(':') + 1).c_str());
    n.master = f[2].find("master") != std::string::npos;
    n.failed = f[2].find("fail") != std::string::npos;
    n.master_id = f[3];
    for (size_t k = 8; k < f.size(); ++k) {
      if (f[k][0] == '[') continue;  // a migration in progress
      size_t dash = f[k].find('-');
      int lo = std::atoi(f[k].c_str());
      int hi = dash == std::string::npos ? lo : std::atoi(f[k].c_str() + dash + 1);
      n.slots.emplace_back(lo, hi);
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace

bool RedisCluster::ready(std::string& why) const {
  std::string reference;  // who serves what, as seen by the first live node
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!alive_[i]) continue;
    int port = nodes_[i]->port();
    std::string info = command_at(port, {"CLUSTER", "INFO"}, password_);
    if (info_field(info, "cluster_state") != "ok") {
      why = "node " + std::to_string(port) + " cluster_state=" + info_field(info, "cluster_state");
      return false;
    }
    std::map<int, std::string> owners;  // sorted: each node lists itself first
    for (const NodeLine& n : cluster_nodes(port, password_)) {
      if (n.master && !n.failed && !n.slots.empty()) {
        std::string& v = owners[n.port];
        for (auto& s : n.slots) v += std::to_string(s.first) + "-" + std::to_string(s.second) + ",";
      }
    }
    std::string view;
    for (auto& [p, v] : owners) view += std::to_string(p) + ":" + v + ";";
    if (reference.empty()) reference = view;
    if (view != reference) {
      why = "nodes disagree on the slot map";
      return false;
    }
    std::string repl = command_at(port, {"INFO", "replication"}, password_);
    if (info_field(repl, "role") == "slave" && info_field(repl, "master_link_status") != "up") {
      why = "replica " + std::to_string(port) + " not in sync";
      return false;
    }
  }
  return true;
}

void RedisCluster::wait_ready(std::chrono::milliseconds timeout) const {
  auto deadline = Clock::now() + timeout;
  std::string why;
  while (!ready(why)) {
    if (Clock::now() > deadline) throw std::runtime_error("cluster not ready: " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

size_t RedisCluster::find_master_of_slot(int slot) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!alive_[i]) continue;
    for (const NodeLine& n : cluster_nodes(nodes_[i]->port(), password_)) {
      if (!n.master || n.failed) continue;
      for (auto& s : n.slots)
        if (slot >= s.first && slot <= s.second)
          for (size_t k = 0; k < nodes_.size(); ++k)
            if (nodes_[k]->port() == n.port) return k;
    }
    break;
  }
  return nodes_.size();
}

size_t RedisCluster::master_of_slot(int slot) const {
  // While a failover completes, the node asked may for a moment know the old
  // master as a replica before it hears the new one claim the slot: ask
  // again for up to 5 s before saying that no master serves it.
  size_t master = nodes_.size();
  if (!pltest::wait_until([&] { return (master = find_master_of_slot(slot)) < nodes_.size(); },
                          std::chrono::seconds(5)))
    throw std::runtime_error("no master serves slot " + std::to_string(slot));
  return master;
}

size_t RedisCluster::master_of_key(const std::string& key) const { return master_of_slot(polylimit::key_slot(key)); }

std::vector<size_t> RedisCluster::masters() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (alive_[i] && info_field(command_at(nodes_[i]->port(), {"INFO", "replication"}, password_), "role") == "master")
      out.push_back(i);
  return out;
}

size_t RedisCluster::replica_of(size_t m) const {
  std::string id = node_id(m);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!alive_[i] || i == m) continue;
    for (const NodeLine& n : cluster_nodes(nodes_[i]->port(), password_))
      if (n.port == nodes_[i]->port() && !n.master && n.master_id == id) return i;
  }
  throw std::runtime_error("master has no live replica");
}

void RedisCluster::kill(size_t i) {
  ::kill(server_pid(*nodes_[i]), SIGKILL);
  alive_[i] = false;
}

// ---------------------------------------------------------------- sentinel

namespace {

SentinelOptions sentinel_options(std::string name, std::string data_password, std::string sentinel_password,
                                 bool for_failover) {
  SentinelOptions o;
  o.name = std::move(name);
  o.data_password = std::move(data_password);
  o.sentinel_password = std::move(sentinel_password);
  o.for_failover = for_failover;
  return o;
}

}  // namespace

RedisSentinels::RedisSentinels(std::string name, std::string data_password, std::string sentinel_password,
                               bool for_failover)
    : RedisSentinels(
          sentinel_options(std::move(name), std::move(data_password), std::move(sentinel_password), for_failover)) {}

RedisSentinels::RedisSentinels(const SentinelOptions& o)
    : name_(o.name),
      data_password_(o.data_password),
      sentinel_password_(o.sentinel_password),
      tls_(!o.tls_cert_file.empty()) {
  // tests/fixture/redisfix starts the master, the replicas (and waits until
  // they are in sync) and the sentinels, and waits until every sentinel names
  // the master and, unless --no-discovery, has heard from the master and the
  // replicas and knows its peers.
  std::vector<std::string> args = {"sentinel",
                                   "--name",
                                   name_,
                                   "--replicas",
                                   std::to_string(o.replicas),
                                   "--sentinels",
                                   std::to_string(o.sentinels)};
  if (!data_password_.empty()) args.insert(args.end(), {"--password", data_password_});
  if (!sentinel_password_.empty()) args.insert(args.end(), {"--sentinel-password", sentinel_password_});
  if (!o.for_failover) args.push_back("--no-discovery");
  if (tls_)
    args.insert(args.end(), {"--tls-cert-file", o.tls_cert_file, "--tls-key-file", o.tls_key_file, "--tls-ca-cert-file",
                             o.tls_ca_cert_file});
  launcher_ = std::make_shared<Launcher>(args);
  const Json& d = launcher_->description();
  for (size_t i = 0; i < d["nodes"].items.size(); ++i) {
    data_.push_back(std::unique_ptr<RedisServer>(new RedisServer(launcher_, i)));
    data_tls_ports_.push_back(d["nodes"][i]["tls_port"].integer());
  }
  for (const Json& s : d["sentinels"].items) {
    sentinel_ports_.push_back(s["port"].integer());
    sentinel_tls_ports_.push_back(s["tls_port"].integer());
  }
}

RedisSentinels::~RedisSentinels() = default;

std::string RedisSentinels::url() const {
  std::string out = tls_ ? "rediss+sentinel://" : "redis+sentinel://";
  const std::vector<int>& ports = tls_ ? sentinel_tls_ports_ : sentinel_ports_;
  for (size_t i = 0; i < ports.size(); ++i) out += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(ports[i]);
  return out + "/" + name_;
}

void RedisSentinels::stop_sentinel(size_t i) { launcher_->request("stop-sentinel " + std::to_string(i)); }

void RedisSentinels::start_sentinel(size_t i) { launcher_->request("start-sentinel " + std::to_string(i)); }

void RedisSentinels::sentinel_failover() {
  std::string r = command_at(sentinel_ports_[0], {"SENTINEL", "FAILOVER", name_}, sentinel_password_);
  if (r != "OK") throw std::runtime_error("SENTINEL FAILOVER: " + r);
}

void RedisSentinels::kill_master() { ::kill(server_pid(*data_[master_]), SIGKILL); }

void RedisSentinels::wait_promoted(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  int old_port = data_[master_]->port();
  int new_port = data_[1 - master_]->port();
  // The port the sentinels name it by: its TLS port with TLS.
  const int announced = tls_ ? data_tls_ports_[1 - master_] : new_port;
  for (;;) {
    bool all = true;
    for (int port : sentinel_ports_) {
      std::vector<std::string> addr =
          split(command_at(port, {"SENTINEL", "get-master-addr-by-name", name_}, sentinel_password_), '\n');
      if (addr.size() != 2 || std::atoi(addr[1].c_str()) != announced) all = false;
    }
    std::vector<std::string> role = split(command_at(new_port, {"ROLE"}, data_password_), '\n');
    if (all && !role.empty() && role.front() == "master") break;
    if (Clock::now() > deadline) throw std::runtime_error("no promotion away from port " + std::to_string(old_port));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  master_ = 1 - master_;
}

}  // namespace pltest
