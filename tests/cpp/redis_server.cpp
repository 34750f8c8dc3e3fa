// redis_server.cpp - start/stop redis-server processes for tests.
#include "redis_server.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace pltest {

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("bind");
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    int devnull = ::open("/dev/null", O_RDWR);
    int out = log.empty() ? -1 : ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(devnull, 0);
    ::dup2(out >= 0 ? out : devnull, 1);
    ::dup2(out >= 0 ? out : devnull, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::_Exit(127);
  }
  return pid;
}

RedisServer::RedisServer(std::vector<std::string> extra_args) : extra_args_(std::move(extra_args)) {
  char tmpl[] = "/tmp/polylimit-test-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  for (int attempt = 0;; ++attempt) {
    port_ = free_port();
    try {
      launch();
      return;
    } catch (const std::exception&) {
      if (attempt == 4) throw;  // the port was taken in between: try another
    }
  }
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    stop();
  }
  std::string cmd = "rm -rf '" + dir_ + "'";
  if (std::system(cmd.c_str()) != 0) { /* best effort */ }
}

void RedisServer::launch() {
  std::vector<std::string> args = {"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                   "--save", "", "--appendonly", "no", "--dir", dir_, "--daemonize", "no",
                                   "--protected-mode", "no", "--logfile", dir_ + "/redis.log"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  pid_ = spawn(args);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited at start (is it installed? see " + dir_ + "/redis.log)");
    }
    timeval tv{0, 200000};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    bool up = false;
    if (c && !c->err) {
      auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
      up = r != nullptr;  // PONG, or NOAUTH from a server with a password
      if (r) freeReplyObject(r);
    }
    if (c) redisFree(c);
    if (up) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("redis-server did not answer PING within 10 s");
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void RedisServer::start() {
  if (pid_ > 0) return;
  launch();
}

void RedisServer::pause() { ::kill(pid_, SIGSTOP); }
void RedisServer::resume() { ::kill(pid_, SIGCONT); }

namespace {

std::string to_text(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
    case REDIS_REPLY_NIL: return "(nil)";
    case REDIS_REPLY_ARRAY: {
      std::string out;
      for (size_t i = 0; i < r->elements; ++i) {
        if (i) out += "\n";
        out += to_text(r->element[i]);
      }
      return out;
    }
    default: return std::string(r->str, r->len);
  }
}

}  // namespace

std::string RedisServer::command(const std::vector<std::string>& argv) const {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (!c || c->err) {
    if (c) redisFree(c);
    throw std::runtime_error("cannot connect to the test server");
  }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  if (!r) {
    redisFree(c);
    throw std::runtime_error("test command failed");
  }
  std::string out = to_text(r);
  freeReplyObject(r);
  redisFree(c);
  return out;
}

std::vector<std::string> ring_units(const std::string& key) {
  return {"EVAL",
          "local h = redis.call('GETRANGE', KEYS[1], 0, 11) "
          "if h == '' then return 0 end "
          "local head, used = struct.unpack('>I4I4', h) return used",
          "1", key};
}

long long RedisServer::integer(const std::vector<std::string>& argv) const {
  return std::stoll(command(argv));
}

}  // namespace pltest
