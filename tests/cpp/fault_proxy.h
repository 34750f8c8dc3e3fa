// fault_proxy.h - loopback fault injection for transport tests: a TCP proxy
// in front of a real redis-server that delays, trickles, drops or adds to
// what the server sends, and a fake server that answers every read with
// fixed bytes.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pltest {

class FaultProxy {
 public:
  enum class Mode {
    kPass,       // forward both ways
    kTrickle,    // server -> client one byte every `interval_ms`
    kBlackhole,  // accept, forward nothing either way
    kExtra,      // after every `interval_ms`-th chunk from the server, send `extra` too
  };
  explicit FaultProxy(int upstream_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  void set(Mode mode, int interval_ms = 150, std::string extra = "");

 private:
  void accept_loop();
  void pump(int from, int to, bool from_server);

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;  // guards mode_, interval_ms_, extra_, fds_, threads_
  Mode mode_ = Mode::kPass;
  int interval_ms_ = 150;
  std::string extra_;
  std::vector<int> fds_;
  long chunks_ = 0;  // from servers, for kExtra
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// Accepts connections on a free loopback port and answers every read with
// `reply`, until destroyed.
class FakeServer {
 public:
  explicit FakeServer(std::string reply);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string reply_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace pltest
