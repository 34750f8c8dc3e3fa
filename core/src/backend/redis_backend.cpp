// redis_backend.cpp - Request to script call, script reply to Decision: the
// one-call-per-check paths (RedisBackend's coalescing: redis_coalescing.cpp,
// its lanes: redis_lanes.cpp).
#include "backend/redis_backend.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_set>

#include "backend/redis_calls.h"
#include "net/call_deadline.h"
#include "net/redis_errors.h"

namespace polylimit {
namespace redis_calls {

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
void numbers_into(std::vector<int64_t>& out, const Reply* r, const char* script) {
  auto bad = [script](const std::string& what) {
    return Error(ErrorCode::kServer, std::string("script ") + script + ": " + what);
  };
  out.clear();
  if (r->type == ReplyType::kArray) {
    out.reserve(r->elements);
    for (size_t i = 0; i < r->elements; ++i) {
      if (r->element[i]->type != ReplyType::kInteger)
        throw bad("reply element " + std::to_string(i) + " is not an integer");
      out.push_back(r->element[i]->integer);
    }
  } else if (r->type == ReplyType::kString) {
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

std::vector<int64_t> numbers_of(const Reply* r, const char* script) {
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
Decision decode(const Reply* r, const scripts::Script& script, const std::vector<LimitParams>& limits) {
  if (r->type == ReplyType::kError)
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
std::vector<Outcome> decode_batch(const Reply* r, size_t count, const scripts::Script& script,
                                  const std::vector<LimitParams>& limits) {
  if (r->type == ReplyType::kError)
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
KeysReply split_keys_reply(const Reply* r, size_t count, const scripts::Script& script,
                           const std::vector<LimitParams>& limits) {
  const size_t each = 1 + 4 * limits.size();
  KeysReply k;
  std::vector<int64_t> numbers;
  try {
    if (r->type == ReplyType::kError)
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

}  // namespace redis_calls

using namespace redis_calls;

Decision decode_script_reply(const Reply* reply, const std::vector<LimitParams>& limits) {
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
  if (r->type == ReplyType::kError) throw_reply_error(std::string(r->str, r->len), "DEL");
}

void RedisBackend::reset_async(const std::vector<std::string>& keys, std::function<void(std::exception_ptr)> done) {
  if (keys.empty()) return done(nullptr);
  Argv argv{"DEL"};
  for (const auto& k : keys) argv.push_back(k);
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  if (transport_->run_command_async(keys[0], argv, [done](ReplyPtr r, std::exception_ptr error) {
        if (!error && r->type == ReplyType::kError) {
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

}  // namespace polylimit
