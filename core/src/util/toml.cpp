// toml.cpp - TOML into the policy's tree (toml.h). toml++ is used
// header-only: nothing to link, nothing new at run time; a build whose
// machine lacks its headers reads JSON documents only and says so.
#include "util/toml.h"

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

}  // namespace

bool available() noexcept { return true; }

json::Value parse(std::string_view text) {
  toml::table root;
  try {
    root = toml::parse(text);
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
