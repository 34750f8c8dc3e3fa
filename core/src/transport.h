// transport.h - where a command for a key runs.
//
// Standalone: one server, one pool. Other deployments (Cluster: the node that
// owns the key's slot; Sentinel: the current master) implement the same
// interface, so the algorithms never know which one they talk to.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "connection.h"
#include "pool.h"
#include "script_cache.h"

namespace polylimit {

// One script invocation; all its keys share one hash tag (one slot).
struct ScriptCall {
  Argv keys;
  Argv args;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Runs a script on the node that owns keys[0]; NOSCRIPT is recovered once.
  // Error replies are returned; I/O failures throw.
  virtual ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) = 0;

  // Runs many calls of one script, pipelined (one round trip per node);
  // replies in the order of `calls`.
  virtual std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls) = 0;

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
};

// One server (redis:// or unix://).
class StandaloneTransport : public Transport {
 public:
  StandaloneTransport(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls = nullptr)
      : pool_(std::move(endpoint), options, std::move(tls)) {}

  ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) override;
  std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls) override;
  ReplyPtr run_command(std::string_view key, const Argv& argv) override;
  long noscript_reloads() const override { return scripts_.reloads(); }
  void close() override { pool_.close(); }
  long evicting_nodes() override { return pool_.evicting() == 1 ? 1 : 0; }
  long connect_attempts() override { return pool_.connect_attempts(); }

  ConnectionPool& pool() { return pool_; }

 private:
  ConnectionPool pool_;
  ScriptCache scripts_;
};

// Runs `calls` pipelined on one connection; a NOSCRIPT reply (the script did
// not run) loads the script and re-runs those calls once. Shared by every
// transport once it has picked the connection.
std::vector<ReplyPtr> run_scripts_on(Connection& conn, ScriptCache& cache, const scripts::Script& script,
                                     const std::vector<ScriptCall>& calls);

}  // namespace polylimit
