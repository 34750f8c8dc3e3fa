// redis_backend.cpp - Request to script call, script reply to Decision.
#include "backend/redis_backend.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_set>

#include "net/call_deadline.h"
#include "net/redis_errors.h"

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

// The script a request runs. Checks of one limit without a block (the
// common call, alone or coalesced) run a script of their own, which costs
// the Redis thread less (core/scripts/single/); everything else runs the
// general script of its algorithm. Both read and write the same layout and decide alike, so which
// one a call runs changes nothing but the server's time.
const scripts::Script& script_for(const Request& rq) {
  const Algorithm a = (*rq.limits)[0].algorithm;
  if (rq.op != Op::kCheck || rq.limits->size() != 1 || rq.block_us > 0) return script_for(a);
  switch (a) {
    case Algorithm::kSlidingLog: return scripts::k_sliding_log_single;
    case Algorithm::kSlidingCounter: return scripts::k_sliding_counter_single;
    case Algorithm::kFixedWindow: return scripts::k_fixed_window_single;
    case Algorithm::kGcra: return scripts::k_gcra_single;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown algorithm");
}

// The keys call of a single-check script (core/scripts/single/common/keys.lua),
// or null for a general script.
const scripts::Script* keys_script_for(const scripts::Script& single) {
  if (&single == &scripts::k_sliding_log_single) return &scripts::k_sliding_log_keys;
  if (&single == &scripts::k_sliding_counter_single) return &scripts::k_sliding_counter_keys;
  if (&single == &scripts::k_fixed_window_single) return &scripts::k_fixed_window_keys;
  if (&single == &scripts::k_gcra_single) return &scripts::k_gcra_keys;
  return nullptr;
}

// A script reply's numbers: an array of integers (the general scripts) or
// one string of integers separated by single spaces (the single-check
// scripts: Redis converts a string more cheaply than a Lua table). Either
// form is read into one list; a reply of any other shape, or with an element
// that is not an integer, is a protocol error.
void numbers_into(std::vector<int64_t>& out, const redisReply* r, const char* script) {
  auto bad = [script](const std::string& what) {
    return Error(ErrorCode::kServer, std::string("script ") + script + ": " + what);
  };
  out.clear();
  if (r->type == REDIS_REPLY_ARRAY) {
    out.reserve(r->elements);
    for (size_t i = 0; i < r->elements; ++i) {
      if (r->element[i]->type != REDIS_REPLY_INTEGER)
        throw bad("reply element " + std::to_string(i) + " is not an integer");
      out.push_back(r->element[i]->integer);
    }
  } else if (r->type == REDIS_REPLY_STRING) {
    const char* at = r->str;
    const char* end = r->str + r->len;
    out.reserve(static_cast<size_t>(std::count(at, end, ' ')) + 1);
    while (at < end) {
      int64_t v = 0;
      auto res = std::from_chars(at, end, v);
      if (res.ec != std::errc() || (res.ptr != end && *res.ptr != ' '))
        throw bad("the reply is not a list of integers");
      out.push_back(v);
      at = res.ptr == end ? end : res.ptr + 1;
    }
  } else {
    throw bad("unexpected reply shape");
  }
}

std::vector<int64_t> numbers_of(const redisReply* r, const char* script) {
  std::vector<int64_t> out;
  numbers_into(out, r, script);
  return out;
}

// Every number of a reply is range-checked before it becomes a Decision: a
// reply out of range (another script under our SHA, a corrupted reply) is a
// protocol error, never a decision.
int64_t checked(const std::vector<int64_t>& r, size_t i, const char* script, const char* what, int64_t lo, int64_t hi) {
  const int64_t v = r[i];
  if (v < lo || v > hi)
    throw Error(ErrorCode::kServer, std::string("script ") + script + ": " + what + " = " + std::to_string(v) +
                                        " in the reply is out of range " + std::to_string(lo) + ".." +
                                        std::to_string(hi));
  return v;
}

Decision decode_answer(const std::vector<int64_t>& r, size_t base, const scripts::Script& script,
                       const std::vector<LimitParams>& limits);

// {allowed, then per limit: limit, remaining, retry_after_ms, reset_after_ms}
// An error reply says the script did not run to a write (NOSCRIPT, OOM, BUSY,
// READONLY, ... are refused before it runs; our scripts raise their own
// errors before their first write): its Error has a known outcome. Any other
// reply came from a script that ran, so a reply that cannot be decoded has an
// unknown outcome.
Decision decode(const redisReply* r, const scripts::Script& script, const std::vector<LimitParams>& limits) {
  if (r->type == REDIS_REPLY_ERROR)
    throw_reply_error(std::string(r->str, r->len), std::string("script ") + script.name);
  return mark_outcome_unknown_if(
      [] { return true; },
      [&] {
        thread_local std::vector<int64_t> numbers;  // one check's: no list allocated per reply
        numbers_into(numbers, r, script.name);
        if (numbers.size() != 1 + 4 * limits.size())
          throw Error(ErrorCode::kServer, std::string("script ") + script.name + ": unexpected reply shape");
        return decode_answer(numbers, 0, script, limits);
      });
}

// The reply of a coalesced call: `count` replies of one check, concatenated
// (core/scripts/common/prelude.lua). An error reply or a bad shape fails every
// check alike; a number out of range fails its own check.
std::vector<Outcome> decode_batch(const redisReply* r, size_t count, const scripts::Script& script,
                                  const std::vector<LimitParams>& limits) {
  if (r->type == REDIS_REPLY_ERROR)
    throw_reply_error(std::string(r->str, r->len), std::string("script ") + script.name);
  const size_t each = 1 + 4 * limits.size();
  const std::vector<int64_t> numbers = mark_outcome_unknown_if(
      [] { return true; },
      [&] {
        std::vector<int64_t> n = numbers_of(r, script.name);
        if (n.size() != count * each)
          throw Error(ErrorCode::kServer, std::string("script ") + script.name + ": unexpected reply shape for " +
                                              std::to_string(count) + " coalesced checks");
        return n;
      });
  std::vector<Outcome> out(count);
  for (size_t j = 0; j < count; ++j) {
    try {
      out[j].decision = mark_outcome_unknown_if([] { return true; },
                                                [&] { return decode_answer(numbers, j * each, script, limits); });
    } catch (...) {
      out[j].error = std::current_exception();
    }
  }
  return out;
}

// The reply of a keys call of `count` checks of one limit
// (core/scripts/single/common/keys.lua): each check's outcome, in order, and
// the checks whose script failed (their `out` left empty), which the caller
// sends again on their own. An error reply or a bad shape fails all `count`
// alike.
struct KeysReply {
  std::vector<Outcome> out;
  std::vector<size_t> again;
};
KeysReply split_keys_reply(const redisReply* r, size_t count, const scripts::Script& script,
                           const std::vector<LimitParams>& limits) {
  const size_t each = 1 + 4 * limits.size();
  KeysReply k;
  std::vector<int64_t> numbers;
  try {
    if (r->type == REDIS_REPLY_ERROR)
      throw_reply_error(std::string(r->str, r->len), std::string("script ") + script.name);
    numbers = mark_outcome_unknown_if([] { return true; },
                                      [&] {
                                        std::vector<int64_t> got = numbers_of(r, script.name);
                                        if (got.size() != count * each)
                                          throw Error(ErrorCode::kServer, std::string("script ") + script.name +
                                                                              ": unexpected reply shape for " +
                                                                              std::to_string(count) + " keys");
                                        return got;
                                      });
  } catch (...) {
    k.out.assign(count, Outcome{Decision{}, std::current_exception()});
    return k;
  }
  k.out.resize(count);
  for (size_t j = 0; j < count; ++j) {
    if (numbers[j * each] == -1) {  // keys.lua's FAILED
      k.again.push_back(j);
      continue;
    }
    try {
      k.out[j].decision = mark_outcome_unknown_if([] { return true; },
                                                  [&] { return decode_answer(numbers, j * each, script, limits); });
    } catch (...) {
      k.out[j].error = std::current_exception();
    }
  }
  return k;
}

Decision decode_answer(const std::vector<int64_t>& r, size_t base, const scripts::Script& script,
                       const std::vector<LimitParams>& limits) {
  // Durations: a window plus a block plus the slack of caller-supplied time,
  // and a clock that stepped back can add up to the span of valid timestamps.
  const int64_t max_ms = bounds::kNowUs.max / 1000;
  thread_local std::vector<LimitResult> results;  // no list allocated per reply
  results.assign(limits.size(), LimitResult{});
  for (size_t i = 0; i < limits.size(); ++i) {
    const int64_t limit = limits[i].capacity();  // what the script reports as the limit
    results[i].limit = checked(r, base + 1 + 4 * i, script.name, "limit", limit, limit);
    results[i].remaining = checked(r, base + 2 + 4 * i, script.name, "remaining", 0, limit);
    results[i].retry_after_ms = checked(r, base + 3 + 4 * i, script.name, "retry_after_ms", 0, max_ms);
    results[i].reset_after_ms = checked(r, base + 4 + 4 * i, script.name, "reset_after_ms", 0, max_ms);
  }
  return combine(checked(r, base, script.name, "allowed", 0, 1) != 0, results);
}

void check_request(const Request& rq) {
  if (rq.limits == nullptr || rq.limits->empty() || rq.limits->size() != rq.keys.size())
    throw Error(ErrorCode::kInternal, "request: limits and keys do not match");
}

bool durable(const Request& rq) { return rq.op == Op::kCheck && rq.durable.on(); }

bool same(const Durability& a, const Durability& b) {
  return a.replicas == b.replicas && a.aof == b.aof && a.timeout_ms == b.timeout_ms;
}

std::string wait_name(const Durability& d) { return d.aof ? "WAITAOF" : "WAIT"; }

// WAIT's error replies that say the deployment is misconfigured for the mode
// (an ACL without +wait, WAITAOF before Redis 7.2 or without appendonly):
// reported as such, whatever the decision and the failure policy.
bool configuration_error(const std::string& reply) {
  try {
    throw_reply_error(reply, "WAIT");
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kPermission || e.code() == ErrorCode::kAuth) return true;
  }
  return reply.find("unknown command") != std::string::npos || reply.find("appendonly") != std::string::npos;
}

