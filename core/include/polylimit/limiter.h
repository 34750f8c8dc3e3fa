// limiter.h - polylimit::Limiter: one or more limits applied to caller keys.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "polylimit/backend.h"
#include "polylimit/client.h"
#include "polylimit/decision.h"
#include "polylimit/errors.h"
#include "polylimit/headers.h"

namespace polylimit {

// Bounds that keep every number exact in C++ and in Lua (doubles, < 2^53),
// from the generated vocabulary (bounds::k*).
constexpr int64_t kMaxLimit = bounds::kLimit.max;        // units per window
constexpr int64_t kMaxWindowMs = bounds::kWindowMs.max;  // 366 days
constexpr int64_t kMaxTimestampUs = bounds::kNowUs.max;  // 2^52, ~year 2112
constexpr size_t kMaxPrefixLength = bounds::kPrefixLen.max;
constexpr size_t kMaxKeyLength = bounds::kKeyLen.max;  // bytes of an identifier
// Identifiers up to this length are stored verbatim in the Redis key name;
// longer ones under their SHA-256 (64 hex digits).
constexpr size_t kMaxVerbatimKeyLength = 128;
constexpr size_t kMaxLimitsPerLimiter = bounds::kLimits.max;
constexpr size_t kMaxBatch = bounds::kBatch.max;  // keys in one check_many

// ClockSource and FailurePolicy are generated (polylimit/vocabulary.h).

struct LimiterOptions {
  LimitParams limit;                // the limit, when `limits` is empty
  std::vector<LimitParams> limits;  // several limits (10/s AND 1000/h): all admit or none
                                    // consumes; one algorithm for all
  std::string prefix = "pl";
  ClockSource clock = ClockSource::kServer;
  // Local deny cache: after the backend denies a key with retry_after R,
  // check() of that key (same or larger cost) in this process is denied
  // locally (Decision::cached) until R has passed. 0: off; else the most
  // keys remembered (least recently used dropped first).
  size_t deny_cache_size = 0;
  FailurePolicy failure_policy = FailurePolicy::kError;
  // Circuit breaker: after this many consecutive outages, fail fast (then
  // apply failure_policy) for breaker_cooldown_ms, then let one probe
  // through. 0: no breaker.
  int breaker_failures = 0;
  int breaker_cooldown_ms = bounds::kBreakerCooldownMs.def;
  // Shadow (dry-run) mode: decide, consume and count as usual, but always
  // admit; a would-be denial is admitted with Decision::shadowed set.
  bool shadow = false;
  // Punitive block: a key denied by a check stays denied for block_ms (even
  // once the limit would admit it again). 0: off.
  int64_t block_ms = 0;
  // Failover-safe mode (docs/deployments.md): a check is admitted only once
  // its write is acknowledged by durable_replicas replicas (WAIT, pipelined
  // with the script: one round trip) and, with durable_aof, fsynced to the
  // master's AOF (WAITAOF, Redis 7.2+), within durable_timeout_ms (below the
  // client's command timeout). An admitted check that is not acknowledged in
  // time throws Error(kNotDurable) (its units stay consumed on the master),
  // which failure_policy handles as an outage. 0 replicas and no aof: off.
  int durable_replicas = 0;
  int durable_timeout_ms = bounds::kDurableTimeoutMs.def;
  bool durable_aof = false;
  // Leases (docs/limiter.md, "Leases"): check() takes lease_units units of a
  // caller key from Redis in one check and hands them out in this process
  // without a round trip for lease_ms; what is left unused goes back (a
  // refund) when the lease ends or the client closes. Admissions can then
  // exceed the limit in a window by at most lease_units per limiter object
  // that holds leases on the key. 0: off. lease_ms must not exceed the
  // shortest window; block_ms cannot be combined with leases.
  int64_t lease_units = 0;
  int64_t lease_ms = bounds::kLeaseMs.def;
};

// The algorithm's segment in storage keys (it names the storage layout).
const char* storage_segment(Algorithm algorithm) noexcept;

// Throws Error(kInvalidArgument) unless n keys fit in one batch.
void check_batch_size(size_t n);

// Throws Error(kInvalidArgument) naming the bad part of one limit.
void validate(const LimitParams& limit);

class DenyCache;
class Breaker;
class MemoryBackend;
class LeaseTable;

class Limiter {
 public:
  // Validates the options; throws Error(kInvalidArgument) naming the field.
  Limiter(std::shared_ptr<Client> client, LimiterOptions options);
  ~Limiter();
  Limiter(Limiter&&) noexcept;

