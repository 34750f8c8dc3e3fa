// coalescer.h - one script call per key in flight; checks of that key that
// arrive meanwhile wait and go together in the next call.
//
// A hot key (one tenant's whole API, an upstream's quota) costs the Redis
// thread one script call per check, and every call pays the server's
// per-call work (the command, the script's start, its arguments, TIME, the
// reply) on top of the decision. While one call of a key is in flight, the
// checks of the same key (same script, keys and arguments but the cost)
// queue here; when it completes they are sent as ONE call of op 'checks'
// (core/scripts/common/prelude.lua), in which the algorithm decides them one
// after another in memory at one server instant (state read once, written
// once), exactly as separate calls arriving back to back would.
// An uncontended check pays a map insert and erase (of a kept entry: no
// allocation): nothing waits, and its call goes out at once as before.
//
// The map is sharded by the key's hash so that checks of distinct keys
// rarely meet on one lock.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "polylimit/backend.h"
#include "polylimit/reactor.h"
#include "scripts_generated.h"

namespace polylimit {

// What a blocking check waits on while it is queued behind a call of its
// key: the outcome, its own deadline, or the call of its batch to make on
// its own thread (a blocking caller sends its batch itself, as it sends its
// own call: no library thread, no hand-off to another thread's I/O). A
// check abandoned before its call went out is never sent, so its timeout
// has a known outcome.
class Latch {
 public:
  using Clock = std::chrono::steady_clock;
  // `can_lead`: the caller waits on this latch alone, so it can run its
  // batch's call (a check_many waits on several one after another: running
  // a call for a latch it does not wait on yet could deadlock two batches).
  explicit Latch(bool can_lead = true) : can_lead_(can_lead) {}
  bool can_lead() const { return can_lead_; }
  // The call carrying the check is about to go out; false when the waiter
  // gave up first (it is then left out of the call).
  bool claim();
  // After claim(): asks the waiting thread to run `job` (its batch's call);
  // false when it has given up meanwhile.
  bool hand(std::function<void()> job);
  void set(Outcome outcome);
  // The outcome, or Error(kTimeout) once `deadline` passes (outcome unknown
  // when the check had been sent). Runs the job handed to it first.
  Outcome wait(Clock::time_point deadline);

 private:
  enum State { kQueued, kSent, kLead, kGaveUp, kDone };
  const bool can_lead_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = kQueued;
  Outcome outcome_;
  std::function<void()> job_;
};

class Coalescer {
 public:
  // Most checks in one coalesced call: the script runs them in one go and
  // holds the Redis thread meanwhile (a few microseconds each).
  static constexpr size_t kMaxChecksPerCall = 128;
  // Most checks queued behind one key's call; past it join() throws
  // kPoolExhausted ("queue full"), as a connection's queue does.
  static constexpr size_t kMaxWaiting = 4096;

  // A queued check: a blocking caller's latch, or the non-blocking path's
  // callback. A waiter still queued at its deadline is failed with a timeout
  // when its call would go out (a blocking one gives up by itself).
  struct Waiter {
    int64_t cost = 1;
    std::shared_ptr<Latch> latch;
    std::function<void(Outcome)> done;
    Latch::Clock::time_point deadline{};
    // The non-blocking caller's reactor (polylimit/reactor.h), or null: its
    // poller may read the reply of the call that carries this check.
    std::shared_ptr<Reactor> reactor;
  };
  // The queued checks of one key, with what their call needs: every waiter
  // of a key has the same script, keys and arguments but the cost.
  struct Batch {
    const scripts::Script* script = nullptr;
    std::vector<std::string> keys;
    std::vector<std::string> args;  // args[0] and args[1] (op, cost) are set per call
    std::vector<LimitParams> limits;
    std::vector<Waiter> waiters;
  };

  // Not null: no call of `key` was in flight; the caller sends its own now
  // and calls next() once it is complete, with the key returned (the
  // coalescer's copy, valid until that next() returns null: the caller need
  // not keep one). Null: a call is in flight, and `queue` (called under the
  // shard's lock) has added the caller's waiter (and filled the batch's
  // call, when it is the first).
  template <typename Queue>
  const std::string* join(const std::string& key, Queue&& queue) {
    Shard& s = shard(key);
    std::lock_guard<std::mutex> lock(s.mu);
    const std::string* lead = nullptr;
    Batch* b = enter_locked(s, key, &lead);
    if (b == nullptr) return lead;
    queue(*b);
    return nullptr;
  }
  // The checks queued since (at most kMaxChecksPerCall), whose call the
  // caller sends next and then calls next(key) again; null when none wait
  // (the key has no call in flight any more).
  std::unique_ptr<Batch> next(const std::string& key);

 private:
  using Inflight = std::unordered_map<std::string, std::unique_ptr<Batch>>;
  struct Shard {
    std::mutex mu;
    // A key is present while a call of it is in flight; its value holds the
    // checks queued behind that call (null: none).
    Inflight inflight;
    // Entries whose key went idle, kept for the next keys with their memory
    // (node and key string): a lone check allocates nothing here.
    std::vector<Inflight::node_type> spare;
  };
  static constexpr size_t kSparePerShard = 4;
  Shard& shard(const std::string& key) { return shards_[std::hash<std::string>{}(key) % shards_.size()]; }
  // join() under the shard's lock: null when `key` had no call in flight
  // (it has now: *lead is set to the entry's key), else the batch to queue
  // in (throws when it is full).
  Batch* enter_locked(Shard& s, const std::string& key, const std::string** lead);
  std::array<Shard, 64> shards_;
};

}  // namespace polylimit
