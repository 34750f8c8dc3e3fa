// redis_backend.h - runs the algorithms as Lua scripts on Redis.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "polylimit/backend.h"
#include "transport.h"

namespace polylimit {

// Decodes one script reply into a Decision, as RedisBackend does: an error
// reply throws its mapped Error, any other shape or a number out of range
// throws Error(kServer). Internal (tests/fuzz/fuzz_reply.cpp), not in the C ABI.
Decision decode_script_reply(const redisReply* reply, const std::vector<LimitParams>& limits);

class RedisBackend : public Backend {
 public:
  explicit RedisBackend(std::unique_ptr<Transport> transport);

  using Backend::evaluate;
  using Backend::reset;
  Decision evaluate(const Request& request) override;
  std::vector<Outcome> evaluate_many(const std::vector<Request>& requests) override;
  void evaluate_async(const Request& request, std::function<void(Outcome)> done) override;
  void reset(const std::vector<std::string>& keys) override;
  void reset_async(const std::vector<std::string>& keys, std::function<void(std::exception_ptr)> done) override;
  long round_trips() const override { return round_trips_.load(std::memory_order_relaxed); }
  long noscript_reloads() const override { return transport_->noscript_reloads(); }
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

  std::unique_ptr<Transport> transport_;
  std::atomic<long> round_trips_{0};
};

}  // namespace polylimit