  Decision check(std::string_view key, int64_t cost = 1);
  // As check, at an explicit time (microseconds since the epoch).
  Decision check_at(std::string_view key, int64_t cost, int64_t now_us);
  Decision peek(std::string_view key);
  void reset(std::string_view key);

  // Gives back up to `units` units taken earlier (after a failed operation),
  // then reports like peek. Sliding log: the newest units; fixed window and
  // sliding counter: units of the current window; GCRA: moves the TAT back.
  Decision refund(std::string_view key, int64_t units);

  // As check, with limits given for this call only (the limit can change at
  // run time): same algorithm as the limiter; no deny cache.
  Decision check_with(std::string_view key, int64_t cost, const std::vector<LimitParams>& limits);

  // Admits as many units as fit now, up to max_cost (at least 1 to be
  // admitted); Decision::granted says how many. Never over-admits: the grant
  // is an all-or-nothing check of what a peek found free (a race retries).
  Decision check_at_most(std::string_view key, int64_t max_cost);

  // Blocks until cost units are admitted or until `timeout` would pass
  // (sleeping retry_after between tries); returns the last decision, denied
  // when the wait would outlast the timeout.
  Decision acquire(std::string_view key, int64_t cost, std::chrono::milliseconds timeout);

  // Decides many keys, pipelined in one round trip; one Outcome per key, in
  // order (an error for one key does not fail the others).
  std::vector<Outcome> check_many(const std::vector<std::string_view>& keys, int64_t cost = 1);

  // The storage key for a caller key: prefix, algorithm segment, a hash tag
  // derived from the key (so a caller's braces cannot pick the Cluster slot),
  // then ":" and the key, or "#" and its SHA-256 when it is longer than
  // kMaxVerbatimKeyLength bytes.
  // Limit i > 0 of a multi-limit limiter appends ":<i>" (same tag, same slot).
  std::string storage_key(std::string_view key) const;
  std::vector<std::string> storage_keys(std::string_view key) const;

  // The HTTP rate-limit headers for a decision of this limiter (headers.h).
  std::vector<Header> headers(const Decision& decision) const { return rate_limit_headers(decision, limits_); }

  const LimiterOptions& options() const { return options_; }
  const std::vector<LimitParams>& limits() const { return limits_; }

  // check() without waiting for Redis: `done` runs once with the decision
  // or the error (after the failure policy, exactly as check() would return
  // or throw), on a library thread, or before this returns when no round
  // trip is needed (deny cache, open breaker). Bad arguments and a closed
  // client throw here instead. `self` is kept alive until `done` has run.
  using CheckDone = std::function<void(const Decision& decision, std::exception_ptr error)>;
  static void check_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost, CheckDone done);

