// redis_server.h - a throwaway redis-server for tests, on a free loopback port
// in its own temporary directory; stopped and removed on destruction. Started
// by tests/fixture/redisfix, the launcher every language's fixtures share.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/reply.h"

namespace polylimit {
class Connection;
}

namespace pltest {

// A parsed JSON value (what redisfix prints): just enough for its output.
struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
  const Json& operator[](const std::string& k) const;
  const Json& operator[](size_t i) const { return items.at(i); }
  int integer() const { return static_cast<int>(number); }
  static Json parse(const std::string& text);
};

// One running tests/fixture/redisfix (its path: $POLYLIMIT_REDISFIX, else the
// source tree's, compiled in). It is started with `args` (e.g. {"cluster",
// "--masters", "3"}), and stops its deployment when destroyed, or when this
// process dies (it reads our end of a pipe and stops at end of input).
class Launcher {
 public:
  explicit Launcher(const std::vector<std::string>& args);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;
  const Json& description() const { return description_; }
  // One command line ("stop-node 2"); throws on {"error": ...}.
  Json request(const std::string& line);

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  FILE* from_ = nullptr;
  Json description_;
};

// A deployment's TLS files: its servers' certificate and key, and the CA.
struct TlsFiles {
  std::string cert, key, ca;
};

class RedisServer {
 public:
  explicit RedisServer(std::vector<std::string> extra_args = {});
  // With a TLS port besides the plain one, picked by the launcher (which
  // picks again when the server cannot bind it); clients are not asked for
  // certificates unless `extra_args` say so ("--tls-auth-clients", "yes").
  RedisServer(std::vector<std::string> extra_args, const TlsFiles& tls);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  int tls_port() const { return tls_port_; }  // 0 without TLS
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // Stops the server (SIGTERM, wait). start() brings it back on the same port.
  void stop();
  void start();
  void pause();   // SIGSTOP: the server accepts nothing and answers nothing
  void resume();  // SIGCONT

  // Runs one command on a fresh connection; returns the reply as text
  // (integers in decimal, arrays joined by '\n', errors as "ERR ...").
  std::string command(const std::vector<std::string>& argv) const;
  long long integer(const std::vector<std::string>& argv) const;
  // CPU seconds (user + system) the server has used so far (INFO cpu).
  double cpu_seconds() const;

 private:
  friend class RedisCluster;
  friend class RedisSentinels;
  // Node `index` of a deployment that `launcher` runs.
  RedisServer(std::shared_ptr<Launcher> launcher, size_t index);
  std::shared_ptr<Launcher> launcher_;
  size_t index_ = 0;
  int port_ = 0;
  int tls_port_ = 0;
  pid_t pid_ = -1;
};

// The argv of a command that answers how many units a sliding-log ring holds
// (its `used` field; 0 when the key is missing):
//   server.integer(pltest::ring_units(key))
std::vector<std::string> ring_units(const std::string& key);

// A port nobody listens on right now.
int free_port();

// One command on a fresh connection of the core's own (net/connection.h) to
// 127.0.0.1:port: `timeout_ms` to connect, and again for the reply. With a
// `password`, AUTH goes first and its reply is ignored. Error replies are
// returned; an unreachable server or a timeout throws polylimit::Error.
polylimit::ReplyPtr raw_command(int port, const std::vector<std::string>& argv, int timeout_ms,
                                const std::string& password = "");

// A connection of the core's own that reads what the server pushes
// (SUBSCRIBE, MONITOR): it sends `argv` and hands out every reply in turn,
// the command's own reply first. Bytes that arrive with that reply are kept
// for the next call, not taken for a stray reply.
class PushReader {
 public:
  PushReader(int port, const std::vector<std::string>& argv);
  ~PushReader();
  PushReader(const PushReader&) = delete;
  PushReader& operator=(const PushReader&) = delete;
  // The next reply, or null when none is complete within `wait`. Throws
  // polylimit::Error when the connection fails.
  polylimit::ReplyPtr next(std::chrono::milliseconds wait);

 private:
  std::unique_ptr<polylimit::Connection> conn_;
};

// Polls `condition` (every 5 ms) until it holds: true, or false once
// `timeout` has passed. For tests to wait for a state, never to sleep on a guess.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// How many normal (non-replica, non-pubsub) clients `server` has connected,
// the connection asking included.
int normal_clients(const RedisServer& server);

// Starts argv[0] (looked up in PATH) with stdin from /dev/null and stdout and
// stderr to `log` (appended; empty: /dev/null). The child dies with the test
// process, and never holds the test's stdout open (ctest waits for that pipe
// to close). Returns the child's pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log = "");

}  // namespace pltest
