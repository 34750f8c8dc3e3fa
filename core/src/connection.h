// connection.h - one hiredis connection, used by one thread at a time.
//
// hiredis is used for connecting, for formatting (redisFormatCommandArgv) and
// for parsing replies; writes are ours, with MSG_NOSIGNAL, so a write to a
// socket the server closed never raises SIGPIPE in the host process.
// A Connection that saw any error is marked broken and never reused.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "polylimit/client.h"
#include "polylimit/url.h"

struct redisContext;
struct redisReply;

namespace polylimit {

struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept;
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

using Argv = std::vector<std::string_view>;

class Connection {
 public:
  // Connects, enables keepalive, sets the command timeout, AUTH, SELECT.
  // Throws Error (kUnavailable, kTimeout, kAuth, ...).
  Connection(const Endpoint& endpoint, const PoolOptions& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and reads its reply. Error replies are returned, not
  // thrown; I/O failures throw and mark the connection broken.
  ReplyPtr command(const Argv& argv);

  // Sends all commands in one write, then reads one reply per command, in
  // order: the building block for pipelining many callers' commands.
  std::vector<ReplyPtr> pipeline(const std::vector<Argv>& commands);

  bool broken() const { return broken_; }
  // True when the server closed the socket or sent unsolicited data while we
  // were idle (poll with no wait): the connection must not be reused.
  bool stale() const;

  std::chrono::steady_clock::time_point last_used() const { return last_used_; }


 private:
  void append(std::string& out, const Argv& argv);
  void send_all(const std::string& data);
  ReplyPtr read_reply();

  redisContext* ctx_ = nullptr;
  std::string where_;
  bool broken_ = false;
  std::chrono::steady_clock::time_point last_used_;
};

}  // namespace polylimit
