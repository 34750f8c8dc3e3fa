// lease.h - leases: a block of units of one caller key, taken from Redis by
// one check and handed out in this process without a round trip
// (LimiterOptions::lease_units; docs/limiter.md, "Leases").
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "polylimit/backend.h"
#include "polylimit/client.h"
#include "util/clock.h"

namespace polylimit {

// One caller key's lease. The hot path is lock-free: a compare-and-swap on
// `state` (generation in the high 32 bits, units left in the low 32) after
// an expiry check. A renewal first zeroes the units of the old generation
// (so no thread can take one of them after that), then writes the new
// lease's fields, then publishes the new generation: a thread that read the
// fields of another generation fails its compare-and-swap.
struct Lease {
  std::atomic<uint64_t> state{0};
  std::atomic<int64_t> expires_ns{0};        // client clock; units are handed out before it
  std::atomic<int64_t> server_remaining{0};  // the take's Decision, for leased decisions
  std::atomic<int64_t> limit{0};
  std::atomic<int64_t> reset_after_ms{0};

  // Under mu (one renewal, refund or drop at a time):
  std::mutex mu;
  std::vector<std::string> keys;    // storage keys
  int64_t refundable_until_ns = 0;  // past it the units have come back to Redis by themselves
  Decision denial;                  // the last renewal's denial, shared with its waiters
  int64_t denied_cost = 0;          // 0: no denial to share
  int64_t denied_until_ns = 0;

  static constexpr uint64_t kUnitsMask = 0xffffffffull;

  // Takes `cost` units of the live lease, or nothing (nullopt) when it has
  // fewer left or has expired.
  std::optional<Decision> try_take(int64_t cost, int64_t now_ns) {
    uint64_t s = state.load(std::memory_order_acquire);
    while (true) {
      const int64_t left = static_cast<int64_t>(s & kUnitsMask);
      if (left < cost) return std::nullopt;
      // Read before the compare-and-swap, which proves they belong to `s`.
      const int64_t expires = expires_ns.load(std::memory_order_acquire);
      const int64_t base = server_remaining.load(std::memory_order_relaxed);
      const int64_t lim = limit.load(std::memory_order_relaxed);
      const int64_t reset = reset_after_ms.load(std::memory_order_relaxed);
      if (now_ns >= expires) return std::nullopt;
      if (state.compare_exchange_weak(s, s - static_cast<uint64_t>(cost), std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        Decision d;
        d.allowed = true;
        d.granted = cost;
        d.limit = lim;
        d.remaining = base + (left - cost);
        d.reset_after_ms = reset;
        return d;
      }
    }
  }

  // Ends the live lease (under mu): no unit of it is handed out after this.
  // Returns the units it had left.
  int64_t close() {
    const uint64_t s = state.load(std::memory_order_acquire);
    const uint64_t old = state.exchange(s & ~kUnitsMask, std::memory_order_acq_rel);
    return static_cast<int64_t>(old & kUnitsMask);
  }

  // Publishes a new lease of `units` (under mu, after close()).
  void open(int64_t units, int64_t expires, const Decision& take) {
    expires_ns.store(expires, std::memory_order_relaxed);
    server_remaining.store(take.remaining, std::memory_order_relaxed);
    limit.store(take.limit, std::memory_order_relaxed);
    reset_after_ms.store(take.reset_after_ms, std::memory_order_relaxed);
    const uint64_t gen = (state.load(std::memory_order_relaxed) >> 32) + 1;
    state.store((gen << 32) | static_cast<uint64_t>(units), std::memory_order_release);
  }
};

// The leases of one limiter, by caller key. The map is locked only to find or
// add an entry; an entry is dropped only when nothing holds it and its lease
// is empty.
class LeaseTable {
 public:
  LeaseTable(std::shared_ptr<Client> client, std::vector<LimitParams> limits, ClockSource clock)
      : client_(std::move(client)), limits_(std::move(limits)), clock_(clock) {}

  // The entry of `key`, or null; `f(Lease&)` runs under the shared lock.
  template <typename F>
  auto with(std::string_view key, F&& f) -> decltype(f(std::declval<Lease&>())) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = map_.find(std::string(key));
    if (it == map_.end()) return decltype(f(std::declval<Lease&>())){};
    return f(*it->second);
  }
  std::shared_ptr<Lease> get_or_add(std::string_view key, const std::vector<std::string>& storage_keys);

  // Ends the lease of `key` and gives its unused units back (under its mu).
  // Errors are counted as stranded units, never thrown.
  void give_back(Lease& lease, int64_t now_ns);
  // Ends every lease and gives the unused units back (the client closes or
  // the limiter is destroyed). Idempotent.
  void close_all();
  // Ends the lease of `key` without a refund (the key was reset).
  void drop(std::string_view key);
  // Forgets the denial the lease of `key` shares (units were refunded).
  void forget_denial(std::string_view key);

  int64_t now_ns() const { return client_->clock()->now().time_since_epoch().count(); }
  Client& client() const { return *client_; }

 private:
  // Ends `lease` (under its mu) and returns the refund of the units it had
  // left, or nothing when it had none or Redis has let them go already
  // (counted as stranded).
  std::optional<Request> end_lease(Lease& lease, int64_t now_ns, int64_t now_us);
  // Counts a refund's units as refunded or, when not known to be given back,
  // stranded.
  void count_refund(const Request& refund, bool given_back);
  int64_t refund_now_us() const;

  std::shared_ptr<Client> client_;
  std::vector<LimitParams> limits_;
  ClockSource clock_;
  std::shared_mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Lease>> map_;
};

}  // namespace polylimit
