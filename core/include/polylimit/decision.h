// decision.h - the answer to one check.
#pragma once

#include <cstdint>

namespace polylimit {

struct Decision {
  bool allowed = false;        // the cost was admitted (and consumed)
  int64_t limit = 0;           // the limit that decided
  int64_t remaining = 0;       // units left in the window after this decision
  int64_t retry_after_ms = 0;  // 0 when allowed; else until this cost would be admitted
  int64_t reset_after_ms = 0;  // until the key is back to full capacity
  bool cached = false;         // answered by the local deny cache
  bool degraded = false;       // answered by the failure policy
  int64_t granted = 0;         // units admitted: the cost, or 0; check_at_most: up to its max
  bool shadowed = false;       // denied, but admitted because the limiter is in shadow mode
};

}  // namespace polylimit