Error not_durable(const std::string& what) {
  Error e(ErrorCode::kNotDurable, "check admitted by the master but not durable: " + what +
                                      "; not admitted, its units stay consumed on the master");
  e.set_outcome_unknown(true);  // consumed here, maybe lost in a failover
  return e;
}

// Failover-safe mode: a decision stands only when the WAIT after its script
// says its write is safe. An admitted check whose write was not acknowledged
// in time is kNotDurable: its units stay consumed on the master (and on any
// replica that got them), but the caller must not count it as admitted, since
// a failover now could lose it and admit those units again. A denial stands
// whatever the WAIT answered (nothing it wrote can admit more if lost), but a
// misconfiguration is reported even then.
Decision require_durable(Decision d, const Ack& ack, const Durability& want) {
  if (!ack.waited) throw Error(ErrorCode::kInternal, "failover-safe mode: no WAIT was sent after the script");
  if (!ack.error.empty()) {
    if (configuration_error(ack.error)) {
      std::string reply = ack.error;
      if (reply.find("unknown command") != std::string::npos)
        reply += " (durable_aof needs WAITAOF: Redis 7.2 or later)";
      try {
        throw_reply_error(reply, wait_name(want) + " after an " + (d.allowed ? "admitted" : "denied") + " check");
      } catch (Error& e) {
        e.set_outcome_unknown(d.allowed);  // an admitted check consumed its units
        throw;
      }
    }
    // Anything else acknowledged nothing: UNBLOCKED (the master was demoted
    // while WAIT waited), a master that became a replica before the WAIT.
    if (!d.allowed) return d;
    throw not_durable(wait_name(want) + " answered " + ack.error);
  }
  if (!d.allowed) return d;
  const bool local_ok = !want.aof || ack.local >= 1;
  if (ack.replicas >= want.replicas && local_ok) return d;
  std::string what = std::to_string(ack.replicas) + " of " + std::to_string(want.replicas) + " replicas";
  if (want.aof) what = (ack.local >= 1 ? "fsynced locally, " : "not fsynced locally, ") + what;
  throw not_durable("its write reached " + what + " within " + std::to_string(want.timeout_ms) + " ms (" +
                    wait_name(want) + ")");
}

}  // namespace

