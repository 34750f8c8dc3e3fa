// sentinel_transport.h - Redis Sentinel: commands go to the current master.
//
// The master's address comes from the sentinels (SENTINEL
// get-master-addr-by-name, asked in URL order until one answers) and is
// verified with ROLE before use. On a connection failure or a READONLY reply
// (the old master came back as a replica) the master is resolved again -
// single-flight and at most once per kMinResolveInterval - and the command is
// retried once, only when it certainly did not run: the connection could not
// be made, or the reply was READONLY. NOSCRIPT on a promoted replica is
// recovered by the ScriptCache. After a failure on a sent command (timeout,
// reset) nothing is retried: the script may have run. While in use, the
// master is also re-resolved every kRecheckInterval by one caller thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <sys/types.h>

#include "per_process.h"
#include "transport.h"

namespace polylimit {

class SentinelTransport : public Transport {
 public:
  static constexpr std::chrono::milliseconds kMinResolveInterval{100};
  // While in use, the sentinels are asked again this often, so that a
  // promotion is followed even while the old master still accepts writes
  // (Sentinel demotes a reachable old master only seconds later).
  static constexpr std::chrono::milliseconds kRecheckInterval{1000};

  // `endpoint` is a kSentinel endpoint. Nothing is connected until the first
  // command. With endpoint.tls the sentinels and the data nodes they name are
  // all reached over TLS with `tls`.
  SentinelTransport(Endpoint endpoint, PoolOptions options, std::shared_ptr<const TlsContext> tls = nullptr);

  SentinelTransport(const SentinelTransport&) = delete;
  SentinelTransport& operator=(const SentinelTransport&) = delete;

  ReplyPtr run_script(const scripts::Script& script, const Argv& keys, const Argv& args) override;
  std::vector<ReplyPtr> run_scripts(const scripts::Script& script, const std::vector<ScriptCall>& calls) override;
  ReplyPtr run_command(std::string_view key, const Argv& argv) override;
  long noscript_reloads() const override { return scripts_.reloads(); }
  void close() override;
  long evicting_nodes() override;
  long connect_attempts() override;

  // host:port of the master in use (resolves it first if needed).
  std::string master_address();
  long resolutions() const { return resolutions_.load(); }
  long readonly_replies() const { return readonly_replies_.load(); }

 private:
  struct Master {
    Master(const Endpoint& ep, const PoolOptions& options, std::shared_ptr<const TlsContext> tls)
        : address(ep.describe()), pool(ep, options, std::move(tls)) {}
    std::string address;
    ConnectionPool pool;
  };
  using MasterPtr = std::shared_ptr<Master>;

  MasterPtr current();
  // Resolves again unless that was done less than kMinResolveInterval ago;
  // returns the master in use afterwards (unchanged when resolution fails).
  MasterPtr re_resolve();
  void recheck();  // periodic re_resolve by whichever thread gets there first
  MasterPtr resolve(const MasterPtr& previous);  // locks().resolve held; throws
  template <class R>
  R execute(const std::function<R(Connection&)>& run, const std::function<bool(const R&)>& readonly);

  const Endpoint endpoint_;
  const PoolOptions options_;
  const std::shared_ptr<const TlsContext> tls_;
  ScriptCache scripts_;
  // Apart, so that a forked child starts with fresh locks (see ClusterTransport).
  struct Locks {
    std::mutex master;   // guards master_
    std::mutex resolve;  // single flight
  };
  Locks& locks() { return locks_.get(); }
  PerProcess<Locks> locks_;
  MasterPtr master_;
  std::atomic<int64_t> last_resolve_ns_{0};
  std::atomic<long> resolutions_{0};
  std::atomic<long> readonly_replies_{0};
};

}  // namespace polylimit
