// connection.cpp - a hiredis context with our own SIGPIPE-free writes.
#include "connection.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "redis_errors.h"

namespace polylimit {

void ReplyDeleter::operator()(redisReply* r) const noexcept {
  if (r) freeReplyObject(r);
}

namespace {

timeval to_timeval(int ms) {
  timeval tv;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  return tv;
}

void set_keepalive(int fd, int interval_s) {
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
#ifdef TCP_KEEPIDLE
  int idle = interval_s, intvl = interval_s / 3 > 0 ? interval_s / 3 : 1, count = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
#endif
}

std::string reply_text(const redisReply* r) { return std::string(r->str, r->len); }

}  // namespace

Connection::Connection(const Endpoint& ep, const PoolOptions& options) : where_(ep.describe()) {
  const std::string what = "connect to " + where_;
  timeval connect_tv = to_timeval(options.connect_timeout_ms);
  if (ep.kind == Endpoint::Kind::kUnix)
    ctx_ = redisConnectUnixWithTimeout(ep.path.c_str(), connect_tv);
  else
    ctx_ = redisConnectWithTimeout(ep.host.c_str(), ep.port, connect_tv);
  int saved_errno = errno;
  if (ctx_ == nullptr || ctx_->err) {
    try {
      throw_context_error(ctx_, saved_errno, what);
    } catch (...) {
      if (ctx_) redisFree(ctx_);
      ctx_ = nullptr;
      throw;
    }
  }
  // hiredis does not keep these across its own reconnects; we never reconnect
  // a context (a new Connection is made instead), so setting them once holds.
  if (redisSetTimeout(ctx_, to_timeval(options.command_timeout_ms)) != REDIS_OK) {
    redisFree(ctx_);
    ctx_ = nullptr;
    throw Error(ErrorCode::kUnavailable, what + ": cannot set the command timeout", errno);
  }
  if (ep.kind == Endpoint::Kind::kTcp && options.keepalive_s > 0) set_keepalive(ctx_->fd, options.keepalive_s);

  try {
    if (!ep.password.empty()) {
      Argv auth = ep.user.empty() ? Argv{"AUTH", ep.password} : Argv{"AUTH", ep.user, ep.password};
      ReplyPtr r = command(auth);
      if (r->type == REDIS_REPLY_ERROR) throw_reply_error(reply_text(r.get()), "AUTH at " + where_);
    }
    if (ep.db != 0) {
      std::string db = std::to_string(ep.db);
      ReplyPtr r = command({"SELECT", db});
      if (r->type == REDIS_REPLY_ERROR) throw_reply_error(reply_text(r.get()), "SELECT " + db + " at " + where_);
    }
  } catch (...) {
    redisFree(ctx_);
    ctx_ = nullptr;
    throw;
  }
  last_used_ = std::chrono::steady_clock::now();
}

Connection::~Connection() {
  if (ctx_) redisFree(ctx_);
}

void Connection::append(std::string& out, const Argv& argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (auto a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  int len = redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  if (len < 0 || cmd == nullptr) throw Error(ErrorCode::kNoMemory, "cannot format a Redis command");
  out.append(cmd, static_cast<size_t>(len));
  redisFreeCommand(cmd);
}

void Connection::send_all(const std::string& data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::send(ctx_->fd, p, left, MSG_NOSIGNAL);
    if (n < 0) {
      int e = errno;
      if (e == EINTR) continue;
      broken_ = true;
      if (e == EAGAIN || e == EWOULDBLOCK)
        throw Error(ErrorCode::kTimeout, "send to " + where_ + ": timed out", e);
      throw Error(ErrorCode::kUnavailable, "send to " + where_ + ": " + std::strerror(e), e);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

ReplyPtr Connection::read_reply() {
  void* raw = nullptr;
  if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
    int e = errno;
    broken_ = true;
    throw_context_error(ctx_, e, "reply from " + where_);
  }
  return ReplyPtr(static_cast<redisReply*>(raw));
}

ReplyPtr Connection::command(const Argv& argv) {
  if (broken_) throw Error(ErrorCode::kInternal, "command on a broken connection to " + where_);
  std::string buf;
  append(buf, argv);
  send_all(buf);
  ReplyPtr r = read_reply();
  last_used_ = std::chrono::steady_clock::now();
  return r;
}

std::vector<ReplyPtr> Connection::pipeline(const std::vector<Argv>& commands) {
  if (broken_) throw Error(ErrorCode::kInternal, "pipeline on a broken connection to " + where_);
  std::string buf;
  for (const auto& argv : commands) append(buf, argv);
  send_all(buf);
  std::vector<ReplyPtr> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) replies.push_back(read_reply());
  last_used_ = std::chrono::steady_clock::now();
  return replies;
}

bool Connection::stale() const {
  if (broken_ || ctx_ == nullptr) return true;
  pollfd p{ctx_->fd, POLLIN, 0};
  int n = ::poll(&p, 1, 0);
  return n != 0;  // readable (EOF, an error, unsolicited bytes) or poll failed
}

}  // namespace polylimit
