// redis_errors.h - the one place that turns hiredis failures and Redis error
// replies into polylimit::Error.
#pragma once

#include <string>

#include "polylimit/errors.h"

struct redisContext;

namespace polylimit {

// A context-level failure (ctx->err / errno). `what` says what was being done.
[[noreturn]] void throw_context_error(const redisContext* ctx, int saved_errno, const std::string& what);

// An error reply ("-ERR ...") from the server.
[[noreturn]] void throw_reply_error(const std::string& reply, const std::string& what);

}  // namespace polylimit