  // The other calls without waiting, with check_async's contract: `done`
  // runs exactly once with what the blocking call returns or throws; bad
  // arguments and a closed client throw here instead; `self` lives until
  // `done` has run. The key is copied: it need not outlive the call.
  static void peek_async(const std::shared_ptr<Limiter>& self, std::string_view key, CheckDone done);
  static void refund_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t units, CheckDone done);
  static void check_with_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost,
                               std::vector<LimitParams> limits, CheckDone done);
  // A peek, then a check of what was free (retried up to four times on a
  // lost race), each step submitted from the completion of the one before.
  static void check_at_most_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t max_cost,
                                  CheckDone done);
  // No thread sleeps for the caller: a denied try schedules the next one on
  // the client's timer (Client::run_at), which close() fires at once.
  static void acquire_async(const std::shared_ptr<Limiter>& self, std::string_view key, int64_t cost,
                            std::chrono::milliseconds timeout, CheckDone done);
  using ResetDone = std::function<void(std::exception_ptr error)>;
  static void reset_async(const std::shared_ptr<Limiter>& self, std::string_view key, ResetDone done);
  // One Outcome per key, in order, as check_many returns them. The keys are
  // submitted back to back, so each connection's auto-pipelining sends them
  // together; the circuit breaker counts the batch once, as check_many does.
  using ManyDone = std::function<void(std::vector<Outcome> outcomes)>;
  static void check_many_async(const std::shared_ptr<Limiter>& self, const std::vector<std::string_view>& keys,
                               int64_t cost, ManyDone done);

 private:
  // What a check answers for the backend's outcome of `request`: the
  // breaker learns from it; an outage goes through the failure policy;
  // other errors are returned as they are.
  Outcome settle(const Request& request, Outcome outcome);
  Error breaker_open() const;  // what an open circuit breaker fails a check with
  int64_t now() const;
  void validate_key(std::string_view key) const;
  void validate_cost(int64_t cost) const;
  void validate_cost(int64_t cost, const std::vector<LimitParams>& limits) const;
  Request request(Op op, std::string_view key, int64_t cost, int64_t now_us,
                  const std::vector<LimitParams>* limits = nullptr) const;
  Decision finish(Decision d) const;  // shadow mode

  std::shared_ptr<Client> client_;
  LimiterOptions options_;
  std::vector<LimitParams> limits_;  // options_.limits, or {options_.limit}
  Decision decide(const Request& request);
  std::vector<Outcome> decide_many(const std::vector<Request>& requests);
  // decide_many's work after the backend answered (`evaluated`: it was
  // asked, the breaker was closed): grants, the breaker, the failure policy.
  std::vector<Outcome> settle_many(const std::vector<Request>& requests, std::vector<Outcome> out, bool evaluated);
  // decide() without waiting: the breaker, the backend, settle().
  static void decide_async(const std::shared_ptr<Limiter>& self, std::shared_ptr<const Request> request,
                           std::function<void(Outcome)> done);
  // decide_async() for a caller whose state, one allocation, holds what the
  // completion needs: `state->self`, `state->request()`, and
  // `state->done(Outcome)`, which gets the outcome (limiter.cpp).
  template <typename State>
  static void decide_in(const std::shared_ptr<State>& state);

  // A check_many split around its round trip, so that the blocking and the
  // non-blocking forms share both halves.
  struct Batch {
    std::vector<Outcome> out;         // one per key; filled by validation and the deny cache first
    std::vector<Request> requests;    // the keys that need the backend
    std::vector<size_t> index;        // requests[j] decides out[index[j]]
    std::vector<std::string> cached;  // with a deny cache: requests[j]'s caller key
    int64_t cost = 1;
    std::chrono::steady_clock::time_point started{}, t0{};
    uint64_t epoch = 0;
  };
  Batch plan_many(const std::vector<std::string_view>& keys, int64_t cost);
  std::vector<Outcome> finish_many(Batch& batch, std::vector<Outcome> decided);
  friend struct AsyncSteps;  // limiter.cpp: the multi-step non-blocking calls
  Decision degrade(const Request& request, const Error& error);

  Durability durable_;  // from the durable_* options; off unless asked for
  std::unique_ptr<DenyCache> deny_cache_;
  std::unique_ptr<Breaker> breaker_;
  std::unique_ptr<MemoryBackend> fallback_;  // FailurePolicy::kLocal

  // Leases (lease.cpp). leased_check is check() when lease_units > 0.
  Decision leased_check(std::string_view key, int64_t cost);
  Decision check_unleased(std::string_view key, int64_t cost);
  std::shared_ptr<LeaseTable> leases_;
  std::shared_ptr<std::function<void()>> close_hook_;  // gives the leases back when the client closes
};

}  // namespace polylimit
