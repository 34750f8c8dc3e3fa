// redis_lanes.cpp - RedisBackend's non-blocking checks: each goes behind its
// key's call (coalescing), then in its limit's lane, whose waiting checks go
// out together as keys calls (redis_backend.h, "Lanes").
#include <algorithm>
#include <memory>
#include <string>

#include "backend/redis_backend.h"
#include "backend/redis_calls.h"
#include "net/call_deadline.h"

namespace polylimit {

using namespace redis_calls;

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
  std::shared_ptr<LaneCall> go;
  try {
    go = take_waiting(l, false);  // moves nothing when it throws
  } catch (...) {
    return nullptr;  // queued: it goes when a call of the lane completes
  }
  ++l.inflight;  // the waiting checks' slot; `lane` stays while it is held
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

}  // namespace polylimit
