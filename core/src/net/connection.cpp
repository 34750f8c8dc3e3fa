// connection.cpp - our own non-blocking socket, command encoding and reply reader.
#include "net/connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/redis_errors.h"
#include "net/tls.h"

namespace polylimit {

namespace {

using Clock = std::chrono::steady_clock;

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

std::string reply_text(const Reply* r) { return std::string(r->str, r->len); }

// An error reply to AUTH without the password in it: a server that does not
// know the command echoes its arguments ("ERR unknown command 'AUTH', with
// args beginning with: 'pw'", cut at 128 bytes, so maybe only a prefix).
std::string auth_reply_text(const Reply* r, const std::string& password) {
  std::string text = reply_text(r);
  const size_t args = text.find("with args beginning with");
  if (args != std::string::npos) text = text.substr(0, args) + "with args beginning with: ***";
  for (size_t p = text.find(password); !password.empty() && p != std::string::npos; p = text.find(password, p + 3))
    text.replace(p, password.size(), "***");
  return text;
}

// Milliseconds left until `deadline` for poll(): at least 0, rounded up so a
// deadline a few microseconds away is still waited for.
int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<int64_t>((left + 999) / 1000, 1 << 30));
}

// poll() for `events` until the deadline; false on timeout. EINTR restarts
// with the time that is left.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;  // let the read or write report the error
  }
}

// A non-blocking socket connected to `addr` by `deadline`, or -1 with errno
// set (ETIMEDOUT when the deadline passed).
int connect_to(const sockaddr* addr, socklen_t len, int family, Clock::time_point deadline) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, addr, len) == 0) return fd;
  if (errno != EINPROGRESS && errno != EAGAIN) {
    int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  if (!wait_for(fd, POLLOUT, deadline)) {
    ::close(fd);
    errno = ETIMEDOUT;
    return -1;
  }
  int err = 0;
  socklen_t elen = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) {
    ::close(fd);
    errno = err ? err : EIO;
    return -1;
  }
  return fd;
}

}  // namespace

Connection::Connection(const Endpoint& ep, const PoolOptions& options, const TlsContext* tls)
    : where_(ep.describe()), reader_(where_), command_timeout_ms_(options.command_timeout_ms) {
  if (ep.tls && tls == nullptr)
    throw Error(ErrorCode::kInternal, "a TLS endpoint (" + where_ + ") without a TLS context");
  const std::string what = "connect to " + where_;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(options.connect_timeout_ms);
  int last_errno = 0;
  if (ep.kind == Endpoint::Kind::kUnix) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (ep.path.size() >= sizeof sa.sun_path)
      throw Error(ErrorCode::kInvalidArgument,
                  what + ": the socket path is longer than " + std::to_string(sizeof sa.sun_path - 1) + " bytes");
    std::memcpy(sa.sun_path, ep.path.c_str(), ep.path.size() + 1);
    fd_ = connect_to(reinterpret_cast<sockaddr*>(&sa), sizeof sa, AF_UNIX, deadline);
    last_errno = errno;
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const std::string port = std::to_string(ep.port);
    int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &list);
    if (rc != 0)
      throw Error(ErrorCode::kUnavailable, what + ": cannot resolve " + ep.host + " (" + gai_strerror(rc) + ")");
    for (addrinfo* a = list; a != nullptr && fd_ < 0; a = a->ai_next) {
      fd_ = connect_to(a->ai_addr, a->ai_addrlen, a->ai_family, deadline);
      if (fd_ < 0) last_errno = errno;
    }
    ::freeaddrinfo(list);
  }
  if (fd_ < 0) {
    if (last_errno == ETIMEDOUT)
      throw Error(ErrorCode::kTimeout, what + ": timed out after " + std::to_string(options.connect_timeout_ms) + " ms",
                  last_errno);
    std::string hint;  // what a first-time user most often got wrong
    if (last_errno == ECONNREFUSED)
      hint = " (nothing listens there: is redis-server running, and are the host and port of the URL right?)";
    else if (last_errno == ENOENT && ep.kind == Endpoint::Kind::kUnix)
      hint = " (no such socket: check the path of the URL and the server's unixsocket setting)";
    throw Error(ErrorCode::kUnavailable, what + ": " + std::strerror(last_errno) + hint, last_errno);
  }
  try {
    if (ep.kind == Endpoint::Kind::kTcp) {
      int on = 1;
      setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      if (options.keepalive_s > 0) set_keepalive(fd_, options.keepalive_s);
    }
    if (ep.tls) {
      tls_ = std::make_unique<TlsSession>(*tls, ep.host, ep.describe());
      handshake(deadline, options.connect_timeout_ms);  // the rest of the connect deadline
    }
    if (!ep.password.empty()) {
      Argv auth = ep.user.empty() ? Argv{"AUTH", ep.password} : Argv{"AUTH", ep.user, ep.password};
      ReplyPtr r = command(auth);
      if (r->type == ReplyType::kError) throw_reply_error(auth_reply_text(r.get(), ep.password), "AUTH at " + where_);
    }
    if (ep.db != 0) {
      std::string db = std::to_string(ep.db);
      ReplyPtr r = command({"SELECT", db});
      if (r->type == ReplyType::kError) throw_reply_error(reply_text(r.get()), "SELECT " + db + " at " + where_);
    }
  } catch (...) {
    release();
    throw;
  }
  last_used_ = Clock::now();
}

