// memory_backend.cpp - the algorithms in process, mirroring core/scripts/*.lua
// step by step (same integer maths, same doubles where the scripts use them),
// so both backends give the same decision for the same sequence of calls.
#include "backend/memory_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "polylimit/errors.h"

namespace polylimit {

int64_t realtime_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

namespace {

using State = MemoryBackend::State;
using Shard = MemoryBackend::Shard;

int64_t us_to_ms(int64_t us) { return us <= 0 ? 0 : (us + 999) / 1000; }
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t window_start(int64_t t, int64_t window) { return floor_div(t, window) * window; }

// The context of one evaluation: the shard (locked), the times, the keys.
struct Ctx {
  Shard& shard;
  const Request& rq;
  int64_t now;         // time of the decision
  int64_t server_now;  // the backend's clock: drives expiry, like PEXPIRE
  std::vector<LimitResult> results;
  bool blocked = false;  // a punitive block is on: nothing is consumed

  // The live state of a key, or null (missing or expired: Redis would not have it).
  State* find(size_t i) {
    auto it = shard.states.find(rq.keys[i]);
    if (it == shard.states.end()) return nullptr;
    if (it->second.expires_at <= server_now) {
      shard.states.erase(it);
      return nullptr;
    }
    return &it->second;
  }
  State& create(size_t i) { return shard.states[rq.keys[i]]; }
  // When state written now for `us` more of the caller's time expires, as
  // ttl_ms in the scripts' prelude: caller-supplied time gets one `slack`
  // (a window) more, at least 1 ms.
  int64_t expiry(int64_t us, int64_t slack) const {
    if (rq.now_us != kServerTime) us += slack;
    return server_now + std::max<int64_t>(1, us_to_ms(us)) * 1000;
  }
  const LimitParams& limit(size_t i) const { return (*rq.limits)[i]; }
  int64_t window(size_t i) const { return limit(i).window_ms * 1000; }
  size_t size() const { return rq.keys.size(); }
};

bool sliding_log(Ctx& x) {
  const bool check = x.rq.op == Op::kCheck;
  const int64_t cost = x.rq.cost;
  const size_t n = x.size();
  bool allowed = true;
  std::vector<int64_t> count(n), retry(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t window = x.window(i), edge = x.now - window;  // entries at or before the edge have left
    State* st = x.find(i);
    if (st && check) {  // ZREMRANGEBYSCORE
      while (!st->entries.empty() && st->entries.front().first <= edge) {
        st->total -= st->entries.front().second;
        st->entries.pop_front();
      }
      count[i] = st->total;
    } else if (st) {  // ZCOUNT
      for (const auto& e : st->entries)
        if (e.first > edge) count[i] += e.second;
    }
    int64_t need = count[i] + cost - x.limit(i).limit;  // units that must leave the window first
    if (need > 0) {
      allowed = false;
      if (st)
        for (const auto& e : st->entries) {
          if (e.first <= edge) continue;
          need -= e.second;
          if (need <= 0) {
            retry[i] = e.first + window - x.now;
            break;
          }
        }
    }
  }
  if (check && allowed && !x.blocked) {
    for (size_t i = 0; i < n; ++i) {
      State& st = x.create(i);
      // Entries go in at max(now, newest), as the script's ring does, so the
      // log stays sorted if a client clock steps back.
      const int64_t t = st.entries.empty() ? x.now : std::max(x.now, st.entries.back().first);
      if (!st.entries.empty() && st.entries.back().first == t)
        st.entries.back().second += cost;
      else
        st.entries.emplace_back(t, cost);
      st.total += cost;
      st.expires_at = x.expiry(t + x.window(i) - x.now, x.window(i));
      count[i] += cost;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    LimitResult r;
    r.limit = x.limit(i).limit;
    r.remaining = std::max<int64_t>(0, r.limit - count[i]);
    r.retry_after_ms = us_to_ms(retry[i]);
    if (count[i] > 0) r.reset_after_ms = us_to_ms(x.find(i)->entries.back().first + x.window(i) - x.now);
    x.results.push_back(r);
  }
  return allowed;
}

bool fixed_window(Ctx& x) {
  const int64_t cost = x.rq.cost;
  const size_t n = x.size();
  bool allowed = true;
  std::vector<int64_t> start(n), count(n);
  for (size_t i = 0; i < n; ++i) {
    start[i] = window_start(x.now, x.window(i));
    if (State* st = x.find(i)) {
      if (st->w == start[i]) {
        count[i] = st->n;
      } else if (st->w > start[i]) {  // the clock stepped back: stay in the stored window
        start[i] = st->w;
        count[i] = st->n;
      }
    }
    if (count[i] + cost > x.limit(i).limit) allowed = false;
  }
  const bool commit = x.rq.op == Op::kCheck && allowed && !x.blocked;
  for (size_t i = 0; i < n; ++i) {
    const int64_t to_end = start[i] + x.window(i) - x.now;
    LimitResult r;
    r.limit = x.limit(i).limit;
    if (commit) {
      count[i] += cost;
      State& st = x.create(i);
      st.w = start[i];
      st.n = count[i];
      st.expires_at = x.expiry(to_end, x.window(i));
    } else if (count[i] + cost > r.limit) {
      r.retry_after_ms = us_to_ms(to_end);
    }
    if (count[i] > 0) r.reset_after_ms = us_to_ms(to_end);
    r.remaining = std::max<int64_t>(0, r.limit - count[i]);
    x.results.push_back(r);
  }
  return allowed;
}

// Sliding counter helpers: the same double arithmetic, in the same order, as
// sliding_counter.lua, so the two agree to the bit.
bool fits(int64_t p, int64_t a, int64_t e, int64_t window) {
  return a >= 0 && static_cast<double>(p) * static_cast<double>(window - e) <=
                       static_cast<double>(a) * static_cast<double>(window);
}

std::optional<int64_t> first_fit(int64_t p, int64_t a, int64_t from, int64_t window) {
  if (a < 0 || from > window - 1) return std::nullopt;
  if (fits(p, a, from, window)) return from;
  if (!fits(p, a, window - 1, window)) return std::nullopt;
  int64_t e = window - static_cast<int64_t>(
                           std::floor(static_cast<double>(a) * static_cast<double>(window) / static_cast<double>(p)));
  if (e <= from) e = from + 1;
  if (e > window - 1) e = window - 1;
  while (e > from + 1 && fits(p, a, e - 1, window)) --e;
  while (!fits(p, a, e, window)) ++e;
  return e;
}

bool sliding_counter(Ctx& x) {
  const int64_t cost = x.rq.cost;
  const size_t n = x.size();
  bool allowed = true;
  std::vector<int64_t> start(n), cur(n), prev(n), retry(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t window = x.window(i), limit = x.limit(i).limit;
    int64_t s = window_start(x.now, window), c = 0, p = 0;
    if (State* st = x.find(i)) {
      c = st->n;
      p = st->p;
      if (st->w == s) {
      } else if (st->w + window == s) {
        p = c;
        c = 0;
      } else if (st->w > s) {  // the clock stepped back: stay in the stored window
        s = st->w;
      } else {
        c = p = 0;
      }
    }
    start[i] = s;
    cur[i] = c;
    prev[i] = p;
    const int64_t elapsed = std::max<int64_t>(0, x.now - s);
    const int64_t a = limit - c - cost;
    if (!fits(p, a, elapsed, window)) {
      allowed = false;
      if (auto e = first_fit(p, a, elapsed + 1, window))
        retry[i] = s + *e - x.now;
      else if (auto e2 = first_fit(c, limit - cost, 0, window))  // next window: these units get weighted
        retry[i] = s + window + *e2 - x.now;
      else
        retry[i] = s + 2 * window - x.now;
    }
  }
  const bool commit = x.rq.op == Op::kCheck && allowed && !x.blocked;
  for (size_t i = 0; i < n; ++i) {
    const int64_t window = x.window(i);
    if (commit) {
      cur[i] += cost;
      State& st = x.create(i);
      st.w = start[i];
      st.n = cur[i];
      st.p = prev[i];
      st.expires_at = x.expiry(start[i] + 2 * window - x.now, window);
    }
    const int64_t elapsed = std::max<int64_t>(0, x.now - start[i]);
    const int64_t weighted = static_cast<int64_t>(
        std::ceil(static_cast<double>(prev[i]) * static_cast<double>(window - elapsed) / static_cast<double>(window)));
    LimitResult r;
    r.limit = x.limit(i).limit;
    r.remaining = std::max<int64_t>(0, r.limit - cur[i] - weighted);
    r.retry_after_ms = commit ? 0 : us_to_ms(retry[i]);
    if (cur[i] > 0)
      r.reset_after_ms = us_to_ms(start[i] + 2 * window - x.now);
    else if (weighted > 0)
      r.reset_after_ms = us_to_ms(start[i] + window - x.now);
    x.results.push_back(r);
  }
  return allowed;
}

bool gcra(Ctx& x) {
  const int64_t cost = x.rq.cost;
  const size_t n = x.size();
  bool allowed = true;
  std::vector<int64_t> tat(n);
  for (size_t i = 0; i < n; ++i) {
    const LimitParams& lp = x.limit(i);
    State* st = x.find(i);
    tat[i] = std::max(st ? st->tat : x.now, x.now);
    if (tat[i] + lp.interval_us() * cost - x.now > lp.interval_us() * lp.capacity()) allowed = false;
  }
  const bool commit = x.rq.op == Op::kCheck && allowed && !x.blocked;
  for (size_t i = 0; i < n; ++i) {
    const LimitParams& lp = x.limit(i);
    const int64_t interval = lp.interval_us(), tau = interval * lp.capacity();
    int64_t t = tat[i];
    LimitResult r;
    if (commit) {
      t += interval * cost;
      State& st = x.create(i);
      st.tat = t;
      st.expires_at = x.expiry(t - x.now, x.window(i));
    } else {
      r.retry_after_ms = us_to_ms(t + interval * cost - x.now - tau);
    }
    r.limit = lp.capacity();
    r.remaining = std::max<int64_t>(0, floor_div(tau - (t - x.now), interval));
    r.reset_after_ms = us_to_ms(t - x.now);
    x.results.push_back(r);
  }
  return allowed;
}

// Refund: give back up to `cost` units of each limit, as the scripts do.
void refund(Ctx& x) {
  for (size_t i = 0; i < x.size(); ++i) {
    State* st = x.find(i);
    if (!st) continue;
    const LimitParams& lp = x.limit(i);
    const int64_t window = x.window(i), cost = x.rq.cost;
    switch (lp.algorithm) {
      case Algorithm::kSlidingLog: {
        while (!st->entries.empty() && st->entries.front().first <= x.now - window) {
          st->total -= st->entries.front().second;
          st->entries.pop_front();
        }
        int64_t k = std::min(cost, st->total);  // ZPOPMAX: the newest units
        st->total -= k;
        while (k > 0) {
          int64_t take = std::min(k, st->entries.back().second);
          st->entries.back().second -= take;
          k -= take;
          if (st->entries.back().second == 0) st->entries.pop_back();
        }
        break;
      }
      case Algorithm::kFixedWindow:
      case Algorithm::kSlidingCounter:
        if (st->w >= window_start(x.now, window)) st->n = std::max<int64_t>(0, st->n - cost);
        break;
      case Algorithm::kGcra: {
        const int64_t t = st->tat - lp.interval_us() * cost;
        if (t <= x.now) {
          x.shard.states.erase(x.rq.keys[i]);
        } else {
          st->tat = t;
          st->expires_at = x.expiry(t - x.now, x.window(i));
        }
        break;
      }
    }
  }
}

// The hash tag of a storage key: all keys of one caller key share it.
std::string_view tag_of(const std::string& key) {
  size_t open = key.find('{');
  if (open == std::string::npos) return key;
  size_t close = key.find('}', open + 1);
  if (close == std::string::npos) return key;
  return std::string_view(key).substr(open + 1, close - open - 1);
}

}  // namespace

MemoryBackend::MemoryBackend(Clock clock) : clock_(clock ? std::move(clock) : Clock(realtime_us)) {}

MemoryBackend::Shard& MemoryBackend::shard_for(const std::string& key) {
  return shards_[std::hash<std::string_view>{}(tag_of(key)) % shards_.size()];
}

void MemoryBackend::sweep(Shard& shard, int64_t now) {
  for (auto it = shard.states.begin(); it != shard.states.end();) {
    if (it->second.expires_at <= now)
      it = shard.states.erase(it);
    else
      ++it;
  }
  shard.ops_since_sweep = 0;
}

Decision MemoryBackend::evaluate(const Request& rq) {
  if (rq.limits == nullptr || rq.limits->empty() || rq.limits->size() != rq.keys.size())
    throw Error(ErrorCode::kInternal, "request: limits and keys do not match");
  // Expiry follows the backend's own clock, as PEXPIRE follows the server's,
  // even when the caller supplies the time of the decision.
  const int64_t server_now = clock_();
  const int64_t now = rq.now_us == kServerTime ? server_now : rq.now_us;
  Shard& shard = shard_for(rq.keys[0]);
  std::lock_guard<std::mutex> lock(shard.mu);
  // Amortised O(1): a sweep costs O(keys) and runs once per that many ops.
  if (++shard.ops_since_sweep >= std::max<size_t>(1024, shard.states.size())) sweep(shard, server_now);

  // A refund changes the state, then the call answers as a peek of one unit.
  Request peek;
  const Request* r = &rq;
  if (rq.op == Op::kRefund) {
    Ctx rx{shard, rq, now, server_now, {}};
    refund(rx);
    peek = rq;
    peek.op = Op::kPeek;
    peek.cost = 1;
    r = &peek;
  }
  int64_t blocked_until = 0;
  if (rq.block_us > 0 && rq.op != Op::kRefund) {
    auto it = shard.states.find(rq.block_key);
    if (it != shard.states.end() && it->second.expires_at > server_now && it->second.tat > now)
      blocked_until = it->second.tat;
  }
  Ctx x{shard, *r, now, server_now, {}, blocked_until > 0};
  bool allowed = false;
  switch ((*rq.limits)[0].algorithm) {
    case Algorithm::kSlidingLog: allowed = sliding_log(x); break;
    case Algorithm::kFixedWindow: allowed = fixed_window(x); break;
    case Algorithm::kSlidingCounter: allowed = sliding_counter(x); break;
    case Algorithm::kGcra: allowed = gcra(x); break;
  }
  if (blocked_until > 0) {
    allowed = false;
  } else if (r->op == Op::kCheck && !allowed && rq.block_us > 0) {
    blocked_until = now + rq.block_us;
    State& b = shard.states[rq.block_key];
    b.tat = blocked_until;
    b.expires_at =
        server_now + std::max<int64_t>(1, us_to_ms(rq.block_us + (rq.now_us != kServerTime ? rq.block_us : 0))) * 1000;
  }
  if (blocked_until > 0)
    for (LimitResult& res : x.results) res.retry_after_ms = std::max(res.retry_after_ms, us_to_ms(blocked_until - now));
  return combine(allowed, x.results);
}

void MemoryBackend::reset(const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  Shard& shard = shard_for(keys[0]);
  std::lock_guard<std::mutex> lock(shard.mu);
  for (const auto& k : keys) shard.states.erase(k);
}

size_t MemoryBackend::size() {
  size_t n = 0;
  for (auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    n += s.states.size();
  }
  return n;
}

}  // namespace polylimit
