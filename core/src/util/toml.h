// toml.h - TOML documents read into the tree of util/json.h, so the policy
// reads one structure whichever syntax its file is written in. TOML 1.0,
// parsed by toml++ (header-only, when its headers were found at build time).
#pragma once

#include <string_view>

#include "util/json.h"

namespace polylimit {
namespace toml_reader {

// Whether this build can read TOML (toml++'s headers were there).
bool available() noexcept;

// Parses a whole TOML document into the same tree json::parse gives: tables
// are objects (members sorted by name), arrays are lists; dates and times,
// which no policy field takes, are refused. Throws Error(kInvalidArgument)
// "line N: ..." on malformed input, or naming the missing toml++ headers
// when the build has none.
json::Value parse(std::string_view text);

}  // namespace toml_reader
}  // namespace polylimit
