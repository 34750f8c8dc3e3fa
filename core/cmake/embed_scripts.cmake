# Generates a header and a source that embed every core/scripts/*.lua file with
# its SHA1, so the first call can already use EVALSHA and no crypto library is
# needed at run time. Each script is a "#!lua" shebang line, then
# core/scripts/common/prelude.lua, then the file: the parts every algorithm
# shares are written once. core/scripts/single/*.lua (the scripts of checks
# of one limit) get core/scripts/single/common/prelude.lua instead, and
# become k_<name>_single, under the same name as their algorithm's general
# script; each also gives k_<name>_keys, its keys call (the script as a
# function of its key, then core/scripts/single/common/keys.lua).
#   cmake -DSCRIPTS_DIR=... -DOUT_HEADER=... -DOUT_SOURCE=... -P embed_scripts.cmake
file(GLOB lua_files "${SCRIPTS_DIR}/*.lua")
list(SORT lua_files)
file(READ "${SCRIPTS_DIR}/common/prelude.lua" prelude)
file(READ "${SCRIPTS_DIR}/single/common/prelude.lua" single_prelude)
file(READ "${SCRIPTS_DIR}/single/common/keys.lua" keys_driver)
set(decls "")
set(defs "")
file(GLOB single_files "${SCRIPTS_DIR}/single/*.lua")
list(SORT single_files)
foreach(lua ${lua_files} ${single_files})
  get_filename_component(name "${lua}" NAME_WE)
  get_filename_component(dir "${lua}" DIRECTORY)
  file(READ "${lua}" own)
  # The shebang (Redis >= 7) makes Redis refuse the script up front under an
  # out-of-memory `maxmemory` (it is a write script without allow-oom), so
  # nothing runs half-way; the keys are all in one slot, as flags require.
  if(dir MATCHES "/single$")
    set(body "#!lua\n${single_prelude}\n${own}")
    set(symbol "k_${name}_single")
    # Its keys call: the same text, the single script's as a function of
    # its key (single/common/keys.lua).
    set(keys_body "#!lua\n${single_prelude}\nlocal function decide(KEYS)\n${own}\nend\n${keys_driver}")
    string(SHA1 keys_sha "${keys_body}")
    string(APPEND decls "extern const Script k_${name}_keys;\n")
    string(APPEND defs "const Script k_${name}_keys = {\"${name}\", R\"__lua__(${keys_body})__lua__\", \"${keys_sha}\"};\n")
  else()
    set(body "#!lua\n${prelude}\n${own}")
    set(symbol "k_${name}")
  endif()
  string(SHA1 sha "${body}")
  string(FIND "${body}" ")__lua__" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${lua} contains the raw-string delimiter )__lua__")
  endif()
  string(APPEND decls "extern const Script ${symbol};\n")
  string(APPEND defs "const Script ${symbol} = {\"${name}\", R\"__lua__(${body})__lua__\", \"${sha}\"};\n")
endforeach()
set(header "// Generated from core/scripts/*.lua by embed_scripts.cmake. Do not edit.
#pragma once

namespace polylimit {
namespace scripts {

struct Script {
  const char* name;
  const char* source;
  const char* sha1;  // of the source's bytes, as SCRIPT LOAD computes it
};

${decls}
}  // namespace scripts
}  // namespace polylimit
")
set(source "// Generated from core/scripts/*.lua by embed_scripts.cmake. Do not edit.
#include \"scripts_generated.h\"

namespace polylimit {
namespace scripts {

${defs}
}  // namespace scripts
}  // namespace polylimit
")
# Write only on change so dependants are not rebuilt needlessly.
foreach(pair "OUT_HEADER;header" "OUT_SOURCE;source")
  list(GET pair 0 var)
  list(GET pair 1 content)
  set(old "")
  if(EXISTS "${${var}}")
    file(READ "${${var}}" old)
  endif()
  if(NOT old STREQUAL "${${content}}")
    file(WRITE "${${var}}" "${${content}}")
  endif()
endforeach()
