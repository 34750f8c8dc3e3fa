// coalescer.cpp - the per-key gate of coalesced checks (coalescer.h).
#include "backend/coalescer.h"

#include "polylimit/errors.h"

namespace polylimit {

bool Latch::claim() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != kQueued) return false;
  state_ = kSent;
  return true;
}

bool Latch::hand(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != kSent) return false;
    job_ = std::move(job);
    state_ = kLead;
  }
  cv_.notify_one();
  return true;
}

void Latch::set(Outcome outcome) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == kGaveUp || state_ == kDone) return;
    outcome_ = std::move(outcome);
    state_ = kDone;
  }
  cv_.notify_one();
}

Outcome Latch::wait(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait_until(lock, deadline, [&] { return state_ == kDone || state_ == kLead; });
    if (state_ != kLead) break;
    // The batch's call, on this thread; it delivers this check's outcome too.
    std::function<void()> job = std::move(job_);
    state_ = kSent;
    lock.unlock();
    job();
    lock.lock();
  }
  if (state_ == kDone) return std::move(outcome_);
  const bool sent = state_ == kSent;
  state_ = kGaveUp;
  Error e(ErrorCode::kTimeout, sent ? "check timed out waiting for its reply (coalesced with other checks of its key)"
                                    : "check timed out queued behind a call of the same key; it was not sent");
  e.set_outcome_unknown(sent);
  Outcome o;
  o.error = std::make_exception_ptr(e);
  return o;
}

Coalescer::Batch* Coalescer::enter_locked(Shard& s, const std::string& key, const std::string** lead) {
  auto it = s.inflight.find(key);
  if (it == s.inflight.end()) {
    if (s.spare.empty()) {
      *lead = &s.inflight.emplace(key, nullptr).first->first;
    } else {
      Inflight::node_type node = std::move(s.spare.back());
      s.spare.pop_back();
      node.key() = key;  // into the kept string's memory
      *lead = &s.inflight.insert(std::move(node)).position->first;
    }
    return nullptr;
  }
  if (!it->second) it->second = std::make_unique<Batch>();
  if (it->second->waiters.size() >= kMaxWaiting)
    throw Error(ErrorCode::kPoolExhausted, "queue full: " + std::to_string(kMaxWaiting) +
                                               " checks of this key already wait behind its call in flight");
  return it->second.get();
}

std::unique_ptr<Coalescer::Batch> Coalescer::next(const std::string& key) {
  Shard& s = shard(key);
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.inflight.find(key);
  if (it == s.inflight.end()) return nullptr;  // not reached: next() follows join() or next()
  std::unique_ptr<Batch> b = std::move(it->second);
  if (!b || b->waiters.empty()) {
    // `key` may be the entry's own: not read after this.
    if (s.spare.size() < kSparePerShard)
      s.spare.push_back(s.inflight.extract(it));
    else
      s.inflight.erase(it);
    return nullptr;
  }
  if (b->waiters.size() > kMaxChecksPerCall) {
    // The rest wait for the following call, with a copy of the call's shape.
    auto rest = std::make_unique<Batch>();
    rest->script = b->script;
    rest->keys = b->keys;
    rest->args = b->args;
    rest->limits = b->limits;
    rest->waiters.assign(std::make_move_iterator(b->waiters.begin() + kMaxChecksPerCall),
                         std::make_move_iterator(b->waiters.end()));
    b->waiters.resize(kMaxChecksPerCall);
    it->second = std::move(rest);
  }
  return b;
}

}  // namespace polylimit
