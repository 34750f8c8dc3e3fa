// redis_backend.h - runs the algorithms as Lua scripts on Redis.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/coalescer.h"
#include "polylimit/backend.h"
#include "transport/transport.h"
#include "util/per_process.h"

namespace polylimit {

// Decodes one script reply into a Decision, as RedisBackend does: an error
// reply throws its mapped Error, any other shape or a number out of range
// throws Error(kServer). Internal (tests/fuzz/fuzz_reply.cpp), not in the C ABI.
Decision decode_script_reply(const Reply* reply, const std::vector<LimitParams>& limits);

class RedisBackend : public Backend {
 public:
  // `coalesce`: checks of one key that wait behind a call of it go out
  // together as one call (coalescer.h), checks of one limit on different
  // keys as keys calls (check_many, lanes); off, every check is its own call.
  explicit RedisBackend(std::unique_ptr<Transport> transport, bool coalesce = true);
  // Closes the transport first: the calls still in flight complete (with
  // kClosed) through the coalescer and the lanes, which must still exist.
  ~RedisBackend() override;

  // Calls of one lane (see Lane below) in flight at once while their
  // replies are on their way; a check that finds them all going waits,
  // unless their replies are in already (enter_lane).
  static constexpr int kLaneCalls = 4;
  // Idle lanes kept for their limit's next check (past it, a lane that goes
  // idle is dropped).
  static constexpr size_t kIdleLanes = 64;

  using Backend::evaluate;
  using Backend::reset;
  Decision evaluate(const Request& request) override;
  std::vector<Outcome> evaluate_many(const std::vector<Request>& requests) override;
  void evaluate_async(const Request& request, std::function<void(Outcome)> done) override;
  void reset(const std::vector<std::string>& keys) override;
  void reset_async(const std::vector<std::string>& keys, std::function<void(std::exception_ptr)> done) override;
  long round_trips() const override { return round_trips_.load(std::memory_order_relaxed); }
  long noscript_reloads() const override { return transport_->noscript_reloads(); }
  long script_calls() const override { return script_calls_.load(std::memory_order_relaxed); }
  long coalesced() const override { return coalesced_.load(std::memory_order_relaxed); }
  void run_blocking(std::function<void()> job) override { transport_->run_blocking_job(std::move(job)); }
  void close() override { transport_->close(); }
  long evicting_nodes() override { return transport_->evicting_nodes(); }
  long connect_attempts() override { return transport_->connect_attempts(); }
  void check_durability(const Durability& durable) const override;

  Transport& transport() { return *transport_; }

 private:
  // One script call: its numbers written one after another into `digits`
  // (sized up front, never grown: the views in `call` point into it, and a
  // moved vector keeps its elements where they are).
  struct Encoded {
    std::vector<char> digits;
    ScriptCall call;
  };
  Encoded encode(const Request& request);

  // One check, one call (no coalescing): the 1.0 path.
  // `encoded`: the request's encode(), when the caller has it already.
  Decision evaluate_one(const Request& request, const Encoded* encoded = nullptr);
  std::vector<Outcome> evaluate_many_one(const std::vector<Request>& requests);
  // Most checks in one keys call (core/scripts/single/common/keys.lua): the
  // script holds the Redis thread for all of them.
  static constexpr size_t kMaxKeysPerCall = 128;
  static bool same_instant_and_limits(const std::vector<Encoded>& encoded);
  // One pipeline of `calls` of `script`, for requests[group[j]]: out[group[j]].
  void send_group(const scripts::Script& script, const std::vector<Request>& requests, const std::vector<size_t>& group,
                  const std::vector<ScriptCall>& calls, const Durability& durability, std::vector<Outcome>& out);
  // Checks of one limit and instant, on any keys, decided in keys calls of
  // `single`'s algorithm; out[group[j]] as send_group gives.
  void evaluate_keys(const scripts::Script& single, const std::vector<Request>& requests,
                     const std::vector<size_t>& group, const std::vector<Encoded>& encoded, std::vector<Outcome>& out);
  // `encoded`: the request's encode(), when the caller has it already.
  void evaluate_one_async(const Request& request, std::function<void(Outcome)> done, const Encoded* encoded = nullptr);
  bool coalescable(const Request& request) const;
  // Sends the checks queued behind the call of `key` that just completed,
  // as one call; when none wait, the key has no call in flight any more.
  // When that call failed because the server did not answer or could not be
  // reached (`failed`: kTimeout, kUnavailable), the queued checks fail at
  // once with its error, unsent (known outcome): each waits for at most one
  // call, as calls queued on a connection that times out do.
  void send_next(const std::string& key, std::exception_ptr failed = nullptr);
  void finish_batch(const std::string& key, const std::shared_ptr<Coalescer::Batch>& batch, ReplyPtr reply,
                    std::exception_ptr error);

