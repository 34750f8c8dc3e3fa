// redis_backend.h - runs the algorithms as Lua scripts on Redis.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "coalescer.h"
#include "per_process.h"
#include "polylimit/backend.h"
#include "transport.h"

namespace polylimit {

// Decodes one script reply into a Decision, as RedisBackend does: an error
// reply throws its mapped Error, any other shape or a number out of range
// throws Error(kServer). Internal (tests/fuzz/fuzz_reply.cpp), not in the C ABI.
Decision decode_script_reply(const redisReply* reply, const std::vector<LimitParams>& limits);

class RedisBackend : public Backend {
 public:
  // `coalesce`: checks of one key that wait behind a call of it go out
  // together as one call (coalescer.h); off, every check is its own call.
  explicit RedisBackend(std::unique_ptr<Transport> transport, bool coalesce = true);

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
  // `encoded`: the request's encode(), when the caller has it already.
  void evaluate_one_async(const Request& request, std::function<void(Outcome)> done,
                          const Encoded* encoded = nullptr);
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

  std::unique_ptr<Transport> transport_;
  const bool coalesce_;
  // Per process: a forked child must not wait behind calls in flight in its
  // parent (they never complete there), nor take the parent's shard locks.
  PerProcess<Coalescer> coalescer_;
  std::atomic<long> round_trips_{0};
  std::atomic<long> script_calls_{0};  // EVALSHA calls (a coalesced one counts once)
  std::atomic<long> coalesced_{0};     // checks decided in a coalesced call
};

}  // namespace polylimit
