// redis_backend.cpp - Decision from a script reply.
#include "redis_backend.h"

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "redis_errors.h"

namespace redlimit {
namespace {

const scripts::Script& script_for(Algorithm a) {
  switch (a) {
    case Algorithm::kSlidingLog:
      return scripts::k_sliding_log;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown algorithm");
}

int64_t integer_at(const redisReply* r, size_t i, const char* script) {
  const redisReply* e = r->element[i];
  if (e->type != REDIS_REPLY_INTEGER)
    throw Error(ErrorCode::kServer, std::string("script ") + script + ": reply element " + std::to_string(i) +
                                        " is not an integer");
  return e->integer;
}

Decision decode(const redisReply* r, const scripts::Script& script) {
  if (r->type == REDIS_REPLY_ERROR) throw_reply_error(std::string(r->str, r->len), std::string("script ") + script.name);
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 5)
    throw Error(ErrorCode::kServer, std::string("script ") + script.name + ": unexpected reply shape");
  Decision d;
  d.allowed = integer_at(r, 0, script.name) != 0;
  d.limit = integer_at(r, 1, script.name);
  d.remaining = integer_at(r, 2, script.name);
  d.retry_after_ms = integer_at(r, 3, script.name);
  d.reset_after_ms = integer_at(r, 4, script.name);
  return d;
}

}  // namespace

RedisBackend::RedisBackend(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  instance_id_ = buf;
}

std::string RedisBackend::next_token() {
  // The pid keeps tokens apart across fork(): parent and child share the
  // random id and the counter value at the time of the fork.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s.%x.%llx", instance_id_.c_str(), static_cast<unsigned>(::getpid()),
                static_cast<unsigned long long>(counter_.fetch_add(1, std::memory_order_relaxed)));
  return buf;
}

Decision RedisBackend::evaluate(Op op, const LimitParams& p, const std::string& key, int64_t cost, int64_t now_us) {
  const scripts::Script& script = script_for(p.algorithm);
  std::string limit = std::to_string(p.limit);
  std::string window_us = std::to_string(p.window_ms * 1000);
  std::string cost_s = std::to_string(cost);
  std::string now = now_us == kServerTime ? std::string() : std::to_string(now_us);
  std::string token = op == Op::kCheck ? next_token() : std::string();
  ReplyPtr r = transport_->run_script(script, {key}, {op == Op::kCheck ? "check" : "peek", limit, window_us, cost_s, now, token});
  return decode(r.get(), script);
}

void RedisBackend::reset(const std::string& key) {
  ReplyPtr r = transport_->run_command(key, {"DEL", key});
  if (r->type == REDIS_REPLY_ERROR) throw_reply_error(std::string(r->str, r->len), "DEL");
}

}  // namespace redlimit
