// toml.cpp - TOML into the policy's tree (toml.h). toml++ is used
// header-only: nothing to link, nothing new at run time; a build whose
// machine lacks its headers reads JSON documents only and says so.
#include "util/toml.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "polylimit/errors.h"

#if defined(__has_include)
#if __has_include(<toml++/toml.h>)
#define POLYLIMIT_HAVE_TOMLPP 1
#endif
#endif

#ifdef POLYLIMIT_HAVE_TOMLPP
#define TOML_HEADER_ONLY 1
#define TOML_ENABLE_FORMATTERS 0
#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>
#endif

namespace polylimit {
namespace toml_reader {

#ifdef POLYLIMIT_HAVE_TOMLPP

namespace {

int line_of(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

[[noreturn]] void fail(int line, const std::string& what) {
  throw_invalid("line " + std::to_string(line) + ": " + what);
}

json::Value convert(const toml::node& n, int depth) {
  const int line = line_of(n);
  if (depth > 64) fail(line, "nesting deeper than 64 levels");
  if (const auto* t = n.as_table()) {
    std::vector<std::pair<std::string, json::Value>> members;
    for (const auto& [k, v] : *t) members.emplace_back(std::string(k.str()), convert(v, depth + 1));
    return json::Builder::object(std::move(members), line);
  }
  if (const auto* a = n.as_array()) {
    std::vector<json::Value> items;
    for (const auto& v : *a) items.push_back(convert(v, depth + 1));
    return json::Builder::array(std::move(items), line);
  }
  if (const auto* s = n.as_string()) return json::Builder::string(s->get(), line);
  if (const auto* i = n.as_integer()) return json::Builder::integer(i->get(), line);
  if (const auto* b = n.as_boolean()) return json::Builder::boolean(b->get(), line);
  if (n.is_floating_point()) return json::Builder::fraction(line);
  fail(line, "a date or time, which no field of a policy takes");
}

// The length of the UTF-8 sequence at s[i] and its code point, or 0 when
// it is not valid UTF-8 (overlong, a surrogate, above U+10FFFF, cut short).
size_t utf8_at(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// The document with every character outside ASCII written as an escape, so
// that toml++ (3.3) never classifies one: its test of non-ASCII white space
// reaches an unreachable point for most code points below U+049A (é, Cyrillic:
// undefined behaviour), and it runs on every character of a quoted key and of
// a multi-line string. TOML allows such characters only in strings and
// comments: in a basic string they become \uXXXX (the value is the same), a
// literal string that holds any becomes the basic string of the same value,
// in a comment they become '?', anywhere else the document is refused. Lines
// stay where they are, so messages still name the author's lines.
std::string ascii_document(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  int line = 1;
  size_t i = 0;
  auto escape = [&](uint32_t cp) {
    char buf[12];
    std::snprintf(buf, sizeof buf, cp > 0xFFFF ? "\\U%08X" : "\\u%04X", static_cast<unsigned>(cp));
    out += buf;
  };
  // A character outside ASCII at s[i]: its code point, or the document is refused.
  auto code_point = [&](const char* where) {
    uint32_t cp = 0;
    const size_t n = utf8_at(s, i, cp);
    if (n == 0) fail(line, std::string("invalid UTF-8 in ") + where);
    i += n;
    return cp;
  };
  auto starts = [&](size_t at, const char* t) { return s.compare(at, std::strlen(t), t) == 0; };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '#') {  // a comment, to the end of the line
      while (i < s.size() && s[i] != '\n') {
        if (static_cast<unsigned char>(s[i]) < 0x80) {
          out += s[i++];
        } else {
          code_point("a comment");
          out += '?';
        }
      }
    } else if (c == '"') {  // a basic string, one line or several
      const bool multi = starts(i, "\"\"\"");
      const size_t open = multi ? 3 : 1;
      out.append(s.substr(i, open));
      i += open;
      while (i < s.size()) {
        const unsigned char d = static_cast<unsigned char>(s[i]);
        if (d == '\\') {  // an escape: the backslash and the character after it
          out += s[i++];
          if (i < s.size() && static_cast<unsigned char>(s[i]) >= 0x80) fail(line, "an invalid escape in a string");
          if (i < s.size()) {
            if (s[i] == '\n') ++line;
            out += s[i++];
          }
        } else if (d >= 0x80) {
          escape(code_point("a string"));
        } else if (multi && starts(i, "\"\"\"")) {
          size_t q = i;  // up to two more quotes belong to the string
          while (q < s.size() && s[q] == '"' && q - i < 5) ++q;
          out.append(s.substr(i, q - i));
          i = q;
          break;
        } else if (!multi && (d == '"' || d == '\n')) {
          out += s[i++];  // the end (or a string cut by the line: toml++ says so)
          if (d == '\n') ++line;
          break;
        } else {
          if (d == '\n') ++line;
          out += s[i++];
        }
      }
    } else if (c == '\'') {  // a literal string: no escapes
      const bool multi = starts(i, "'''");
      const size_t open = multi ? 3 : 1;
      size_t end = i + open, close = 0;
      bool wide = false;
      while (end < s.size()) {
        if (multi && starts(end, "'''")) {
          size_t q = end;
          while (q < s.size() && s[q] == '\'' && q - end < 5) ++q;
          close = q - end;  // 3 to 5: the last three close it
          end = q;
          break;
        }
        if (!multi && (s[end] == '\'' || s[end] == '\n')) {
          close = s[end] == '\'' ? 1 : 0;
          end += close;
          break;
        }
        wide = wide || static_cast<unsigned char>(s[end]) >= 0x80;
        ++end;
      }
      const bool closed = multi ? close >= 3 : close == 1;
      if (wide && !closed) fail(line, "a string that is not closed");
      if (!wide) {  // as it is (toml++ refuses an unclosed one)
        for (; i < end; ++i) {
          if (s[i] == '\n') ++line;
          out += s[i];
        }
        continue;
      }
      // The basic string of the same value.
      out += multi ? "\"\"\"" : "\"";
      const size_t body_end = end - (multi ? 3 : 1);
      i += open;
      while (i < body_end) {
        const unsigned char d = static_cast<unsigned char>(s[i]);
        if (d >= 0x80) {
          escape(code_point("a string"));
          continue;
        }
        if (d == '\\' || d == '"') out += '\\';
        if (d == '\n') ++line;
        out += s[i++];
      }
      out += multi ? "\"\"\"" : "\"";
      i = end;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      fail(line, "a character outside ASCII outside a string or comment");
    } else {
      if (c == '\n') ++line;
      out += c;
      ++i;
    }
  }
  for (char c : out)  // what reaches toml++ is ASCII, whatever the above missed
    if (static_cast<unsigned char>(c) >= 0x80) fail(line, "a character outside ASCII outside a string or comment");
  return out;
}

}  // namespace

bool available() noexcept { return true; }

json::Value parse(std::string_view text) {
  toml::table root;
  const std::string ascii = ascii_document(text);
  try {
    root = toml::parse(ascii);
  } catch (const toml::parse_error& e) {
    fail(static_cast<int>(e.source().begin.line), std::string(e.description()));
  }
  json::Value v = convert(root, 0);
  return v;
}

#else

bool available() noexcept { return false; }

json::Value parse(std::string_view) {
  throw_invalid(
      "this build of polylimit reads policy documents in JSON only: TOML needs the toml++ headers "
      "when the library is built (Debian: libtomlplusplus-dev)");
}

#endif

}  // namespace toml_reader
}  // namespace polylimit
