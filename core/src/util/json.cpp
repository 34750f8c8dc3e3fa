// json.cpp - the strict JSON reader of json.h.
#include "util/json.h"

#include <cerrno>
#include <cstdlib>

#include "polylimit/errors.h"

namespace polylimit {
namespace json {

const Value* Value::find(std::string_view key) const {
  for (const auto& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const char* Value::type_name() const {
  switch (type_) {
    case Type::kNull: return "null";
    case Type::kBool: return "a boolean";
    case Type::kNumber: return "a number";
    case Type::kString: return "a string";
    case Type::kArray: return "a list";
    case Type::kObject: return "an object";
  }
  return "?";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw_invalid("line " + std::to_string(line_) + ": " + what);
  }

  void skip_space() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '\n') {
        ++line_;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > 64) fail("nested more than 64 levels deep");
    skip_space();
    if (pos_ == s_.size()) fail("unexpected end of the document");
    Value v;
    v.line_ = line_;
    char c = s_[pos_];
    if (c == '{') {
      v.type_ = Value::Type::kObject;
      ++pos_;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        skip_space();
        if (pos_ == s_.size() || s_[pos_] != '"') fail("expected a member name in double quotes");
        std::string key = string();
        if (v.find(key) != nullptr) fail("\"" + key + "\" given twice");
        skip_space();
        if (pos_ == s_.size() || s_[pos_] != ':') fail("expected ':' after \"" + key + "\"");
        ++pos_;
        v.members_.emplace_back(std::move(key), value(depth + 1));
        if (!separator('}')) break;
      }
    } else if (c == '[') {
      v.type_ = Value::Type::kArray;
      ++pos_;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        v.items_.push_back(value(depth + 1));
        if (!separator(']')) break;
      }
    } else if (c == '"') {
      v.type_ = Value::Type::kString;
      v.string_ = string();
    } else if (literal("true")) {
      v.type_ = Value::Type::kBool;
      v.bool_ = true;
    } else if (literal("false")) {
      v.type_ = Value::Type::kBool;
    } else if (literal("null")) {
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number(v);
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  // After an item: ',' (more follow: true) or `close` (the end: false).
  bool separator(char close) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ',') {
      ++pos_;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == close) fail(std::string("a trailing comma before '") + close + "'");
      return true;
    }
    if (pos_ < s_.size() && s_[pos_] == close) {
      ++pos_;
      return false;
    }
    fail(std::string("expected ',' or '") + close + "'");
  }

  void number(Value& v) {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    size_t first = pos_;
    if (digits() == 0) fail("a malformed number");
    if (s_[first] == '0' && pos_ - first > 1) fail("a number with a leading zero");
    bool integral = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) fail("a malformed number");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      integral = false;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("a malformed number");
    }
    std::string text(s_.substr(start, pos_ - start));
    v.type_ = Value::Type::kNumber;
    if (integral) {
      errno = 0;
      char* end = nullptr;
      long long n = std::strtoll(text.c_str(), &end, 10);
      if (errno == ERANGE) fail("the number " + text + " is out of range");
      v.int_ = n;
      v.integral_ = true;
    } else {
      // A fraction is kept as "not an integer": the policy has no fractional
      // fields, so its value is never needed.
      v.integral_ = false;
    }
  }

  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  uint32_t hex4() {
    if (pos_ + 4 > s_.size()) fail("a truncated \\u escape");
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      cp <<= 4;
      if (c >= '0' && c <= '9') {
        cp |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        cp |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        cp |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail("a malformed \\u escape");
      }
    }
    return cp;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ == s_.size()) fail("a string without its closing quote");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ == s_.size()) fail("a string without its closing quote");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") fail("a lone surrogate in a \\u escape");
            pos_ += 2;
            uint32_t low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("a lone surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("a lone surrogate in a \\u escape");
          }
          put_utf8(out, cp);
          break;
        }
        default: fail(std::string("an unknown escape \\") + e);
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
};

Value parse(std::string_view text) { return Parser(text).document(); }

}  // namespace json
}  // namespace polylimit
