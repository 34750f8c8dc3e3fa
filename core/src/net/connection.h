// connection.h - one connection to a Redis node, used by one thread at a time.
//
// The socket is ours (non-blocking; writes with MSG_NOSIGNAL, so a write to a
// socket the server closed never raises SIGPIPE in the host process), and so
// are the command encoding (encode) and the reply reader (reply_reader.h,
// which refuses a header that cannot be ours before reserving anything for
// it). Every command or pipeline has ONE deadline, the command timeout, for
// the whole write and every byte of every reply: a server that trickles its
// reply cannot stretch a call. A Connection that saw any error, a timeout, or
// bytes nobody asked for is marked broken and never reused, so no call can
// receive another's reply.
//
// rediss://: the same socket carries a TLS session (tls.h). The handshake runs
// under the connect deadline, right after the TCP connect; afterwards every
// byte OpenSSL wants sent or received moves through the same send/recv and
// poll as plain bytes, under the same one deadline per call, and decrypted
// reply bytes go to the same reader.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polylimit/connection_options.h"
#include "polylimit/errors.h"
#include "polylimit/url.h"

#include "net/reply_reader.h"

namespace polylimit {

class TlsContext;
class TlsSession;

using Argv = std::vector<std::string_view>;

// What the data path talks to: one exclusive Connection, or a lease on a
// connection that several callers share (pool.h). Either way a command() or
// pipeline() is sent contiguously and its replies come back in order.
class Link {
 public:
  virtual ~Link() = default;
  // Sends one command and reads its reply under one deadline. Error replies
  // are returned; I/O failures and the deadline throw.
  virtual ReplyPtr command(const Argv& argv) = 0;
  // Sends the commands together (nothing of another caller in between) and
  // reads one reply per command, in order.
  virtual std::vector<ReplyPtr> pipeline(const std::vector<Argv>& commands) = 0;
  // True once any byte of the last command() or pipeline() was written: a
  // failure after that may come after the server ran it.
  virtual bool sent() const = 0;
  // True when the link can no longer be used.
  virtual bool broken() const = 0;
};

class Connection final : public Link {
 public:
  // Connects (within connect_timeout_ms), enables TCP_NODELAY and keepalive,
  // for a TLS endpoint (endpoint.tls) completes the TLS handshake within the
  // same connect_timeout_ms, then AUTH and SELECT. Throws Error (kUnavailable,
  // kTimeout, kAuth, ...). `tls` must be given for a TLS endpoint and must
  // outlive the connection.
  Connection(const Endpoint& endpoint, const PoolOptions& options, const TlsContext* tls = nullptr);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and reads its reply, all within command_timeout_ms.
  // Error replies are returned, not thrown; I/O failures and the deadline
  // throw and mark the connection broken.
  ReplyPtr command(const Argv& argv) override;

  // Sends all commands in one write, then reads one reply per command, in
  // order: the building block for pipelining many callers' commands.
  std::vector<ReplyPtr> pipeline(const std::vector<Argv>& commands) override;

  // For a subscribed connection (SUBSCRIBE sent with command() or
  // pipeline()): the next pushed message, or null when none started to
  // arrive within `wait`. Once a message starts to arrive, all of it must
  // within command_timeout_ms. Failures throw and mark the connection broken.
  ReplyPtr receive(std::chrono::milliseconds wait);

  bool broken() const override { return broken_; }
  bool sent() const override { return sent_; }
  // True when the server closed the socket or sent unsolicited data while we
  // were idle (poll with no wait), or a reply left bytes nobody asked for:
  // the connection must not be reused.
  bool stale() const;
  // stale() without the poll(): broken, closed, or TLS bytes received while
  // idle (which poll() would not see).
  bool unusable() const;

  std::chrono::steady_clock::time_point last_used() const { return last_used_; }

