// redis_errors.cpp - Redis error replies -> polylimit::Error.
#include "net/redis_errors.h"

#include <cstring>

namespace polylimit {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.compare(0, std::strlen(prefix), prefix) == 0; }

}  // namespace

void throw_reply_error(const std::string& reply, const std::string& what) {
  std::string msg = what + ": " + reply;
  // Authentication: the reply alone does not say what to do, so the message
  // leads with that (the reply follows; it never holds the password).
  const char* auth_hint = nullptr;
  if (starts_with(reply, "NOAUTH") ||
      // Redis caps the size of commands from unauthenticated clients.
      reply.find("Protocol error: unauthenticated") != std::string::npos)
    auth_hint =
        "the server requires authentication: give a password (and user) in the URL, "
        "redis://[user:]password@host:port";
  else if (starts_with(reply, "WRONGPASS") || reply.find("invalid password") != std::string::npos ||
           reply.find("invalid username-password") != std::string::npos)
    auth_hint = "the server refused the user or password of the URL: check both";
  else if (reply.find("without any password configured") != std::string::npos ||
           reply.find("no password is set") != std::string::npos)
    auth_hint = "the server has no password configured: remove the password from the URL (or set one on the server)";
  if (auth_hint != nullptr)
    throw Error(ErrorCode::kAuth, what + ": " + auth_hint + " (the server said: " + reply + ")");
  // An ACL denial: of the command itself (NOPERM), or of a command or key
  // that a script used (Redis reports those as ERR ... script: ...).
  if (starts_with(reply, "NOPERM") || reply.find("The user executing the script can't") != std::string::npos ||
      reply.find("No permissions to") != std::string::npos)
    throw Error(ErrorCode::kPermission, msg);
  if (starts_with(reply, "OOM")) throw Error(ErrorCode::kNoMemory, msg);
  // The server cannot serve now (busy script, loading, read-only replica, no
  // master): a retry, maybe elsewhere, may succeed.
  if (starts_with(reply, "BUSY") || starts_with(reply, "LOADING") || starts_with(reply, "READONLY") ||
      starts_with(reply, "MASTERDOWN") || starts_with(reply, "TRYAGAIN") || starts_with(reply, "CLUSTERDOWN"))
    throw Error(ErrorCode::kUnavailable, msg);
  if (reply.find("script:") != std::string::npos || reply.find("user_script") != std::string::npos ||
      starts_with(reply, "WRONGTYPE"))
    throw Error(ErrorCode::kScript, msg);
  throw Error(ErrorCode::kServer, msg);
}

}  // namespace polylimit