Connection::~Connection() { release(); }

void Connection::release() noexcept {
  tls_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Connection::handshake(Deadline deadline, int budget_ms) {
  const char* what = "TLS handshake with";
  try {
    for (;;) {
      TlsSession::Want want = tls_->handshake(where_);
      flush_tls(deadline, what, budget_ms);
      if (want == TlsSession::Want::kNone) return;
      if (want == TlsSession::Want::kRead) {
        char raw[16 * 1024];
        size_t n = recv_raw(raw, sizeof raw, deadline, what, budget_ms);
        tls_->feed(raw, n);
      }
    }
  } catch (const Error& e) {
    // A plain Redis server reads the ClientHello as the start of a command
    // and waits for the rest: the handshake times out with no byte back (or
    // the connection closes). Say what most likely went wrong.
    if (received_ || (e.code() != ErrorCode::kTimeout && e.code() != ErrorCode::kUnavailable)) throw;
    throw Error(e.code(),
                std::string(e.what()) +
                    " (no TLS answer: if the server does not speak TLS, use redis:// instead of "
                    "rediss://)",
                e.sys_errno());
  }
}

void Connection::fail(ErrorCode code, const std::string& what, const std::string& detail, int sys_errno) {
  broken_ = true;
  throw Error(code, what + " " + where_ + ": " + detail, sys_errno);
}

Connection::Deadline Connection::command_deadline() const {
  return Clock::now() + std::chrono::milliseconds(command_timeout_ms_);
}

// RESP written straight into `out` (which callers reuse): no per-command
// allocation as with redisFormatCommandArgv.
void Connection::encode(std::string& out, const Argv& argv) {
  // Sized first, then written in place: one growth of `out` at most (a
  // reused buffer keeps its capacity) instead of four appends per argument.
  auto digits = [](size_t n) {
    size_t d = 1;
    while (n >= 10) n /= 10, ++d;
    return d;
  };
  size_t size = 1 + digits(argv.size()) + 2;
  for (std::string_view a : argv) size += 1 + digits(a.size()) + 2 + a.size() + 2;
  const size_t start = out.size();
  out.resize(start + size);
  char* p = &out[start];
  auto header = [&p, &digits](char type, size_t n) {
    *p++ = type;
    char* end = p + digits(n);
    for (char* q = end; q != p; n /= 10) *--q = static_cast<char>('0' + n % 10);
    p = end;
    *p++ = '\r';
    *p++ = '\n';
  };
  header('*', argv.size());
  for (std::string_view a : argv) {
    header('$', a.size());
    if (!a.empty()) std::memcpy(p, a.data(), a.size());
    p += a.size();
    *p++ = '\r';
    *p++ = '\n';
  }
}

void Connection::send_raw(const char* p, size_t left, Deadline deadline, const char* what, int budget_ms) {
  while (left > 0) {
    ssize_t n = ::send(fd_, p, left, MSG_NOSIGNAL);
    if (n >= 0) {
      if (n > 0) sent_ = true;
      p += n;
      left -= static_cast<size_t>(n);
      continue;
    }
    int e = errno;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      if (!wait_for(fd_, POLLOUT, deadline))
        fail(ErrorCode::kTimeout, what, "timed out after " + std::to_string(budget_ms) + " ms", e);
      continue;
    }
    if (tls_) explain_tls_failure();
    fail(ErrorCode::kUnavailable, what, std::strerror(e), e);
  }
}

void Connection::explain_tls_failure() {
  // A TLS 1.3 server checks our certificate after our handshake is complete
  // and answers a missing or unknown one with an alert and a close: our next
  // write then fails (EPIPE, ECONNRESET). The alert, which says why, is
  // already in the socket's receive queue; read it without waiting.
  try {
    char raw[4096];
    for (int i = 0; i < 16; ++i) {
      ssize_t n = ::recv(fd_, raw, sizeof raw, MSG_DONTWAIT);
      if (n <= 0) break;
      tls_->feed(raw, static_cast<size_t>(n));
    }
    char buf[512];
    tls_->read(buf, sizeof buf, where_);
  } catch (const Error& e) {
    broken_ = true;
    if (e.code() == ErrorCode::kAuth) throw;  // the server refused our certificate
  }
}