  // For a Mux (mux.h), the one thread driving this connection at a time:
  // the write and the read of a pipeline are separate steps there, so that
  // more commands can be written while replies are awaited.
  using Deadline = std::chrono::steady_clock::time_point;
  // Appends the RESP encoding of argv to `out`.
  static void encode(std::string& out, const Argv& argv);
  // Writes all of `data` by `deadline`; failures throw and mark it broken.
  void write(const std::string& data, Deadline deadline);
  // The next reply: parsed from bytes already received, else waits for more
  // until `deadline`. Null when the deadline passed first, or when `wake_fd`
  // (an eventfd, -1: none) became readable (it is drained; `woken` is set).
  // Deadline() (the clock's epoch): only what is in, read without waiting.
  // Failures throw and mark it broken.
  ReplyPtr next_reply(Deadline deadline, int wake_fd, bool& woken);
  // The next reply if all of it was already received (no I/O), else null.
  // Failures throw and mark it broken.
  ReplyPtr buffered_reply();
  const std::string& where() const { return where_; }
  // The socket, for a thread that only waits for it to become readable.
  int fd() const { return fd_; }
  // rediss://: the handshake resumed an earlier session with this server.
  bool tls_resumed() const;
  int command_timeout_ms() const { return command_timeout_ms_; }
  // Bytes received beyond the replies parsed so far.
  bool has_leftover() const { return leftover(); }
  // Whether the socket held nothing more when next_reply() last read it
  // (a read shorter than its buffer, or none to read) and no decrypted bytes
  // wait in the TLS session: whatever arrives later is a new edge for an
  // edge-triggered epoll registration. False when unknown.
  bool drained() const;
  // Wakes a thread waiting in next_reply() with a failure and stops every
  // later use (shutdown(2); the descriptor stays open until destruction).
  void shut_down() noexcept;

 private:
  void append(std::string& out, const Argv& argv) { encode(out, argv); }
  void send_all(const std::string& data, Deadline deadline);
  ReplyPtr read_reply(Deadline deadline);
  // The next whole reply among the bytes fed so far, else null.
  ReplyPtr parsed();
  // Received (decrypted) reply bytes into the reader.
  void feed_reader(const char* data, size_t len) { reader_.feed(data, len); }
  // Socket I/O under `deadline`; `what` ("send to", "TLS handshake with") and
  // budget_ms (the timeout it came from) name a failure.
  void send_raw(const char* data, size_t len, Deadline deadline, const char* what, int budget_ms);
  size_t recv_raw(char* buf, size_t cap, Deadline deadline, const char* what, int budget_ms);
  // recv_raw that returns 0 instead of failing when the deadline passes or
  // `wake_fd` becomes readable first (woken set).
  size_t recv_or_wake(char* buf, size_t cap, Deadline deadline, int wake_fd, bool& woken);
  // Sends what the TLS session has to send.
  void flush_tls(Deadline deadline, const char* what, int budget_ms);
  // At least one byte of reply (decrypted for TLS) by the deadline.
  size_t read_some(char* buf, size_t cap, Deadline deadline);
  void handshake(Deadline deadline, int budget_ms);
  // After a failed write on a TLS connection: throws the TLS alert the server
  // sent before closing, when it says our certificate was refused.
  void explain_tls_failure();
  void release() noexcept;  // frees the reader, the TLS session and the socket
  // Received bytes beyond the replies asked for (in the reader or TLS buffers).
  bool leftover() const;
  // Marks the connection broken and throws `code` with "<what> <where>: <detail>".
  [[noreturn]] void fail(ErrorCode code, const std::string& what, const std::string& detail, int sys_errno = 0);
  Deadline command_deadline() const;

  int fd_ = -1;
  std::string where_;
  ReplyReader reader_;
  std::unique_ptr<TlsSession> tls_;  // rediss:// only
  int command_timeout_ms_;
  bool broken_ = false;
  bool sent_ = false;
  bool received_ = false;  // a byte ever came from the server (error messages: is it the wrong protocol?)
  bool drained_ = false;   // see drained(): the last recv of next_reply() emptied the socket
  std::chrono::steady_clock::time_point last_used_;
};

// Runs `body`; when it throws and `unknown()` is then true, the Error is
// marked outcome_unknown (running out of memory becomes Error(kNoMemory),
// marked the same way), so callers learn that the failed call may have taken
// effect in Redis.
template <class Pred, class F>
auto mark_outcome_unknown_if(Pred&& unknown, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (Error& e) {
    if (unknown()) e.set_outcome_unknown(true);
    throw;
  } catch (const std::bad_alloc&) {
    if (!unknown()) throw;
    Error e(ErrorCode::kNoMemory, "out of memory after the command was sent");
    e.set_outcome_unknown(true);
    throw e;
  }
}

// Runs `send`, a command() or pipeline() on `conn` that may take effect (a
// script call, DEL): a failure after any byte of it was written has an
// unknown outcome. Failures before the send, and error replies (returned,
// not thrown), do not.
template <class F>
auto send_with_outcome(Link& conn, F&& send) -> decltype(send()) {
  return mark_outcome_unknown_if([&conn] { return conn.sent(); }, std::forward<F>(send));
}

}  // namespace polylimit
