// redis_errors.h - the one place that turns Redis error replies into
// polylimit::Error (socket failures are mapped where they happen, in
// connection.cpp).
#pragma once

#include <string>

#include "polylimit/errors.h"

namespace polylimit {

// An error reply ("-ERR ...") from the server.
[[noreturn]] void throw_reply_error(const std::string& reply, const std::string& what);

}  // namespace polylimit