  // Lanes: checks of one limit (one script and arguments but the key and
  // the cost) on the non-blocking path. At most kLaneCalls calls of a lane
  // are in flight; checks that lead their key meanwhile wait in the lane and
  // go out together as one keys call (core/scripts/single/common/keys.lua)
  // when one of them completes: under load the server's per-call work is
  // paid once for many keys, and a lone caller's check goes out at once as
  // before. Each decides as its own call would (the per-key coalescer still
  // orders the checks of one key). Blocking checks have no lane (see
  // evaluate()).

  // A waiting check: its key and cost, and its caller's callback.
  struct LaneCheck {
    std::string key;
    int64_t cost = 1;
    std::function<void(Outcome)> done;
    Latch::Clock::time_point deadline{};
    std::shared_ptr<Reactor> reactor;  // its poller may read the reply (send_next)
  };
  // A keys call: the lane's script, arguments and limit, and its checks.
  struct LaneCall {
    const scripts::Script* single = nullptr;
    std::vector<std::string> tail;  // args[2..]
    std::vector<LimitParams> limits;
    int64_t now_us = kServerTime;
    std::vector<LaneCheck> checks;
  };
  struct Lane {
    int inflight = 0;
    LaneCall next;  // the checks that wait, and their shape (set by the first)
  };
  struct Lanes {
    std::mutex mu;
    std::unordered_map<std::string, Lane> map;
  };
  // Whether checks of `script` have lanes: not a general script, not in
  // Cluster, not with coalescing off.
  bool has_lanes(const scripts::Script& script) const;
  // Takes a slot of the check's lane (its key, the lanes' own copy, valid
  // while the slot is held: pass it to lane_done), or queues the check
  // `make_check()` makes in it (null); throws kPoolExhausted when too many
  // wait. `rq` and its `call` give the lane's keys calls their shape. A
  // template (defined and used in redis_lanes.cpp only): a std::function
  // of the caller's lambda would allocate for every check, waiting or not.
  template <typename MakeCheck>
  const std::string* enter_lane(const scripts::Script& script, const Request& rq, const ScriptCall& call,
                                MakeCheck&& make_check);
  // A call of `lane` completed (or was never sent): its slot goes to the
  // checks waiting in the lane, as one keys call, or is freed. When it
  // failed because the server did not answer or could not be reached
  // (`failed`: kTimeout, kUnavailable), the waiting checks fail at once,
  // unsent (as send_next's).
  void lane_done(const std::string& lane, std::exception_ptr failed = nullptr);
  // Moves the checks waiting in `l` (at most kMaxKeysPerCall, or `all`)
  // into a keys call of the lane's shape. Under the lanes' lock.
  std::shared_ptr<LaneCall> take_waiting(Lane& l, bool all);
  // Sends `call` on a slot of `lane` that the caller holds: true when it
  // went out (the slot is the call's until it completes), false when none
  // of its checks was left to send (each past its deadline, or failed
  // because the call could not be queued): the slot is still the caller's.
  bool send_lane_call(const std::string& lane, const std::shared_ptr<LaneCall>& call);
  void finish_lane(const std::string& lane, const std::shared_ptr<LaneCall>& call, ReplyPtr reply,
                   std::exception_ptr error);
  // A check of a keys call that must go again on its own, as its own call
  // (evaluate_one_async).
  void send_alone_async(const std::shared_ptr<LaneCall>& call, LaneCheck check);

  std::unique_ptr<Transport> transport_;
  const bool coalesce_;
  // Per process: a forked child must not wait behind calls in flight in its
  // parent (they never complete there), nor take the parent's shard locks.
  PerProcess<Coalescer> coalescer_;
  PerProcess<Lanes> lanes_;
  std::atomic<long> round_trips_{0};
  std::atomic<long> script_calls_{0};  // EVALSHA calls (a coalesced one counts once)
  std::atomic<long> coalesced_{0};     // checks decided in a coalesced call
};

}  // namespace polylimit