size_t Connection::recv_raw(char* buf, size_t cap, Deadline deadline, const char* what, int budget_ms) {
  for (;;) {
    if (!wait_for(fd_, POLLIN, deadline))
      fail(ErrorCode::kTimeout, what, "timed out after " + std::to_string(budget_ms) + " ms", ETIMEDOUT);
    ssize_t n = ::recv(fd_, buf, cap, 0);
    if (n > 0) {
      received_ = true;
      return static_cast<size_t>(n);
    }
    int e = n == 0 ? 0 : errno;
    if (e == EINTR || e == EAGAIN || e == EWOULDBLOCK) continue;
    // A TLS-only server drops a plain client at its first bytes, before any
    // reply: say so (a plain connection that has had replies just broke).
    const std::string hint =
        !tls_ && !received_ ? " (before any reply: if the server speaks only TLS, use rediss:// instead of redis://)"
                            : "";
    if (n == 0) fail(ErrorCode::kUnavailable, what, "the server closed the connection" + hint);
    fail(ErrorCode::kUnavailable, what, std::strerror(e) + hint, e);
  }
}

void Connection::flush_tls(Deadline deadline, const char* what, int budget_ms) {
  const char* data = nullptr;
  size_t n = tls_->outgoing(&data);
  if (n == 0) return;
  send_raw(data, n, deadline, what, budget_ms);
  tls_->consume(n);
}

void Connection::send_all(const std::string& data, Deadline deadline) {
  if (!tls_) return send_raw(data.data(), data.size(), deadline, "send to", command_timeout_ms_);
  tls_->write(data.data(), data.size(), where_);
  flush_tls(deadline, "send to", command_timeout_ms_);
}

size_t Connection::read_some(char* buf, size_t cap, Deadline deadline) {
  if (!tls_) return recv_raw(buf, cap, deadline, "reply from", command_timeout_ms_);
  for (;;) {
    // Bytes OpenSSL already holds come first: poll() cannot see them.
    size_t n = tls_->read(buf, cap, where_);
    if (n > 0) return n;
    flush_tls(deadline, "send to", command_timeout_ms_);  // e.g. a key update answered while reading
    char raw[16 * 1024];
    size_t got = recv_raw(raw, sizeof raw, deadline, "reply from", command_timeout_ms_);
    tls_->feed(raw, got);
  }
}

ReplyPtr Connection::parsed() {
  try {
    return reader_.next();
  } catch (...) {
    broken_ = true;
    throw;
  }
}

ReplyPtr Connection::read_reply(Deadline deadline) {
  for (;;) {
    if (ReplyPtr r = parsed()) return r;
    char buf[16 * 1024];
    size_t n = read_some(buf, sizeof buf, deadline);
    feed_reader(buf, n);
  }
}

void Connection::write(const std::string& data, Deadline deadline) {
  if (broken_) throw Error(ErrorCode::kInternal, "write on a broken connection to " + where_);
  try {
    send_all(data, deadline);
  } catch (...) {
    broken_ = true;
    throw;
  }
  last_used_ = Clock::now();
}

size_t Connection::recv_or_wake(char* buf, size_t cap, Deadline deadline, int wake_fd, bool& woken) {
  if (deadline == Deadline()) {  // what is in, no wait: no poll() first (one system call less)
    for (;;) {
      const ssize_t got = ::recv(fd_, buf, cap, MSG_DONTWAIT);
      if (got > 0) {
        drained_ = static_cast<size_t>(got) < cap;  // a stream socket returns what it holds, up to cap
        return static_cast<size_t>(got);
      }
      if (got == 0) fail(ErrorCode::kUnavailable, "reply from", "the server closed the connection");
      const int e = errno;
      if (e == EINTR) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) {
        drained_ = true;
        return 0;
      }
      fail(ErrorCode::kUnavailable, "reply from", std::strerror(e), e);
    }
  }
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    int n = ::poll(p, wake_fd >= 0 ? 2 : 1, ms_left(deadline));
    if (n == 0) return 0;
    if (n < 0 && errno == EINTR) continue;
    if (wake_fd >= 0 && (p[1].revents & POLLIN) != 0 && (p[0].revents & POLLIN) == 0) {
      uint64_t drained;
      while (::read(wake_fd, &drained, sizeof drained) < 0 && errno == EINTR) {
      }
      woken = true;
      return 0;
    }
    ssize_t got = ::recv(fd_, buf, cap, MSG_DONTWAIT);
    if (got > 0) return static_cast<size_t>(got);
    if (got == 0) fail(ErrorCode::kUnavailable, "reply from", "the server closed the connection");
    int e = errno;
    if (e == EINTR || e == EAGAIN || e == EWOULDBLOCK) continue;
    fail(ErrorCode::kUnavailable, "reply from", std::strerror(e), e);
  }
}

