// redis_server.h - a throwaway redis-server for tests, on a free loopback port
// in its own temporary directory; stopped and removed on destruction.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

struct redisReply;

namespace pltest {

class RedisServer {
 public:
  explicit RedisServer(std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
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

 private:
  void launch();
  std::vector<std::string> extra_args_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// The argv of a command that answers how many units a sliding-log ring holds
// (its `used` field; 0 when the key is missing):
//   server.integer(pltest::ring_units(key))
std::vector<std::string> ring_units(const std::string& key);

// A port nobody listens on right now.
int free_port();

// Starts argv[0] (looked up in PATH) with stdin from /dev/null and stdout and
// stderr to `log` (appended; empty: /dev/null). The child dies with the test
// process, and never holds the test's stdout open (ctest waits for that pipe
// to close). Returns the child's pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log = "");

}  // namespace pltest