Decision decode_script_reply(const redisReply* reply, const std::vector<LimitParams>& limits) {
  if (limits.empty()) throw Error(ErrorCode::kInternal, "decode_script_reply: no limits");
  return decode(reply, script_for(limits[0].algorithm), limits);
}

RedisBackend::RedisBackend(std::unique_ptr<Transport> transport, bool coalesce)
    : transport_(std::move(transport)), coalesce_(coalesce) {}

RedisBackend::Encoded RedisBackend::encode(const Request& rq) {
  check_request(rq);
  Encoded e;
  // Only what the script reads (core/scripts/common/prelude.lua): GCRA
  // needs no limit, the others no capacity or interval; block_us only when
  // there is a block.
  const bool gcra = (*rq.limits)[0].algorithm == Algorithm::kGcra;
  const size_t numbers = 3 + (gcra ? 3 : 2) * rq.limits->size();
  e.digits.resize(numbers * 20);  // an int64 has at most 20 characters
  char* at = e.digits.data();
  e.call.args.reserve(1 + numbers);
  auto number = [&](int64_t v) {
    char* end = std::to_chars(at, at + 20, v).ptr;
    e.call.args.emplace_back(at, static_cast<size_t>(end - at));
    at = end;
  };
  e.call.args.emplace_back(rq.op == Op::kCheck ? "check" : rq.op == Op::kPeek ? "peek" : "refund");
  number(rq.cost);
  if (rq.now_us == kServerTime)
    e.call.args.emplace_back();
  else
    number(rq.now_us);
  for (const LimitParams& p : *rq.limits) {
    if (gcra) {
      number(p.window_ms * 1000);
      number(p.capacity());
      number(p.interval_us());
    } else {
      number(p.limit);
      number(p.window_ms * 1000);
    }
  }
  if (rq.block_us > 0) number(rq.block_us);
  e.call.keys.reserve(rq.keys.size() + 1);
  for (const std::string& k : rq.keys) e.call.keys.push_back(k);
  if (rq.block_us > 0) e.call.keys.push_back(rq.block_key);
  return e;
}

void RedisBackend::check_durability(const Durability& d) const {
  if (!d.on()) return;
  const int command_ms = transport_->command_timeout_ms();
  if (d.timeout_ms >= command_ms)
    throw_invalid("durable_timeout_ms = " + std::to_string(d.timeout_ms) +
                  " must be below the client's command_timeout_ms = " + std::to_string(command_ms) +
                  " (the WAIT's answer must arrive within the command's deadline)");
}

Decision RedisBackend::evaluate_one(const Request& rq, const Encoded* encoded) {
  Encoded own;
  const Encoded& e = encoded != nullptr ? *encoded : (own = encode(rq));
  const scripts::Script& script = script_for(rq);
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  script_calls_.fetch_add(1, std::memory_order_relaxed);
  if (durable(rq)) {
    // The script and WAIT in one pipeline: one round trip.
    std::vector<Ack> acks;
    std::vector<ReplyPtr> r = transport_->run_scripts(script, {e.call}, rq.durable, &acks);
    return require_durable(decode(r[0].get(), script, *rq.limits), acks.at(0), rq.durable);
  }
  ReplyPtr r = transport_->run_script(script, e.call.keys, e.call.args);
  return decode(r.get(), script, *rq.limits);
}

std::vector<Outcome> RedisBackend::evaluate_many_one(const std::vector<Request>& requests) {
  std::vector<Outcome> out(requests.size());
  // One pipeline per script (a limiter's requests share one).
  std::vector<bool> done(requests.size(), false);
  for (size_t first = 0; first < requests.size(); ++first) {
    if (done[first]) continue;
    std::vector<size_t> group;
    std::vector<Encoded> encoded;
    const scripts::Script* script = nullptr;
    // ... and one durability: a durable group ends each node's pipeline with WAIT.
    const bool want = durable(requests[first]);
    const Durability durability = want ? requests[first].durable : Durability{};
    for (size_t i = first; i < requests.size(); ++i) {
      if (done[i]) continue;
      const Request& rq = requests[i];
      try {
        check_request(rq);
        const scripts::Script& own = script_for(rq);
        if (script != nullptr && &own != script) continue;
        if (durable(rq) != want || (want && !same(rq.durable, durability))) continue;
        encoded.push_back(encode(rq));
        group.push_back(i);
        script = &own;
      } catch (...) {
        out[i].error = std::current_exception();
      }
      done[i] = true;
    }
    if (group.empty()) continue;
    if (!want && group.size() > 1 && coalesce_ && transport_->one_node() && keys_script_for(*script) != nullptr &&
        same_instant_and_limits(encoded)) {
      evaluate_keys(*script, requests, group, encoded, out);
      continue;
    }
    std::vector<ScriptCall> calls;
    calls.reserve(group.size());
    for (auto& e : encoded) calls.push_back(e.call);
    send_group(*script, requests, group, calls, durability, out);
  }
  return out;
}

// Calls differ in their keys and costs only (args[0] is the op, args[1] the cost).
bool RedisBackend::same_instant_and_limits(const std::vector<Encoded>& encoded) {
  const Argv& first = encoded.front().call.args;
  for (const Encoded& e : encoded)
    if (e.call.args.size() != first.size() || !std::equal(first.begin() + 2, first.end(), e.call.args.begin() + 2))
      return false;
  return true;
}

