// reply_reader.cpp - ReplyReader: RESP2 into single-allocation Reply trees.
#include "net/reply_reader.h"

#include <cstdlib>
#include <cstring>

#include "polylimit/errors.h"

namespace polylimit {

namespace {

constexpr size_t kNpos = std::string::npos;
// Longest simple string or error line (they carry no length; Redis's are short).
constexpr size_t kMaxLine = 1024 * 1024;
// Every cap has fewer digits; more cannot be a length of ours.
constexpr size_t kMaxDigits = 18;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A decimal as Redis writes one: "0", or digits without a leading zero after
// an optional '-' (no "-0", no "007", no '+').
bool canonical(const char* p, const char* end) {
  if (p < end && *p == '-') {
    ++p;
    if (p < end && *p == '0') return false;
  }
  if (p == end || (*p == '0' && end - p > 1)) return false;
  for (; p < end; ++p)
    if (!is_digit(*p)) return false;
  return true;
}

// A signed decimal of digits only (the caller checked them and its range).
// Accumulated below zero, where the int64 range is one larger: INT64_MIN too.
int64_t decimal(const char* p, const char* end) {
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  int64_t v = 0;
  for (; p < end; ++p) v = v * 10 - (*p - '0');
  return negative ? v : -v;
}

std::string hex_byte(char c) {
  const char* digits = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  return std::string("0x") + digits[u >> 4] + digits[u & 15];
}

}  // namespace

void ReplyReader::refuse(const std::string& why) const {
  throw Error(ErrorCode::kServer, "reply from " + where_ + ": protocol error (" + why + ")");
}

void ReplyReader::feed(const char* data, size_t len) {
  // Drops the replies handed out: all of the bytes when nothing is pending,
  // else once they are most of a large buffer.
  if (pos_ == buf_.size() || (pos_ > 64 * 1024 && pos_ * 2 > buf_.size())) {
    buf_.erase(0, pos_);
    scan_ -= pos_;
    pos_ = 0;
  }
  buf_.append(data, len);
}

size_t ReplyReader::line_end(size_t at) const {
  const char* begin = buf_.data() + at;
  const size_t avail = buf_.size() - at;
  const void* cr = std::memchr(begin, '\r', avail);
  if (cr == nullptr) {
    if (avail > kMaxLine) refuse("a line of more than " + std::to_string(kMaxLine) + " bytes");
    return kNpos;
  }
  const size_t i = static_cast<size_t>(static_cast<const char*>(cr) - buf_.data());
  if (i + 1 >= buf_.size()) return kNpos;
  if (buf_[i + 1] != '\n') refuse("CR without LF");
  return i;
}

int64_t ReplyReader::length(size_t from, size_t to, char type) const {
  // [from, to): the characters after the type byte, the whole line or (to =
  // the end of the bytes) as much of it as has arrived.
  const bool whole = to < buf_.size();
  if (!whole && to > from && buf_[to - 1] == '\r') --to;  // the CR of a line whose LF is due
  const size_t n = to - from;
  if (n > kMaxDigits) refuse("a length of more than " + std::to_string(kMaxDigits) + " digits");
  for (size_t i = from; i < to; ++i) {
    const char c = buf_[i];
    if (!is_digit(c) && !(c == '-' && i == from)) refuse(std::string("a length with the byte ") + hex_byte(c));
  }
  if (!whole) return 0;
  if (n == 0 || (n == 1 && buf_[from] == '-')) refuse(std::string("empty length after '") + type + "'");
  if (!canonical(buf_.data() + from, buf_.data() + to))
    refuse(std::string("the length '") + type + buf_.substr(from, n) + "'");
  const int64_t v = decimal(buf_.data() + from, buf_.data() + to);
  if (v < -1) refuse(std::string("the length '") + type + buf_.substr(from, n) + "'");
  const int64_t cap = type == '*' ? kMaxArray : kMaxBulk;
  if (v > cap)
    refuse(std::string("'") + type + buf_.substr(from, n) + "' is larger than " + std::to_string(cap) +
           (type == '*' ? " elements" : " bytes"));
  return v;
}

bool ReplyReader::scan() {
  while (scan_ < buf_.size()) {
    const char type = buf_[scan_];
    if (type != '+' && type != '-' && type != ':' && type != '$' && type != '*')
      refuse("unexpected type byte " + hex_byte(type));
    const size_t cr = line_end(scan_ + 1);
    if (cr == kNpos) {
      if (type == '$' || type == '*') length(scan_ + 1, buf_.size(), type);  // refuses a bad number early
      return false;
    }
    size_t next = cr + 2;
    size_t chars = 0;
    if (type == '+' || type == '-') {
      chars = cr - scan_ - 1 + 1;
    } else if (type == ':') {
      const size_t from = scan_ + 1;
      const size_t digits = cr - from - (cr > from && buf_[from] == '-' ? 1 : 0);
      bool ok = digits <= 19 && canonical(buf_.data() + from, buf_.data() + cr);
      if (ok && digits == 19) {  // beyond int64 when above its largest (or below its smallest)
        const bool negative = buf_[from] == '-';
        ok = buf_.compare(cr - 19, 19, negative ? "9223372036854775808" : "9223372036854775807") <= 0;
      }
      if (!ok) refuse("the integer '" + buf_.substr(from, std::min<size_t>(cr - from, 32)) + "'");
    } else {
      const int64_t n = length(scan_ + 1, cr, type);
      if (type == '$' && n >= 0) {
        const size_t end = next + static_cast<size_t>(n);
        if (end + 2 > buf_.size()) return false;  // the payload has not all arrived
        if (buf_[end] != '\r' || buf_[end + 1] != '\n') refuse("a bulk string without CRLF after its bytes");
        next = end + 2;
        chars = static_cast<size_t>(n) + 1;
      } else if (type == '*' && n > 0) {
        if (open_.size() >= kMaxDepth) refuse("arrays nested more than " + std::to_string(kMaxDepth) + " deep");
        ++nodes_;
        slots_ += static_cast<size_t>(n);
        open_.push_back(n);
        scan_ = next;
        continue;
      }
    }
    // A whole element: a leaf, a nil or an empty array.
    ++nodes_;
    chars_ += chars;
    scan_ = next;
    while (!open_.empty() && --open_.back() == 0) open_.pop_back();
    if (open_.empty()) return true;
  }
  return false;
}

ReplyPtr ReplyReader::next() {
  if (!scan()) return nullptr;
  ReplyPtr reply = build();
  pos_ = scan_;
  nodes_ = slots_ = chars_ = 0;
  return reply;
}

ReplyPtr ReplyReader::build() {
  const size_t bytes = nodes_ * sizeof(Reply) + slots_ * sizeof(Reply*) + chars_;
  void* block = std::malloc(bytes);
  if (block == nullptr) throw Error(ErrorCode::kNoMemory, "reply from " + where_ + ": cannot allocate the reply");
  auto* node = static_cast<Reply*>(block);
  auto* slot = reinterpret_cast<Reply**>(node + nodes_);
  char* text = reinterpret_cast<char*>(slot + slots_);
  const char* const data = buf_.data();

  // The bytes from pos_ to scan_ passed scan(): every header is well formed.
  struct Builder {
    Reply*& node;
    Reply**& slot;
    char*& text;
    const char* data;
    const char* end;
    Reply* make(size_t& at) {
      Reply* r = node++;
      *r = Reply{};
      const char type = data[at];
      const auto* line = static_cast<const char*>(std::memchr(data + at, '\r', static_cast<size_t>(end - data) - at));
      const size_t cr = static_cast<size_t>(line - data);
      const size_t body = cr + 2;
      auto copy = [&](size_t from, size_t n) {
        std::memcpy(text, data + from, n);
        text[n] = '\0';
        r->str = text;
        r->len = n;
        text += n + 1;
      };
      switch (type) {
        case '+':
        case '-':
          r->type = type == '+' ? ReplyType::kStatus : ReplyType::kError;
          copy(at + 1, cr - at - 1);
          at = body;
          break;
        case ':':
          r->type = ReplyType::kInteger;
          r->integer = decimal(data + at + 1, data + cr);
          at = body;
          break;
        case '$': {
          const int64_t n = decimal(data + at + 1, data + cr);
          if (n < 0) {
            r->type = ReplyType::kNil;
            at = body;
          } else {
            r->type = ReplyType::kString;
            copy(body, static_cast<size_t>(n));
            at = body + static_cast<size_t>(n) + 2;
          }
          break;
        }
        default: {  // '*'
          const int64_t n = decimal(data + at + 1, data + cr);
          at = body;
          if (n < 0) {
            r->type = ReplyType::kNil;
            break;
          }
          r->type = ReplyType::kArray;
          r->elements = static_cast<size_t>(n);
          if (n > 0) {
            r->element = slot;
            slot += n;
            for (size_t i = 0; i < r->elements; ++i) r->element[i] = make(at);
          }
          break;
        }
      }
      return r;
    }
  };
  size_t at = pos_;
  Builder b{node, slot, text, data, data + scan_};
  return ReplyPtr(b.make(at));
}

}  // namespace polylimit
