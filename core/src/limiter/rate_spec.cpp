// rate_spec.cpp - a small hand-written tokenizer; errors quote the bad part.
// The grammar is a superset of the `limits` package's string notation (the
// one flask-limiter, slowapi and others share), with the same meaning, so
// rate strings copied from those projects work unchanged: docs/rate-specs.md.
#include "polylimit/rate_spec.h"

#include <cctype>
#include <string>

#include "polylimit/errors.h"
#include "polylimit/limiter.h"

namespace polylimit {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Milliseconds per unit, or 0 for an unknown unit.
int64_t unit_ms(const std::string& u) {
  if (u == "ms" || u == "millisecond" || u == "milliseconds" || u == "msec") return 1;
  if (u == "s" || u == "sec" || u == "secs" || u == "second" || u == "seconds") return 1000;
  if (u == "m" || u == "min" || u == "mins" || u == "minute" || u == "minutes") return 60000;
  if (u == "h" || u == "hr" || u == "hrs" || u == "hour" || u == "hours") return 3600000;
  if (u == "d" || u == "day" || u == "days") return 86400000;
  // As `limits` counts them: a month is 30 days, a year 12 such months.
  if (u == "month" || u == "months") return 30LL * 86400000;
  if (u == "year" || u == "years") return 360LL * 86400000;
  return 0;
}

class Part {
 public:
  explicit Part(std::string_view text) : text_(text), rest_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw_invalid("rate spec '" + std::string(text_) + "': " + what);
  }
  bool done() {
    rest_ = trim(rest_);
    return rest_.empty();
  }
  bool digit_next() {
    rest_ = trim(rest_);
    return !rest_.empty() && std::isdigit(static_cast<unsigned char>(rest_.front()));
  }
  // A positive integer, at most `max`.
  int64_t number(const char* what, int64_t max) {
    rest_ = trim(rest_);
    size_t n = 0;
    while (n < rest_.size() && std::isdigit(static_cast<unsigned char>(rest_[n]))) ++n;
    if (n == 0) fail(std::string("expected ") + what + " (a whole number) at '" + std::string(rest_) + "'");
    std::string digits(rest_.substr(0, n));
    rest_.remove_prefix(n);
    if (digits.size() > 18 || std::stoll(digits) > max)
      fail(std::string(what) + " " + digits + " is larger than " + std::to_string(max));
    int64_t v = std::stoll(digits);
    if (v < 1) fail(std::string(what) + " must be at least 1");
    return v;
  }
  std::string word() {
    rest_ = trim(rest_);
    size_t n = 0;
    while (n < rest_.size() && std::isalpha(static_cast<unsigned char>(rest_[n]))) ++n;
    std::string w = lower(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return w;
  }
  bool take(char c) {
    rest_ = trim(rest_);
    if (rest_.empty() || rest_.front() != c) return false;
    rest_.remove_prefix(1);
    return true;
  }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view text_, rest_;
};

LimitParams parse_one(std::string_view text, Algorithm algorithm) {
  Part p(text);
  if (p.done()) p.fail("empty limit (expected e.g. '100/minute')");
  LimitParams lp;
  lp.algorithm = algorithm;
  lp.limit = p.number("count", kMaxLimit);
  if (!p.take('/')) {
    std::string per = p.word();
    if (per != "per") p.fail("expected '/' or 'per' after the count");
  }
  int64_t n = p.digit_next() ? p.number("period length", kMaxWindowMs) : 1;
  std::string unit = p.word();
  if (unit.empty()) p.fail("expected a time unit (ms, s, m, h, d, month, year) at '" + std::string(p.rest()) + "'");
  int64_t ms = unit_ms(unit);
  if (ms == 0) p.fail("unknown time unit '" + unit + "' (use ms, s, m, h, d, month or year)");
  if (n > kMaxWindowMs / ms) p.fail("period is longer than " + std::to_string(kMaxWindowMs) + " ms");
  lp.window_ms = n * ms;
  if (!p.done()) {
    std::string w = p.word();
    if (w != "burst") p.fail("unexpected '" + std::string(p.rest().empty() ? w : p.rest()) + "' after the period");
    lp.burst = p.number("burst", kMaxLimit);
    if (!p.done()) p.fail("unexpected '" + std::string(p.rest()) + "' after the burst");
  }
  try {
    validate(lp);
  } catch (const Error& e) {
    p.fail(e.what());
  }
  return lp;
}

}  // namespace

std::vector<LimitParams> parse_rate_spec(std::string_view spec, Algorithm algorithm) {
  if (trim(spec).empty()) throw_invalid("rate spec is empty (expected e.g. '100/minute' or '10/s; 1000/hour')");
  std::vector<LimitParams> out;
  size_t start = 0;
  while (true) {
    // ';', ',' and '|' all separate limits, as in `limits`.
    size_t sep = spec.find_first_of(";,|", start);
    std::string_view part = spec.substr(start, sep == std::string_view::npos ? std::string_view::npos : sep - start);
    out.push_back(parse_one(part, algorithm));
    if (sep == std::string_view::npos) break;
    start = sep + 1;
  }
  if (out.size() > kMaxLimitsPerLimiter)
    throw_invalid("rate spec has " + std::to_string(out.size()) + " limits; at most " +
                  std::to_string(kMaxLimitsPerLimiter));
  return out;
}

}  // namespace polylimit