void RedisBackend::send_group(const scripts::Script& script, const std::vector<Request>& requests,
                              const std::vector<size_t>& group, const std::vector<ScriptCall>& calls,
                              const Durability& durability, std::vector<Outcome>& out) {
  const bool want = durability.on();
  std::vector<ReplyPtr> replies;
  std::vector<Ack> acks;
  try {
    round_trips_.fetch_add(1, std::memory_order_relaxed);
    script_calls_.fetch_add(static_cast<long>(calls.size()), std::memory_order_relaxed);
    replies = transport_->run_scripts(script, calls, durability, want ? &acks : nullptr);
  } catch (...) {
    for (size_t i : group) out[i].error = std::current_exception();
    return;
  }
  for (size_t j = 0; j < group.size(); ++j) {
    try {
      Decision d = decode(replies[j].get(), script, *requests[group[j]].limits);
      out[group[j]].decision = want ? require_durable(d, acks.at(j), durability) : d;
    } catch (...) {
      out[group[j]].error = std::current_exception();
    }
  }
}

// Checks of one limit at one instant: kMaxKeysPerCall keys per keys call,
// the calls in one pipeline. A check whose script failed in its keys call
// (keys.lua: before any write) goes again as a single call, where it gets
// its own answer.
void RedisBackend::evaluate_keys(const scripts::Script& single, const std::vector<Request>& requests,
                                 const std::vector<size_t>& group, const std::vector<Encoded>& encoded,
                                 std::vector<Outcome>& out) {
  const scripts::Script& script = *keys_script_for(single);
  const size_t n = group.size();
  const size_t chunks = (n + kMaxKeysPerCall - 1) / kMaxKeysPerCall;
  std::vector<std::string> costs(chunks);  // built first: the calls' views point into them
  for (size_t j = 0; j < n; ++j) {
    std::string& c = costs[j / kMaxKeysPerCall];
    if (!c.empty()) c += ',';
    c.append(encoded[j].call.args[1]);
  }
  const Argv& tail = encoded.front().call.args;
  std::vector<ScriptCall> calls(chunks);
  for (size_t k = 0; k < chunks; ++k) {
    ScriptCall& call = calls[k];
    for (size_t j = k * kMaxKeysPerCall; j < std::min(n, (k + 1) * kMaxKeysPerCall); ++j)
      call.keys.push_back(encoded[j].call.keys[0]);
    call.args.reserve(tail.size());
    call.args.push_back("keys");
    call.args.push_back(costs[k]);
    call.args.insert(call.args.end(), tail.begin() + 2, tail.end());
  }
  std::vector<ReplyPtr> replies;
  try {
    round_trips_.fetch_add(1, std::memory_order_relaxed);
    script_calls_.fetch_add(static_cast<long>(chunks), std::memory_order_relaxed);
    replies = transport_->run_scripts(script, calls);
  } catch (...) {
    for (size_t i : group) out[i].error = std::current_exception();
    return;
  }
  std::vector<size_t> again;  // positions in `group`
  for (size_t k = 0; k < chunks; ++k) {
    const size_t from = k * kMaxKeysPerCall, to = std::min(n, from + kMaxKeysPerCall);
    KeysReply got = split_keys_reply(replies[k].get(), to - from, script, *requests[group[from]].limits);
    for (size_t j = 0; j < got.out.size(); ++j) out[group[from + j]] = std::move(got.out[j]);
    for (size_t j : got.again) again.push_back(from + j);
  }
  if (again.empty()) return;
  std::vector<size_t> rest;
  std::vector<ScriptCall> singles;
  for (size_t j : again) {
    rest.push_back(group[j]);
    singles.push_back(encoded[j].call);
  }
  send_group(single, requests, rest, singles, Durability{}, out);
}

void RedisBackend::reset(const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  Argv argv{"DEL"};
  for (const auto& k : keys) argv.push_back(k);
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  ReplyPtr r = transport_->run_command(keys[0], argv);
  if (r->type == REDIS_REPLY_ERROR) throw_reply_error(std::string(r->str, r->len), "DEL");
}

void RedisBackend::reset_async(const std::vector<std::string>& keys, std::function<void(std::exception_ptr)> done) {
  if (keys.empty()) return done(nullptr);
  Argv argv{"DEL"};
  for (const auto& k : keys) argv.push_back(k);
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  if (transport_->run_command_async(keys[0], argv, [done](ReplyPtr r, std::exception_ptr error) {
        if (!error && r->type == REDIS_REPLY_ERROR) {
          try {
            throw_reply_error(std::string(r->str, r->len), "DEL");
          } catch (...) {
            error = std::current_exception();
          }
        }
        done(error);
      }))
    return;
  round_trips_.fetch_sub(1, std::memory_order_relaxed);  // counted again by reset()
  // Cluster, Sentinel: the blocking path (redirections, failover) on a library thread.
  auto copy = std::make_shared<std::vector<std::string>>(keys);
  transport_->run_in_background([this, copy, done] {
    std::exception_ptr error;
    try {
      reset(*copy);
    } catch (...) {
      error = std::current_exception();
    }
    done(error);
  });
}

namespace {

// A script call's completion that decodes the reply (where it is read, on a
// library thread or a poller's) for `done`. A named type, not a lambda: a
// call the transport could not queue gives `done` back (std::function::target).
struct DecodeThen {
  const scripts::Script* script;
  const std::vector<LimitParams>* limits;
  std::function<void(Outcome)> done;
  void operator()(ReplyPtr reply, std::exception_ptr error) const {
    Outcome o;
    if (error) {
      o.error = std::move(error);
    } else {
      try {
        o.decision = decode(reply.get(), *script, *limits);
      } catch (...) {
        o.error = std::current_exception();
      }
    }
    done(std::move(o));
  }
};

}  // namespace

void RedisBackend::evaluate_one_async(const Request& rq, std::function<void(Outcome)> done, const Encoded* encoded) {
  if (!durable(rq)) {
    Encoded own;
    const Encoded& e = encoded != nullptr ? *encoded : (own = encode(rq));
    const scripts::Script& script = script_for(rq);
    round_trips_.fetch_add(1, std::memory_order_relaxed);
    script_calls_.fetch_add(1, std::memory_order_relaxed);
    // Moved along, never copied: every copy of a callback is an allocation.
    ScriptDone decode_then(DecodeThen{&script, rq.limits, std::move(done)});
    if (transport_->run_script_async(script, e.call, std::move(decode_then))) return;
    done = std::move(decode_then.target<DecodeThen>()->done);  // not queued: still ours
    round_trips_.fetch_sub(1, std::memory_order_relaxed);      // counted again by evaluate_one()
    script_calls_.fetch_sub(1, std::memory_order_relaxed);
  }
  // No non-blocking path here (Cluster, Sentinel; WAIT after a durable
  // check): the synchronous call on a library thread.
  auto copy = std::make_shared<Request>(rq);
  transport_->run_in_background([this, copy, done = std::move(done)] {
    Outcome o;
    try {
      o.decision = evaluate_one(*copy);
    } catch (...) {
      o.error = std::current_exception();
    }
    done(std::move(o));
  });
}