bool Connection::drained() const { return drained_ && !(tls_ && tls_->has_pending()); }

ReplyPtr Connection::next_reply(Deadline deadline, int wake_fd, bool& woken) {
  woken = false;
  drained_ = false;  // until a read without waiting finds the socket empty
  if (broken_) throw Error(ErrorCode::kInternal, "read on a broken connection to " + where_);
  try {
    for (;;) {
      if (ReplyPtr r = parsed()) return r;
      char buf[16 * 1024];
      size_t n = 0;
      if (tls_) {
        n = tls_->read(buf, sizeof buf, where_);  // decrypted bytes poll() cannot see
        if (n == 0) {
          flush_tls(deadline, "send to", command_timeout_ms_);
          char raw_bytes[16 * 1024];
          size_t got = recv_or_wake(raw_bytes, sizeof raw_bytes, deadline, wake_fd, woken);
          if (got == 0) return nullptr;
          tls_->feed(raw_bytes, got);
          continue;
        }
      } else {
        n = recv_or_wake(buf, sizeof buf, deadline, wake_fd, woken);
        if (n == 0) return nullptr;
      }
      feed_reader(buf, n);
    }
  } catch (...) {
    broken_ = true;
    throw;
  }
}

ReplyPtr Connection::buffered_reply() {
  if (broken_) throw Error(ErrorCode::kInternal, "read on a broken connection to " + where_);
  try {
    for (;;) {
      if (ReplyPtr r = parsed()) return r;
      if (!tls_) return nullptr;
      char buf[16 * 1024];
      const size_t n = tls_->read(buf, sizeof buf, where_);  // decrypts what was fed, no I/O
      if (n == 0) return nullptr;
      feed_reader(buf, n);
    }
  } catch (...) {
    broken_ = true;
    throw;
  }
}

bool Connection::tls_resumed() const { return tls_ && tls_->resumed(); }

void Connection::shut_down() noexcept {
  // broken_ is not touched: another thread may be driving the connection.
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

ReplyPtr Connection::command(const Argv& argv) {
  if (broken_) throw Error(ErrorCode::kInternal, "command on a broken connection to " + where_);
  const Deadline deadline = command_deadline();
  sent_ = false;
  std::string buf;
  append(buf, argv);
  ReplyPtr r;
  try {
    send_all(buf, deadline);
    r = read_reply(deadline);
  } catch (...) {
    broken_ = true;  // whatever failed, the stream is in an unknown state
    throw;
  }
  if (leftover()) broken_ = true;  // bytes nobody asked for: never reuse
  last_used_ = Clock::now();
  return r;
}

std::vector<ReplyPtr> Connection::pipeline(const std::vector<Argv>& commands) {
  if (broken_) throw Error(ErrorCode::kInternal, "pipeline on a broken connection to " + where_);
  const Deadline deadline = command_deadline();
  sent_ = false;
  std::string buf;
  for (const auto& argv : commands) append(buf, argv);
  std::vector<ReplyPtr> replies;
  replies.reserve(commands.size());
  try {
    send_all(buf, deadline);
    for (size_t i = 0; i < commands.size(); ++i) replies.push_back(read_reply(deadline));
  } catch (...) {
    broken_ = true;
    throw;
  }
  if (leftover()) broken_ = true;
  last_used_ = Clock::now();
  return replies;
}

ReplyPtr Connection::receive(std::chrono::milliseconds wait) {
  if (broken_) throw Error(ErrorCode::kInternal, "receive on a broken connection to " + where_);
  try {
    if (ReplyPtr r = parsed()) return r;
    if (!(tls_ && tls_->has_pending()) && !wait_for(fd_, POLLIN, Clock::now() + wait)) return nullptr;
    ReplyPtr r = read_reply(command_deadline());
    last_used_ = Clock::now();
    return r;
  } catch (...) {
    broken_ = true;
    throw;
  }
}

bool Connection::leftover() const { return reader_.pending() || (tls_ && tls_->has_pending()); }

bool Connection::unusable() const {
  if (broken_ || fd_ < 0) return true;
  return tls_ && tls_->has_pending();  // received while idle, invisible to poll()
}

bool Connection::stale() const {
  if (unusable()) return true;
  pollfd p{fd_, POLLIN, 0};
  int n = ::poll(&p, 1, 0);
  return n != 0;  // readable (EOF, an error, unsolicited bytes) or poll failed
}

}  // namespace polylimit
