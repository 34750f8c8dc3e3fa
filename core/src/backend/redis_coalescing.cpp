// redis_coalescing.cpp - RedisBackend's coalescing (coalescer.h): checks of one
// key that wait behind a call of it go out together, on the blocking path
// and in check_many.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_set>

#include "backend/redis_backend.h"
#include "backend/redis_calls.h"
#include "net/call_deadline.h"

namespace polylimit {
namespace redis_calls {

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

}  // namespace redis_calls

using namespace redis_calls;

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
