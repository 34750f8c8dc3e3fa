// redis_backend.cpp - Request to script call, script reply to Decision.
#include "redis_backend.h"

#include <hiredis/hiredis.h>


#include "redis_errors.h"

namespace polylimit {
namespace {

const scripts::Script& script_for(Algorithm a) {
  switch (a) {
    case Algorithm::kSlidingLog: return scripts::k_sliding_log;
    case Algorithm::kSlidingCounter: return scripts::k_sliding_counter;
    case Algorithm::kFixedWindow: return scripts::k_fixed_window;
    case Algorithm::kGcra: return scripts::k_gcra;
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

// Every number of a reply is range-checked before it becomes a Decision: a
// reply out of range (another script under our SHA, a corrupted reply) is a
// protocol error, never a decision.
int64_t checked(const redisReply* r, size_t i, const char* script, const char* what, int64_t lo, int64_t hi) {
  int64_t v = integer_at(r, i, script);
  if (v < lo || v > hi)
    throw Error(ErrorCode::kServer, std::string("script ") + script + ": " + what + " = " + std::to_string(v) +
                                        " in the reply is out of range " + std::to_string(lo) + ".." +
                                        std::to_string(hi));
  return v;
}

Decision decode_answer(const redisReply* r, const scripts::Script& script, const std::vector<LimitParams>& limits);

// {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}
// An error reply says the script did not run to a write (NOSCRIPT, OOM, BUSY,
// READONLY, ... are refused before it runs; our scripts raise their own
// errors before their first write): its Error has a known outcome. Any other
// reply came from a script that ran, so a reply that cannot be decoded has an
// unknown outcome.
Decision decode(const redisReply* r, const scripts::Script& script, const std::vector<LimitParams>& limits) {
  if (r->type == REDIS_REPLY_ERROR) throw_reply_error(std::string(r->str, r->len), std::string("script ") + script.name);
  return mark_outcome_unknown_if([] { return true; }, [&] { return decode_answer(r, script, limits); });
}

Decision decode_answer(const redisReply* r, const scripts::Script& script, const std::vector<LimitParams>& limits) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 + 4 * limits.size())
    throw Error(ErrorCode::kServer, std::string("script ") + script.name + ": unexpected reply shape");
  // Durations: a window plus a block plus the slack of caller-supplied time,
  // and a clock that stepped back can add up to the span of valid timestamps.
  const int64_t max_ms = bounds::kNowUs.max / 1000;
  std::vector<LimitResult> results(limits.size());
  for (size_t i = 0; i < limits.size(); ++i) {
    const int64_t limit = limits[i].capacity();  // what the script reports as the limit
    results[i].limit = checked(r, 1 + 4 * i, script.name, "limit", limit, limit);
    results[i].remaining = checked(r, 2 + 4 * i, script.name, "remaining", 0, limit);
    results[i].retry_after_ms = checked(r, 3 + 4 * i, script.name, "retry_after_ms", 0, max_ms);
    results[i].reset_after_ms = checked(r, 4 + 4 * i, script.name, "reset_after_ms", 0, max_ms);
  }
  return combine(checked(r, 0, script.name, "allowed", 0, 1) != 0, results);
}

void check_request(const Request& rq) {
  if (rq.limits == nullptr || rq.limits->empty() || rq.limits->size() != rq.keys.size())
    throw Error(ErrorCode::kInternal, "request: limits and keys do not match");
}

}  // namespace

Decision decode_script_reply(const redisReply* reply, const std::vector<LimitParams>& limits) {
  if (limits.empty()) throw Error(ErrorCode::kInternal, "decode_script_reply: no limits");
  return decode(reply, script_for(limits[0].algorithm), limits);
}

RedisBackend::RedisBackend(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {}

RedisBackend::Encoded RedisBackend::encode(const Request& rq) {
  check_request(rq);
  Encoded e;
  e.args.reserve(5 + 4 * rq.limits->size());
  e.args.push_back(rq.op == Op::kCheck ? "check" : rq.op == Op::kPeek ? "peek" : "refund");
  e.args.push_back(std::to_string(rq.cost));
  e.args.push_back(rq.now_us == kServerTime ? std::string() : std::to_string(rq.now_us));
  e.args.push_back(std::string());  // ARGV[4], unused since the ring log needs no unique members
  e.args.push_back(std::to_string(rq.block_us));
  for (const LimitParams& p : *rq.limits) {
    e.args.push_back(std::to_string(p.limit));
    e.args.push_back(std::to_string(p.window_ms * 1000));
    e.args.push_back(std::to_string(p.capacity()));
    e.args.push_back(std::to_string(p.interval_us()));
  }
  for (const std::string& k : rq.keys) e.call.keys.push_back(k);
  if (rq.block_us > 0) e.call.keys.push_back(rq.block_key);
  for (const std::string& a : e.args) e.call.args.push_back(a);
  return e;
}

Decision RedisBackend::evaluate(const Request& rq) {
  Encoded e = encode(rq);
  const scripts::Script& script = script_for((*rq.limits)[0].algorithm);
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  ReplyPtr r = transport_->run_script(script, e.call.keys, e.call.args);
  return decode(r.get(), script, *rq.limits);
}

std::vector<Outcome> RedisBackend::evaluate_many(const std::vector<Request>& requests) {
  std::vector<Outcome> out(requests.size());
  // One pipeline per script (a limiter's requests share one).
  std::vector<bool> done(requests.size(), false);
  for (size_t first = 0; first < requests.size(); ++first) {
    if (done[first]) continue;
    std::vector<size_t> group;
    std::vector<Encoded> encoded;
    const Algorithm alg = requests[first].limits && !requests[first].limits->empty()
                              ? (*requests[first].limits)[0].algorithm
                              : Algorithm::kSlidingLog;
    for (size_t i = first; i < requests.size(); ++i) {
      if (done[i]) continue;
      const Request& rq = requests[i];
      try {
        check_request(rq);
        if ((*rq.limits)[0].algorithm != alg) continue;
        encoded.push_back(encode(rq));
        group.push_back(i);
      } catch (...) {
        out[i].error = std::current_exception();
      }
      done[i] = true;
    }
    if (group.empty()) continue;
    const scripts::Script& script = script_for(alg);
    std::vector<ScriptCall> calls;
    calls.reserve(group.size());
    for (auto& e : encoded) calls.push_back(e.call);
    std::vector<ReplyPtr> replies;
    try {
      round_trips_.fetch_add(1, std::memory_order_relaxed);
      replies = transport_->run_scripts(script, calls);
    } catch (...) {
      for (size_t i : group) out[i].error = std::current_exception();
      continue;
    }
    for (size_t j = 0; j < group.size(); ++j) {
      try {
        out[group[j]].decision = decode(replies[j].get(), script, *requests[group[j]].limits);
      } catch (...) {
        out[group[j]].error = std::current_exception();
      }
    }
  }
  return out;
}

void RedisBackend::reset(const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  Argv argv{"DEL"};
  for (const auto& k : keys) argv.push_back(k);
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  ReplyPtr r = transport_->run_command(keys[0], argv);
  if (r->type == REDIS_REPLY_ERROR) throw_reply_error(std::string(r->str, r->len), "DEL");
}

}  // namespace polylimit
