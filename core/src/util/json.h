// json.h - a small JSON reader for the documents the core is configured by
// (the HTTP request policy). Strict RFC 8259: no comments, no trailing
// commas, no duplicate object keys; numbers that are integers keep int64
// precision. Every value remembers its line, so a message can point at it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace polylimit {
namespace json {

class Value {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type() const { return type_; }
  int line() const { return line_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_integer() const { return type_ == Type::kNumber && integral_; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  bool boolean() const { return bool_; }
  int64_t integer() const { return int_; }
  const std::string& string() const { return string_; }
  const std::vector<Value>& array() const { return items_; }
  const std::vector<std::pair<std::string, Value>>& object() const { return members_; }
  // The member named `key` of an object, or nullptr.
  const Value* find(std::string_view key) const;

  // "null", "a boolean", "a number", "a string", "a list", "an object".
  const char* type_name() const;

 private:
  friend class Parser;
  friend struct Builder;
  Type type_ = Type::kNull;
  int line_ = 1;
  bool bool_ = false;
  bool integral_ = false;
  int64_t int_ = 0;
  std::string string_;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> members_;
};

// Makes values for readers of other syntaxes (util/toml) that hand the
// policy the same tree, lines included.
struct Builder {
  static Value null(int line) { return make(Value::Type::kNull, line); }
  static Value boolean(bool b, int line) {
    Value v = make(Value::Type::kBool, line);
    v.bool_ = b;
    return v;
  }
  static Value integer(int64_t n, int line) {
    Value v = make(Value::Type::kNumber, line);
    v.integral_ = true;
    v.int_ = n;
    return v;
  }
  // A number that is not a whole one: the policy refuses it where it wants
  // an integer, and reads no other kind.
  static Value fraction(int line) { return make(Value::Type::kNumber, line); }
  static Value string(std::string s, int line) {
    Value v = make(Value::Type::kString, line);
    v.string_ = std::move(s);
    return v;
  }
  static Value array(std::vector<Value> items, int line) {
    Value v = make(Value::Type::kArray, line);
    v.items_ = std::move(items);
    return v;
  }
  static Value object(std::vector<std::pair<std::string, Value>> members, int line) {
    Value v = make(Value::Type::kObject, line);
    v.members_ = std::move(members);
    return v;
  }

 private:
  static Value make(Value::Type t, int line) {
    Value v;
    v.type_ = t;
    v.line_ = line;
    return v;
  }
};

// Parses a whole document; throws Error(kInvalidArgument) "line N: ..." on
// malformed input. Nesting deeper than 64 levels is refused.
Value parse(std::string_view text);

}  // namespace json
}  // namespace polylimit
