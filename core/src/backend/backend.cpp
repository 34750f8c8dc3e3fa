// backend.cpp - what every backend shares: folding per-limit results, and the
// non-blocking calls of a backend that never blocks.
#include "polylimit/backend.h"

#include <algorithm>

namespace polylimit {

Decision combine(bool allowed, const std::vector<LimitResult>& results) {
  Decision d;
  d.allowed = allowed;
  if (results.empty()) return d;
  size_t pick = 0;
  for (size_t i = 1; i < results.size(); ++i) {
    const LimitResult& r = results[i];
    const LimitResult& best = results[pick];
    bool tighter = allowed ? r.remaining < best.remaining : r.retry_after_ms > best.retry_after_ms;
    if (tighter) pick = i;
  }
  d.limit = results[pick].limit;
  d.remaining = results[pick].remaining;
  d.retry_after_ms = allowed ? 0 : results[pick].retry_after_ms;
  for (const LimitResult& r : results) d.reset_after_ms = std::max(d.reset_after_ms, r.reset_after_ms);
  return d;
}

std::vector<Outcome> Backend::evaluate_many(const std::vector<Request>& requests) {
  std::vector<Outcome> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    try {
      out[i].decision = evaluate(requests[i]);
    } catch (...) {
      out[i].error = std::current_exception();
    }
  }
  return out;
}

Decision Backend::evaluate(Op op, const LimitParams& params, const std::string& key, int64_t cost, int64_t now_us) {
  std::vector<LimitParams> limits{params};
  Request r;
  r.op = op;
  r.limits = &limits;
  r.keys = {key};
  r.cost = cost;
  r.now_us = now_us;
  return evaluate(r);
}

void Backend::reset_async(const std::vector<std::string>& keys, std::function<void(std::exception_ptr)> done) {
  std::exception_ptr error;
  try {
    reset(keys);
  } catch (...) {
    error = std::current_exception();
  }
  done(error);
}

void Backend::evaluate_async(const Request& request, std::function<void(Outcome)> done) {
  Outcome o;
  try {
    o.decision = evaluate(request);
  } catch (...) {
    o.error = std::current_exception();
  }
  done(std::move(o));
}

}  // namespace polylimit