// ---- coalescing (coalescer.h) ----

namespace {

// Checks with the same script, keys and arguments but the cost share a key:
// they can go in one call. (Explicit times are arguments: checks at one
// instant coalesce, checks at different instants do not.)
void coalescing_key_into(std::string& key, const scripts::Script& script, const ScriptCall& call) {
  size_t size = std::strlen(script.name);
  for (std::string_view k : call.keys) size += 4 + k.size();
  for (size_t i = 2; i < call.args.size(); ++i) size += 4 + call.args[i].size();
  key.clear();
  key.reserve(size);
  key.append(script.name);
  auto add = [&key](std::string_view part) {
    const uint32_t n = static_cast<uint32_t>(part.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
    key.append(part);
  };
  for (std::string_view k : call.keys) add(k);
  for (size_t i = 2; i < call.args.size(); ++i) add(call.args[i]);  // args[0], args[1]: op, cost
}

std::string coalescing_key(const scripts::Script& script, const ScriptCall& call) {
  std::string key;
  coalescing_key_into(key, script, call);
  return key;
}

// coalescing_key() in this thread's buffer, for the lookup of a check that
// may lead its key: the coalescer keeps its own copy of a key it admits, in
// memory it reuses, so a lone check allocates none. Valid until this
// thread's next use (nobody holds it across a call or a callback).
const std::string& coalescing_key_here(const scripts::Script& script, const ScriptCall& call) {
  thread_local std::string buffer;
  coalescing_key_into(buffer, script, call);
  return buffer;
}

void fill_batch(Coalescer::Batch& b, const scripts::Script& script, const ScriptCall& call,
                const std::vector<LimitParams>& limits) {
  b.script = &script;
  b.keys.assign(call.keys.begin(), call.keys.end());
  b.args.assign(call.args.begin(), call.args.end());
  b.limits = limits;
}

Latch::Clock::time_point call_deadline(const Transport& t) {
  return InheritedDeadline::cap(Latch::Clock::now() + std::chrono::milliseconds(t.command_timeout_ms()));
}

// A copy of an Error for one waiter: every waiter gets an exception object
// of its own, made on the delivering thread, so that no two callers' threads
// share one (whose last owner would free it while another reads it).
std::exception_ptr own_copy(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& x) {
    return std::make_exception_ptr(x);  // an Error's copy owns its message (errors.h)
  } catch (...) {
    return e;
  }
}

void deliver(Coalescer::Waiter& w, Outcome o) {
  if (w.latch)
    w.latch->set(std::move(o));
  else
    w.done(std::move(o));
}

}  // namespace

// Checks only (a peek or a refund between them would be a decision of its
// own); a durable check needs its own WAIT.
// A cost above a limit's capacity (refused by Limiter before it gets here)
// goes alone: the scripts decide several checks only for costs that fit.
bool RedisBackend::coalescable(const Request& rq) const {
  if (!coalesce_ || rq.op != Op::kCheck || rq.durable.on() || rq.limits == nullptr) return false;
  for (const LimitParams& p : *rq.limits)
    if (rq.cost > p.capacity()) return false;
  return true;
}

RedisBackend::~RedisBackend() {
  try {
    transport_->close();
  } catch (...) {  // nothing may leave a destructor; the calls have completed
  }
}

Decision RedisBackend::evaluate(const Request& rq) {
  if (!coalescable(rq)) return evaluate_one(rq);
  Encoded e = encode(rq);  // checks the request first
  const scripts::Script& script = script_for(rq);
  std::shared_ptr<Latch> latch;
  const Latch::Clock::time_point deadline = call_deadline(*transport_);
  const std::string* key = coalescer_.get().join(coalescing_key_here(script, e.call), [&](Coalescer::Batch& b) {
    if (b.script == nullptr) fill_batch(b, script, e.call, *rq.limits);
    latch = std::make_shared<Latch>();
    b.waiters.push_back({rq.cost, latch, nullptr, deadline, nullptr});
  });
  if (key == nullptr) {
    Outcome o = latch->wait(deadline);
    if (o.error) std::rethrow_exception(o.error);
    return o.decision;
  }
  // No lane (the non-blocking path's): 64 blocking threads on as many keys
  // did 0.8x the checks/s with one (polylimit bench --threads 64, the allow
  // path): a waiting thread's keys call is one more hand-off and sleep.
  Outcome o;
  try {
    o.decision = evaluate_one(rq, &e);
  } catch (...) {
    o.error = std::current_exception();
  }
  send_next(*key, o.error);
  if (o.error) std::rethrow_exception(o.error);
  return o.decision;
}

