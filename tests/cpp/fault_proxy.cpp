// fault_proxy.cpp - FaultProxy and FakeServer: threads, poll and loopback sockets.
#include "fault_proxy.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace pltest {
namespace {

// A listening loopback socket on a free port.
int listen_loopback(int& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("cannot listen on loopback");
  port = ntohs(addr.sin_port);
  return fd;
}

// accept() that gives up every 50 ms so `stop` is noticed; -1 when stopping.
int accept_until(int listen_fd, const std::atomic<bool>& stop) {
  while (!stop.load()) {
    pollfd p{listen_fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) return fd;
    }
  }
  return -1;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

FaultProxy::FaultProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = listen_loopback(port_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultProxy::~FaultProxy() {
  stop_ = true;
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  for (int fd : fds_) ::close(fd);
  ::close(listen_fd_);
}

void FaultProxy::set(Mode mode, int interval_ms, std::string extra) {
  std::lock_guard<std::mutex> lock(mu_);
  mode_ = mode;
  interval_ms_ = interval_ms;
  extra_ = std::move(extra);
}

void FaultProxy::accept_loop() {
  for (;;) {
    int client = accept_until(listen_fd_, stop_);
    if (client < 0) return;
    int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
    if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(server);
      ::close(client);
      continue;
    }
    int on = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(client);
    fds_.push_back(server);
    threads_.emplace_back([this, client, server] { pump(client, server, false); });
    threads_.emplace_back([this, client, server] { pump(server, client, true); });
  }
}

void FaultProxy::pump(int from, int to, bool from_server) {
  char buf[16 * 1024];
  while (!stop_.load()) {
    pollfd p{from, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(from, buf, sizeof buf, 0);
    if (n <= 0) break;
    Mode mode;
    int interval;
    std::string extra;
    bool add_extra = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      mode = mode_;
      interval = interval_ms_;
      extra = extra_;
      if (from_server && mode == Mode::kExtra) add_extra = ++chunks_ % (interval > 0 ? interval : 1) == 0;
    }
    if (mode == Mode::kBlackhole) continue;
    if (from_server && mode == Mode::kTrickle) {
      for (ssize_t i = 0; i < n && !stop_.load(); ++i) {
        if (!write_all(to, buf + i, 1)) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(interval));
      }
      continue;
    }
    std::string out(buf, static_cast<size_t>(n));
    if (add_extra) out += extra;  // one write: it arrives with the real reply
    if (!write_all(to, out.data(), out.size())) break;
  }
  ::shutdown(to, SHUT_WR);
}

FakeServer::FakeServer(std::string reply) : reply_(std::move(reply)) {
  listen_fd_ = listen_loopback(port_);
  thread_ = std::thread([this] {
    std::vector<int> conns;
    char buf[4096];
    while (!stop_.load()) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (int c : conns) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) conns.push_back(c);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
        if (n <= 0 || !write_all(fds[i].fd, reply_.data(), reply_.size())) {
          ::close(fds[i].fd);
          conns.erase(std::find(conns.begin(), conns.end(), fds[i].fd));
        }
      }
    }
    for (int c : conns) ::close(c);
  });
}

FakeServer::~FakeServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

}  // namespace pltest
