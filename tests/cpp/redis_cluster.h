// redis_cluster.h - throwaway Redis Cluster and Sentinel deployments for tests,
// on free loopback ports, started by tests/fixture/redisfix; every process is
// stopped on destruction (and when the test process dies: the launcher stops
// at the end of its input).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "redis_server.h"

namespace pltest {

class RedisCluster {
 public:
  // Starts masters * (1 + replicas) nodes (masters >= 3), forms the cluster with
  // redis-cli --cluster create, and waits until every node reports
  // cluster_state:ok and every replica is in sync. With a password, every
  // node requires it (requirepass, masterauth).
  explicit RedisCluster(int masters = 3, int replicas = 1, std::string password = "");
  // The same with TLS: every node also listens on a TLS port the launcher
  // picks (node(i).tls_port()); the cluster bus and what CLUSTER SLOTS tells
  // a TLS client use those. url() and command() stay plain.
  RedisCluster(int masters, int replicas, const TlsFiles& tls);
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  size_t size() const { return nodes_.size(); }
  RedisServer& node(size_t i) { return *nodes_[i]; }
  // redis+cluster:// with every node as a seed (and the password, if any).
  std::string url() const;
  std::string node_id(size_t i) const;
  bool alive(size_t i) const { return alive_[i]; }

  // The node that serves `slot` as master, by the view of a live node.
  size_t master_of_slot(int slot) const;
  size_t master_of_key(const std::string& key) const;
  // Live masters, in node order.
  std::vector<size_t> masters() const;
  // The replica of master `m`.
  size_t replica_of(size_t m) const;

  // SIGKILL: no goodbye to the cluster bus, like a crashed host.
  void kill(size_t i);
  // Polls (never a blind sleep) until every live node says cluster_state:ok,
  // all agree on who serves each slot, and replicas are in sync; throws after
  // `timeout`.
  void wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

  // Runs a command on node i (see RedisServer::command; no password).
  std::string command(size_t i, const std::vector<std::string>& argv) const { return nodes_[i]->command(argv); }

 private:
  void start(std::vector<std::string> args);
  bool ready(std::string& why) const;
  // master_of_slot's one look: the master by the first live node's view, or
  // nodes_.size() when that view has none.
  size_t find_master_of_slot(int slot) const;
  std::string password_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<bool> alive_;
};

// What RedisSentinels starts (redisfix sentinel's options).
struct SentinelOptions {
  std::string name = "rlmaster";
  std::string data_password;      // the data nodes require it
  std::string sentinel_password;  // the sentinels require it
  // Unless false, the constructor waits until every sentinel has heard from
  // the master and the replicas and knows its peers.
  bool for_failover = true;
  int replicas = 1;
  int sentinels = 3;
  // TLS (all three files, or none): every data node and sentinel also
  // listens on a TLS port; replication, Sentinel's links and what it
  // announces use those, url() is rediss+sentinel://. Plain ports stay, for
  // the tests' own commands (RedisServer::command).
  std::string tls_cert_file, tls_key_file, tls_ca_cert_file;
};

// One master, its replicas (one by default) and sentinels (three) watching
// them as `name`. Optionally the data nodes require `data_password` and the
// sentinels `sentinel_password`. Unless `for_failover` is false, the
// constructor waits until every sentinel has heard from the master and the
// replica and knows its two peers.
class RedisSentinels {
 public:
  explicit RedisSentinels(std::string name = "rlmaster", std::string data_password = "",
                          std::string sentinel_password = "", bool for_failover = true);
  explicit RedisSentinels(const SentinelOptions& options);
  ~RedisSentinels();
  // redis+sentinel://s1,s2,s3/name, without credentials (rediss+sentinel://
  // and the sentinels' TLS ports with TLS).
  std::string url() const;
  const std::string& name() const { return name_; }
  RedisServer& master() { return *data_[master_]; }
  RedisServer& replica() { return *data_[1 - master_]; }  // with one replica
  // SIGKILLs the master; the replica is then expected to be promoted.
  void kill_master();
  // SENTINEL FAILOVER: the replica is promoted, the master demoted to replica.
  void sentinel_failover();
  // Polls until the sentinels name a live master other than the killed one
  // and it answers ROLE as master. Throws after `timeout`.
  void wait_promoted(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  size_t sentinels() const { return sentinel_ports_.size(); }
  int sentinel_port(size_t i) const { return sentinel_ports_[i]; }
  int sentinel_tls_port(size_t i) const { return sentinel_tls_ports_[i]; }  // 0 without TLS
  // Sentinel i stopped (SIGTERM), or started again on its ports with its
  // configuration file (what it learned included); starting one that runs
  // does nothing, one that was killed is reaped first. start_sentinel waits
  // until it answers PING.
  void stop_sentinel(size_t i);
  void start_sentinel(size_t i);

 private:
  std::string name_;
  std::string data_password_, sentinel_password_;
  bool tls_ = false;
  std::shared_ptr<Launcher> launcher_;  // tests/fixture/redisfix sentinel
  std::vector<std::unique_ptr<RedisServer>> data_;
  std::vector<int> data_tls_ports_;  // of data_, 0 without TLS
  size_t master_ = 0;
  std::vector<int> sentinel_ports_, sentinel_tls_ports_;
};

// SIGKILLs a redis-server found through INFO (its pid).
pid_t server_pid(const RedisServer& server);
// Text of a field ("cluster_state") in INFO-style "k:v\r\n" text.
std::string info_field(const std::string& text, const std::string& field);

}  // namespace pltest