void RedisBackend::evaluate_async(const Request& rq, std::function<void(Outcome)> done) {
  if (!coalescable(rq)) return evaluate_one_async(rq, std::move(done));
  Encoded e = encode(rq);  // checks the request first
  const scripts::Script& script = script_for(rq);
  const std::string* key = coalescer_.get().join(coalescing_key_here(script, e.call), [&](Coalescer::Batch& b) {
    if (b.script == nullptr) fill_batch(b, script, e.call, *rq.limits);
    b.waiters.push_back({rq.cost, nullptr, std::move(done), call_deadline(*transport_), Reactor::current()});
  });
  if (key == nullptr) return;  // queued behind its key's call
  // `key` and `lane` are the coalescer's and the lanes' own copies, valid
  // while this check holds its key and its lane slot: until send_next and
  // lane_done below.
  // The key's next checks go out, then the caller has its outcome.
  auto key_then_done = [&]() -> std::function<void(Outcome)> {
    return [this, key, done = std::move(done)](Outcome o) {
      send_next(*key, o.error);
      done(std::move(o));
    };
  };
  try {
    if (!has_lanes(script)) return evaluate_one_async(rq, key_then_done(), &e);
    // The check waits in the lane only when its calls are all in flight:
    // only then is a LaneCheck made (its key copied, its deadline read).
    const std::string* lane = enter_lane(script, rq, e.call, [&] {
      return LaneCheck{std::string(e.call.keys[0]), rq.cost, key_then_done(), call_deadline(*transport_),
                       Reactor::current()};
    });
    if (lane == nullptr) return;  // waits in the lane
    try {
      // One callback for the three steps (no callback wrapping another).
      evaluate_one_async(
          rq,
          [this, lane, key, done = std::move(done)](Outcome o) {
            lane_done(*lane, o.error);                 // the checks waiting in the lane go out before this caller runs
            if (o.error) o.error = own_copy(o.error);  // not the call's: a caller's thread may free it
            send_next(*key, o.error);
            done(std::move(o));
          },
          &e);
    } catch (...) {
      lane_done(*lane, std::current_exception());  // nothing was queued: the slot is free again
      throw;
    }
  } catch (...) {
    send_next(*key, std::current_exception());  // nothing was queued
    throw;
  }
}

namespace {

// The error a check queued behind a call that failed with `failed` gets, or
// null when it should still be sent (the failure was that call's own).
std::exception_ptr unsent_error(std::exception_ptr failed) {
  if (!failed) return nullptr;
  try {
    std::rethrow_exception(failed);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout && e.code() != ErrorCode::kUnavailable) return nullptr;
    Error unsent(e.code(), std::string("not sent: the call of its key in flight failed: ") + e.what());
    unsent.set_outcome_unknown(false);
    return std::make_exception_ptr(unsent);
  } catch (...) {
  }
  return nullptr;
}

}  // namespace

void RedisBackend::send_next(const std::string& key, std::exception_ptr failed) {
  const std::exception_ptr unsent = unsent_error(failed);
  for (;;) {
    std::unique_ptr<Coalescer::Batch> next = coalescer_.get().next(key);
    if (!next) return;
    if (unsent) {
      for (Coalescer::Waiter& w : next->waiters) {
        if (w.latch && !w.latch->claim()) continue;  // it has returned its own timeout
        Outcome o;
        o.error = own_copy(unsent);
        deliver(w, std::move(o));
      }
      continue;  // until nobody waits: the key has no call in flight then
    }
    // A waiter past its deadline (or a blocking one that gave up) is left
    // out: never sent, its timeout has a known outcome.
    std::vector<Coalescer::Waiter> late;
    std::vector<Coalescer::Waiter> go;
    const Latch::Clock::time_point now = Latch::Clock::now();
    for (Coalescer::Waiter& w : next->waiters) {
      if (w.latch ? !w.latch->claim() : now >= w.deadline)
        late.push_back(std::move(w));
      else
        go.push_back(std::move(w));
    }
    next->waiters = std::move(go);
    for (Coalescer::Waiter& w : late) {
      if (w.latch) continue;  // it has already returned its timeout
      Error err(ErrorCode::kTimeout, "check timed out queued behind a call of the same key; it was not sent");
      Outcome o;
      o.error = std::make_exception_ptr(err);
      deliver(w, std::move(o));
    }
    if (next->waiters.empty()) continue;  // the key stays in flight until next() finds nobody

    std::shared_ptr<Coalescer::Batch> batch(std::move(next));
    std::string costs;
    for (const Coalescer::Waiter& w : batch->waiters) {
      if (!costs.empty()) costs += ',';
      costs += std::to_string(w.cost);
    }
    round_trips_.fetch_add(1, std::memory_order_relaxed);
    script_calls_.fetch_add(1, std::memory_order_relaxed);
    coalesced_.fetch_add(static_cast<long>(batch->waiters.size()), std::memory_order_relaxed);
    try {
      // The call on a blocking thread: the batch's first blocking caller, or
      // a library thread where the transport has no non-blocking path
      // (Cluster, Sentinel). `costs` moves along: the call's views point into it.
      auto owned = std::make_shared<std::string>(std::move(costs));
      auto blocking = [this, key, batch, owned](Latch::Clock::time_point deadline) {
        ScriptCall c;
        c.keys.assign(batch->keys.begin(), batch->keys.end());
        c.args.assign(batch->args.begin(), batch->args.end());
        c.args[0] = "checks";
        c.args[1] = *owned;
        ReplyPtr reply;
        std::exception_ptr error;
        try {
          InheritedDeadline scope(deadline);  // the first waiter's: none waits past its own
          reply = transport_->run_script(*batch->script, c.keys, c.args);
        } catch (...) {
          error = std::current_exception();
        }
        finish_batch(key, batch, std::move(reply), error);
      };
      for (const Coalescer::Waiter& w : batch->waiters) {
        if (!w.latch || !w.latch->can_lead()) continue;
        const Latch::Clock::time_point deadline = w.deadline;
        if (w.latch->hand([blocking, deadline] { blocking(deadline); })) return;
        break;  // it gave up meanwhile: the paths below send the call
      }
      ScriptCall call;
      call.keys.assign(batch->keys.begin(), batch->keys.end());
      call.args.assign(batch->args.begin(), batch->args.end());
      call.args[0] = "checks";
      call.args[1] = *owned;
      auto complete = [this, key, batch](ReplyPtr reply, std::exception_ptr error) {
        finish_batch(key, batch, std::move(reply), error);
      };
      // Every waiter's poller may read the reply, not only this thread's:
      // one of them stalled (a busy event loop) holds up no other's checks.
      std::vector<std::shared_ptr<Reactor>> pollers;
      for (const Coalescer::Waiter& w : batch->waiters)
        if (w.reactor && std::find(pollers.begin(), pollers.end(), w.reactor) == pollers.end())
          pollers.push_back(w.reactor);
      Reactor::AlsoScope also(pollers);
      if (transport_->run_script_async(*batch->script, call, complete)) return;
      const Latch::Clock::time_point deadline = call_deadline(*transport_);
      transport_->run_in_background([blocking, deadline] { blocking(deadline); });
      return;
    } catch (...) {
      // Nothing was queued: these checks fail now, the next ones try again.
      const std::exception_ptr error = std::current_exception();
      for (Coalescer::Waiter& w : batch->waiters) {
        Outcome o;
        o.error = own_copy(error);
        deliver(w, std::move(o));
      }
    }
  }
}

