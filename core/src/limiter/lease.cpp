// lease.cpp - leased checks: lock-free admissions from a local block of
// units, one renewal at a time per key (docs/limiter.md, "Leases").
#include "limiter/lease.h"

#include <algorithm>
#include <chrono>

#include "backend/memory_backend.h"
#include "polylimit/limiter.h"
#include "util/clock.h"

namespace polylimit {
namespace {

// More entries than this and a new key first sweeps out idle ones.
constexpr size_t kSweepAbove = 65536;

uint64_t us_since(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count());
}

}  // namespace

std::shared_ptr<Lease> LeaseTable::get_or_add(std::string_view key, const std::vector<std::string>& storage_keys) {
  std::string k(key);
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = map_.find(k);
    if (it != map_.end()) return it->second;
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = map_.find(k);
  if (it != map_.end()) return it->second;
  if (map_.size() >= kSweepAbove) {
    // Idle: nobody holds the entry (use_count 1) and its lease has no units.
    for (auto i = map_.begin(); i != map_.end();) {
      if (i->second.use_count() == 1 && (i->second->state.load() & Lease::kUnitsMask) == 0)
        i = map_.erase(i);
      else
        ++i;
    }
  }
  auto lease = std::make_shared<Lease>();
  lease->keys = storage_keys;
  map_.emplace(std::move(k), lease);
  return lease;
}

std::optional<Request> LeaseTable::end_lease(Lease& lease, int64_t now_ns, int64_t now_us) {
  const int64_t left = lease.close();
  if (left == 0) return std::nullopt;
  if (now_ns >= lease.refundable_until_ns) {
    // Redis has already let these units go (the window moved): a refund now
    // would give back units nobody holds.
    client_->metrics().stranded(static_cast<uint64_t>(left));
    return std::nullopt;
  }
  Request r;
  r.op = Op::kRefund;
  r.limits = &limits_;
  r.keys = lease.keys;
  r.cost = left;
  r.now_us = now_us;
  return r;
}

void LeaseTable::count_refund(const Request& refund, bool given_back) {
  const auto units = static_cast<uint64_t>(refund.cost);
  if (given_back)
    client_->metrics().refunded(units);
  else
    client_->metrics().stranded(units);  // not given back (or not known to be): Redis frees them with the window
}

int64_t LeaseTable::refund_now_us() const { return clock_ == ClockSource::kClient ? realtime_us() : kServerTime; }

void LeaseTable::give_back(Lease& lease, int64_t now_ns) {
  std::optional<Request> r = end_lease(lease, now_ns, refund_now_us());
  if (!r) return;
  bool ok = true;
  try {
    client_->backend().evaluate(*r);
  } catch (...) {
    ok = false;
  }
  count_refund(*r, ok);
}

void LeaseTable::close_all() {
  std::vector<std::shared_ptr<Lease>> all;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (auto& kv : map_) all.push_back(kv.second);
  }
  // Every lease ends first (no unit of it is handed out after that); the
  // units still refundable then go back in pipelines of up to kMaxBatch
  // refunds: one round trip for many keys, not one each (a limiter keyed by
  // client may hold thousands of leases when it is closed).
  const int64_t now = now_ns();
  const int64_t now_us = refund_now_us();
  std::vector<Request> refunds;
  auto send = [&] {
    if (refunds.empty()) return;
    std::vector<Outcome> outcomes;
    try {
      outcomes = client_->backend().evaluate_many(refunds);
    } catch (...) {
      outcomes.clear();
    }
    for (size_t i = 0; i < refunds.size(); ++i) count_refund(refunds[i], i < outcomes.size() && !outcomes[i].error);
    refunds.clear();
  };
  for (auto& lease : all) {
    std::lock_guard<std::mutex> lock(lease->mu);  // waits for a renewal under way
    if (std::optional<Request> r = end_lease(*lease, now, now_us)) refunds.push_back(std::move(*r));
    if (refunds.size() == kMaxBatch) send();
  }
  send();
}

void LeaseTable::drop(std::string_view key) {
  std::shared_ptr<Lease> lease;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = map_.find(std::string(key));
    if (it == map_.end()) return;
    lease = it->second;
  }
  std::lock_guard<std::mutex> lock(lease->mu);
  lease->close();
  lease->denied_cost = 0;
}

void LeaseTable::forget_denial(std::string_view key) {
  std::shared_ptr<Lease> lease;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = map_.find(std::string(key));
    if (it == map_.end()) return;
    lease = it->second;
  }
  std::lock_guard<std::mutex> lock(lease->mu);
  lease->denied_cost = 0;
}

Decision Limiter::leased_check(std::string_view key, int64_t cost) {
  Metrics& m = client_->metrics();
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t now_ns = leases_->now_ns();
  // The hot path: no lock but the map's shared one, no round trip.
  std::optional<Decision> hit = leases_->with(key, [&](Lease& l) { return l.try_take(cost, now_ns); });
  if (hit) {
    m.decision(*hit, us_since(t0));
    return *hit;
  }
  if (cost > options_.lease_units) return check_unleased(key, cost);  // never fits a lease

  return finish([&] {
    try {
      std::shared_ptr<Lease> lease = leases_->get_or_add(key, storage_keys(key));
      std::unique_lock<std::mutex> lock(lease->mu);
      const int64_t now = leases_->now_ns();
      // Another thread may have renewed while this one waited: use its lease.
      if (auto d = lease->try_take(cost, now)) {
        m.decision(*d, us_since(t0));
        return *d;
      }
      // Redis said no (for this cost or less) until denied_until: every
      // waiter shares that answer (a deny cache of the key) rather than
      // queueing one round trip each.
      if (lease->denied_cost > 0 && cost >= lease->denied_cost && now < lease->denied_until_ns) {
        Decision d = lease->denial;
        d.cached = true;
        d.retry_after_ms = std::max<int64_t>(1, (lease->denied_until_ns - now + 999999) / 1000000);
        m.decision(d, us_since(t0));
        return d;
      }
      // Renew: the old lease's unused units go back before a new one is
      // taken, so one limiter never holds two leases of a key in Redis.
      leases_->give_back(*lease, now);
      lease->denied_cost = 0;
      const int64_t started = leases_->now_ns();
      int64_t want = options_.lease_units;
      Decision take = decide(request(Op::kCheck, key, want, this->now()));
      if (!take.allowed && !take.degraded && take.remaining >= cost) {
        // Fewer than lease_units are free but the cost fits: lease what is.
        want = std::min(want, take.remaining);
        take = decide(request(Op::kCheck, key, want, this->now()));
      } else if (!take.allowed && !take.degraded && want > cost) {
        // Nothing to lease: ask for the cost alone, for an exact answer
        // (retry_after of this cost, not of a whole lease).
        want = cost;
        take = decide(request(Op::kCheck, key, want, this->now()));
      }
      if (take.degraded || !take.allowed) {
        if (!take.allowed && !take.degraded) {
          lease->denial = take;
          lease->denied_cost = cost;
          lease->denied_until_ns = started + take.retry_after_ms * 1000000;
        }
        m.decision(take, us_since(t0));
        return take;
      }
      m.leased(static_cast<uint64_t>(want));
      lease->refundable_until_ns = started + take.reset_after_ms * 1000000;
      lease->open(want - cost, started + options_.lease_ms * 1000000, take);
      take.granted = cost;
      take.remaining += want - cost;
      m.decision(take, us_since(t0));
      return take;
    } catch (...) {
      m.error(us_since(t0));
      throw;
    }
  }());
}

}  // namespace polylimit
