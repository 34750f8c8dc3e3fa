// redis_calls.h - what RedisBackend's three files share (redis_backend.cpp:
// scripts and replies; redis_coalescing.cpp: coalescing; redis_lanes.cpp:
// lanes). Internal to the backend layer.
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "backend/coalescer.h"
#include "polylimit/backend.h"
#include "scripts_generated.h"
#include "transport/transport.h"

namespace polylimit {
namespace redis_calls {

// ---- scripts and replies (redis_backend.cpp) ----

// The script a request runs: a single-check script for a check of one
// limit without a block, else the general script of its algorithm.
const scripts::Script& script_for(const Request& rq);
// The keys call of a single-check script, or null for a general script.
const scripts::Script* keys_script_for(const scripts::Script& single);
// The reply of a coalesced call of `count` checks: each check's outcome.
std::vector<Outcome> decode_batch(const Reply* r, size_t count, const scripts::Script& script,
                                  const std::vector<LimitParams>& limits);
// The reply of a keys call of `count` checks: each check's outcome, and the
// checks whose script failed (their `out` left empty), to send again alone.
struct KeysReply {
  std::vector<Outcome> out;
  std::vector<size_t> again;
};
KeysReply split_keys_reply(const Reply* r, size_t count, const scripts::Script& script,
                           const std::vector<LimitParams>& limits);

// ---- coalescing (redis_coalescing.cpp) ----

// The key checks that can go in one call share (script, keys, arguments
// but the op and the cost).
std::string coalescing_key(const scripts::Script& script, const ScriptCall& call);
// The same in this thread's buffer, valid until this thread's next use.
const std::string& coalescing_key_here(const scripts::Script& script, const ScriptCall& call);
// Gives a coalesced call's batch the shape of `call`.
void fill_batch(Coalescer::Batch& b, const scripts::Script& script, const ScriptCall& call,
                const std::vector<LimitParams>& limits);
// When a call made now must be answered: the transport's command timeout,
// or an inherited deadline that comes first.
Latch::Clock::time_point call_deadline(const Transport& t);
// A copy of an Error for one waiter (no two callers' threads share one).
std::exception_ptr own_copy(const std::exception_ptr& e);
// The error a check queued behind a call that failed with `failed` gets, or
// null when it should still be sent (the failure was that call's own).
std::exception_ptr unsent_error(std::exception_ptr failed);

}  // namespace redis_calls
}  // namespace polylimit
