// backend.h - where the algorithms run: Redis (Lua scripts) or this process.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "polylimit/decision.h"
#include "polylimit/vocabulary.h"

namespace polylimit {

// enum class Algorithm is generated (polylimit/vocabulary.h, via errors.h).

const char* algorithm_name(Algorithm algorithm) noexcept;

// One limit: `limit` units per `window_ms`. `burst` is GCRA's bucket capacity
// (units admitted at once); 0 means `limit`. Other algorithms require 0.
struct LimitParams {
  Algorithm algorithm = Algorithm::kSlidingLog;
  int64_t limit = 0;
  int64_t window_ms = 0;
  int64_t burst = 0;

  // The most units one decision can report or admit at once.
  int64_t capacity() const { return algorithm == Algorithm::kGcra && burst > 0 ? burst : limit; }
  // GCRA's emission interval: window / limit, rounded up to a microsecond so
  // that the integer arithmetic never admits faster than the stated rate.
  int64_t interval_us() const { return (window_ms * 1000 + limit - 1) / limit; }
};

enum class Op {
  kCheck,   // admit `cost` units, all or nothing
  kPeek,    // report what a check of `cost` would answer; consume nothing
  kRefund,  // give `cost` units back (as far as they were taken), then answer as a peek of 1
};

// Time passed to a backend: microseconds since the epoch, or kServerTime to
// let the backend read its own clock (Redis TIME, or the memory clock).
constexpr int64_t kServerTime = -1;

// Failover-safe mode (LimiterOptions::durable_*): a check counts as admitted
// only once its write is acknowledged (WAIT, or WAITAOF with `aof`, sent with
// the script in one round trip). Off when replicas == 0 and !aof.
struct Durability {
  int replicas = 0;    // replicas that must acknowledge the write
  bool aof = false;    // also fsynced to the master's AOF (WAITAOF 1 replicas)
  int timeout_ms = 0;  // how long the server waits for them (WAIT's timeout; >= 1)
  bool on() const { return replicas > 0 || aof; }
};

// One decision over several limits of one caller key. `keys[i]` is the full
// storage key of `limits[i]` (prefix and hash tag applied by Limiter); all
// limits use one algorithm and all keys share one hash tag.
struct Request {
  Op op = Op::kCheck;
  const std::vector<LimitParams>* limits = nullptr;
  std::vector<std::string> keys;
  int64_t cost = 1;
  int64_t now_us = kServerTime;
  // Punitive block: a denied check blocks the caller key for block_us (every
  // check denied until it ends); the end time is stored at block_key.
  int64_t block_us = 0;
  std::string block_key;
  // kCheck only: an admitted check's write must be acknowledged, else the
  // check fails with kNotDurable. A denial needs no acknowledgement, and
  // peeks, refunds and resets send no WAIT: losing their writes in a
  // failover can only admit less.
  Durability durable;
};

// What one limit answered inside a multi-limit decision.
struct LimitResult {
  int64_t limit = 0;
  int64_t remaining = 0;
  int64_t retry_after_ms = 0;
  int64_t reset_after_ms = 0;
};

// Folds per-limit results into one Decision: the limit that denied with the
// longest wait, or (when all admit) the one with the least remaining. The
// retry is the longest wait, the reset the longest time to full capacity.
Decision combine(bool allowed, const std::vector<LimitResult>& results);

// A decision or the error that prevented it (batch calls).
struct Outcome {
  Decision decision;
  std::exception_ptr error;  // null when `decision` holds
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Decision evaluate(const Request& request) = 0;
  // Many independent requests; a Redis backend pipelines them in one round
  // trip. An error in one request does not fail the others.
  virtual std::vector<Outcome> evaluate_many(const std::vector<Request>& requests);
  // evaluate without waiting: `done` runs once with the outcome, later on a
  // library thread, or before this returns (in process, or when the request
  // fails at once). The request's limits must outlive the call.
  virtual void evaluate_async(const Request& request, std::function<void(Outcome)> done);
  virtual void reset(const std::vector<std::string>& keys) = 0;
  // reset without waiting: `done` runs once with null or the error, later on
  // a library thread, or before this returns. Throws (and `done` never runs)
  // when nothing could be queued.
  virtual void reset_async(const std::vector<std::string>& keys, std::function<void(std::exception_ptr)> done);

  // Runs `job`, which makes blocking calls on this backend, so that a
  // non-blocking caller does not wait for it: on a library thread (Redis),
  // or at once (in process, where no call blocks).
  virtual void run_blocking(std::function<void()> job) { job(); }

  // Round trips to the server (0 for in-process backends).
  virtual long round_trips() const { return 0; }
  virtual long noscript_reloads() const { return 0; }
  // Script calls sent (0 in process); a coalesced call counts once.
  virtual long script_calls() const { return 0; }
  // Checks decided in a coalesced call (several checks of one key in one
  // script call); 0 in process.
  virtual long coalesced() const { return 0; }
  // Releases connections (the client was closed); in-process backends keep
  // nothing to release.
  virtual void close() {}
  // Redis nodes whose maxmemory policy can evict limiter keys (0 in process).
  virtual long evicting_nodes() { return 0; }
  // Connects tried to Redis data nodes (made or failed); 0 in process.
  virtual long connect_attempts() { return 0; }
  // Throws Error(kInvalidArgument) when this backend cannot honour `durable`
  // (a WAIT timeout that does not fit in the command timeout). In process
  // there is no failover to survive: every decision is durable.
  virtual void check_durability(const Durability& durable) const { (void)durable; }

  // One limit, one key: the shape of 1.0.
  Decision evaluate(Op op, const LimitParams& params, const std::string& key, int64_t cost, int64_t now_us);
  void reset(const std::string& key) { reset(std::vector<std::string>{key}); }
};

}  // namespace polylimit