void RedisBackend::finish_batch(const std::string& key, const std::shared_ptr<Coalescer::Batch>& batch, ReplyPtr reply,
                                std::exception_ptr error) {
  std::vector<Outcome> out;
  if (!error) {
    try {
      out = decode_batch(reply.get(), batch->waiters.size(), *batch->script, batch->limits);
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) {
    out.assign(batch->waiters.size(), Outcome{});
    for (Outcome& o : out) o.error = own_copy(error);
  }
  send_next(key, error);  // the checks queued meanwhile go out before these callers run
  for (size_t j = 0; j < out.size(); ++j) deliver(batch->waiters[j], std::move(out[j]));
}

bool RedisBackend::has_lanes(const scripts::Script& script) const {
  return coalesce_ && keys_script_for(script) != nullptr && transport_->one_node();
}

template <typename MakeCheck>
const std::string* RedisBackend::enter_lane(const scripts::Script& script, const Request& rq, const ScriptCall& call,
                                            MakeCheck&& make_check) {
  // The lane's key in this thread's buffer: found, it costs no allocation.
  thread_local std::string name;
  name.assign(script.name);
  for (size_t i = 2; i < call.args.size(); ++i) {
    name += '\0';
    name.append(call.args[i]);
  }
  Lanes& lanes = lanes_.get();
  std::unique_lock<std::mutex> lock(lanes.mu);
  auto it = lanes.map.find(name);
  if (it == lanes.map.end()) it = lanes.map.emplace(name, Lane{}).first;
  if (it->second.inflight < kLaneCalls) {
    ++it->second.inflight;
    return &it->first;
  }
  // Every call of the lane is in flight. A check waits for one of them
  // only while their replies are on their way: once they are in but unread
  // (this thread's event loop reads them after its turn, which is now
  // submitting checks), waiting would leave the server idle until then, so
  // the check goes at once, with the checks that wait (one keys call), on a
  // slot beyond the bound. (A loop that reads promptly, or several threads,
  // find the replies on their way and batch.)
  lock.unlock();
  const bool unread = Reactor::replies_unread_here();
  lock.lock();
  it = lanes.map.find(name);  // (it may have gone idle and been dropped meanwhile)
  if (it == lanes.map.end()) it = lanes.map.emplace(name, Lane{}).first;
  Lane& l = it->second;
  if (l.inflight < kLaneCalls || (unread && l.next.checks.empty())) {
    ++l.inflight;
    return &it->first;
  }
  if (l.next.checks.size() >= Coalescer::kMaxWaiting)
    throw Error(ErrorCode::kPoolExhausted, "queue full: " + std::to_string(Coalescer::kMaxWaiting) +
                                               " checks of this limit already wait for a call");
  if (l.next.single == nullptr) {
    // The first check to wait gives the keys calls their shape (every check
    // of a lane has the same); a check that goes at once copies nothing.
    l.next.single = &script;
    l.next.tail.assign(call.args.begin() + 2, call.args.end());
    l.next.limits = *rq.limits;
    l.next.now_us = rq.now_us;
  }
  l.next.checks.push_back(make_check());
  if (!unread) return nullptr;
  ++l.inflight;  // the waiting checks' slot; `lane` stays while it is held
  std::shared_ptr<LaneCall> go = take_waiting(l, false);
  const std::string* lane = &it->first;
  lock.unlock();
  if (!send_lane_call(*lane, go)) lane_done(*lane);  // nothing went: the slot goes to others, or is freed
  return nullptr;
}

std::shared_ptr<RedisBackend::LaneCall> RedisBackend::take_waiting(Lane& l, bool all) {
  auto call = std::make_shared<LaneCall>();
  call->single = l.next.single;
  call->tail = l.next.tail;
  call->limits = l.next.limits;
  call->now_us = l.next.now_us;
  std::vector<LaneCheck>& waiting = l.next.checks;
  const size_t n = all ? waiting.size() : std::min(waiting.size(), kMaxKeysPerCall);
  call->checks.assign(std::make_move_iterator(waiting.begin()), std::make_move_iterator(waiting.begin() + n));
  waiting.erase(waiting.begin(), waiting.begin() + n);
  return call;
}

void RedisBackend::lane_done(const std::string& lane, std::exception_ptr failed) {
  const std::exception_ptr unsent = unsent_error(failed);
  for (;;) {
    std::shared_ptr<LaneCall> call;
    {
      Lanes& lanes = lanes_.get();
      std::lock_guard<std::mutex> lock(lanes.mu);
      auto it = lanes.map.find(lane);
      if (it == lanes.map.end()) return;  // (not reached: a slot keeps its lane)
      Lane& l = it->second;
      if (l.next.checks.empty()) {
        // An idle lane is kept for the limit's next check (no allocation
        // then), unless many are: limits at explicit instants make one each.
        // `lane` may be the entry's own key: not read after this.
        if (--l.inflight == 0 && lanes.map.size() > kIdleLanes) lanes.map.erase(it);
        return;
      }
      call = take_waiting(l, unsent != nullptr);
    }
    if (unsent) {  // the server did not answer a call of the lane: nobody waits for two calls
      for (LaneCheck& c : call->checks) c.done(Outcome{Decision{}, own_copy(unsent)});
      continue;
    }
    if (send_lane_call(lane, call)) return;
    // Nothing went out: the slot is still this lane's.
  }
}

bool RedisBackend::send_lane_call(const std::string& lane, const std::shared_ptr<LaneCall>& call) {
  // A check past its deadline is left out: never sent, its timeout has a
  // known outcome.
  const Latch::Clock::time_point now = Latch::Clock::now();
  std::vector<LaneCheck> go;
  for (LaneCheck& c : call->checks) {
    if (now < c.deadline) {
      go.push_back(std::move(c));
      continue;
    }
    Outcome o;
    o.error = std::make_exception_ptr(
        Error(ErrorCode::kTimeout, "check timed out waiting for a call of its limit; it was not sent"));
    c.done(std::move(o));
  }
  call->checks = std::move(go);
  if (call->checks.empty()) return false;

  const scripts::Script& script = *keys_script_for(*call->single);
  auto costs = std::make_shared<std::string>();
  ScriptCall sc;
  for (const LaneCheck& c : call->checks) {
    if (!costs->empty()) *costs += ',';
    *costs += std::to_string(c.cost);
    sc.keys.push_back(c.key);
  }
  sc.args.push_back("keys");
  sc.args.push_back(*costs);
  sc.args.insert(sc.args.end(), call->tail.begin(), call->tail.end());
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  script_calls_.fetch_add(1, std::memory_order_relaxed);
  try {
    std::vector<std::shared_ptr<Reactor>> pollers;  // every check's poller may read the reply (send_next)
    for (const LaneCheck& c : call->checks)
      if (c.reactor && std::find(pollers.begin(), pollers.end(), c.reactor) == pollers.end())
        pollers.push_back(c.reactor);
    Reactor::AlsoScope also(pollers);
    // `lane` is the lanes' own key, kept while this call holds its slot.
    auto complete = [this, lane = &lane, call](ReplyPtr reply, std::exception_ptr error) {
      finish_lane(*lane, call, std::move(reply), error);
    };
    if (transport_->run_script_async(script, sc, complete)) return true;
    // No non-blocking path (Sentinel): the call on a library thread; `sc`
    // views `call` and `costs`, which it keeps.
    transport_->run_in_background([this, lane = &lane, call, costs, sc, &script] {
      ReplyPtr reply;
      std::exception_ptr error;
      try {
        reply = transport_->run_script(script, sc.keys, sc.args);
      } catch (...) {
        error = std::current_exception();
      }
      finish_lane(*lane, call, std::move(reply), error);
    });
    return true;
  } catch (...) {
    // Nothing was queued: these checks fail now, the next ones try again.
    const std::exception_ptr error = std::current_exception();
    for (LaneCheck& c : call->checks) c.done(Outcome{Decision{}, own_copy(error)});
  }
  return false;
}

void RedisBackend::finish_lane(const std::string& lane, const std::shared_ptr<LaneCall>& call, ReplyPtr reply,
                               std::exception_ptr error) {
  const size_t n = call->checks.size();
  KeysReply got;
  if (error)
    got.out.assign(n, Outcome{});
  else
    got = split_keys_reply(reply.get(), n, *keys_script_for(*call->single), call->limits);
  lane_done(lane, error);  // the checks waiting in the lane go out before these callers run
  for (size_t j : got.again) send_alone_async(call, std::move(call->checks[j]));  // its script failed: on its own
  size_t next_again = 0;
  for (size_t j = 0; j < n; ++j) {
    if (next_again < got.again.size() && got.again[next_again] == j) {
      ++next_again;
      continue;
    }
    if (error) got.out[j].error = own_copy(error);
    call->checks[j].done(std::move(got.out[j]));
  }
}

void RedisBackend::send_alone_async(const std::shared_ptr<LaneCall>& call, LaneCheck check) {
  Request rq;
  rq.limits = &call->limits;  // `call` lives until the check's answer: `done` holds it
  rq.keys.push_back(std::move(check.key));
  rq.cost = check.cost;
  rq.now_us = call->now_us;
  auto done = std::make_shared<std::function<void(Outcome)>>(std::move(check.done));
  try {
    evaluate_one_async(rq, [call, done](Outcome o) {
      if (o.error) o.error = own_copy(o.error);  // not the call's: a caller's thread may free it
      (*done)(std::move(o));
    });
  } catch (...) {  // not queued
    (*done)(Outcome{Decision{}, std::current_exception()});
  }
}

// A check whose key has a call in flight (another thread's, or an earlier
// key of this batch) waits for the next call of its key; the others go in
// this batch's pipeline as before.
std::vector<Outcome> RedisBackend::evaluate_many(const std::vector<Request>& requests) {
  if (!coalesce_) return evaluate_many_one(requests);
  std::vector<Outcome> out(requests.size());
  std::vector<Request> direct;
  std::vector<size_t> direct_index;
  std::vector<std::pair<std::string, size_t>> led;  // key, index in requests
  std::vector<std::pair<size_t, std::shared_ptr<Latch>>> queued;
  const Latch::Clock::time_point deadline = call_deadline(*transport_);
  // Keys this batch sends itself: their repeats go in the same pipeline,
  // after them (one connection keeps the order), as without coalescing.
  std::unordered_set<std::string> sending;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& rq = requests[i];
    bool lead = true;
    if (coalescable(rq)) {
      try {
        Encoded e = encode(rq);  // checks the request first
        const scripts::Script& script = script_for(rq);
        std::string key = coalescing_key(script, e.call);
        std::shared_ptr<Latch> latch;
        if (sending.count(key) == 0)
          lead = coalescer_.get().join(key, [&](Coalescer::Batch& b) {
            if (b.script == nullptr) fill_batch(b, script, e.call, *rq.limits);
            latch = std::make_shared<Latch>(false);
            b.waiters.push_back({rq.cost, latch, nullptr, deadline, nullptr});
          }) != nullptr;
        if (lead && sending.insert(key).second)
          led.emplace_back(std::move(key), i);
        else if (!lead)
          queued.emplace_back(i, std::move(latch));
      } catch (...) {
        out[i].error = std::current_exception();
        continue;
      }
    }
    if (!lead) continue;
    direct.push_back(rq);
    direct_index.push_back(i);
  }
  std::vector<Outcome> sent;
  try {
    sent = evaluate_many_one(direct);
  } catch (...) {
    sent.assign(direct.size(), Outcome{});
    for (Outcome& o : sent) o.error = std::current_exception();
  }
  for (size_t j = 0; j < sent.size(); ++j) out[direct_index[j]] = std::move(sent[j]);
  for (const auto& l : led) send_next(l.first, out[l.second].error);
  for (auto& q : queued) out[q.first] = q.second->wait(deadline);
  return out;
}

}  // namespace polylimit
