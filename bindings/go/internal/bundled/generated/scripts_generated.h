// Generated from core/scripts/*.lua by embed_scripts.cmake. Do not edit.
#pragma once

namespace polylimit {
namespace scripts {

struct Script {
  const char* name;
  const char* source;
  const char* sha1;  // of the source's bytes, as SCRIPT LOAD computes it
};

extern const Script k_fixed_window;
extern const Script k_gcra;
extern const Script k_sliding_counter;
extern const Script k_sliding_log;
extern const Script k_fixed_window_keys;
extern const Script k_fixed_window_single;
extern const Script k_gcra_keys;
extern const Script k_gcra_single;
extern const Script k_sliding_counter_keys;
extern const Script k_sliding_counter_single;
extern const Script k_sliding_log_keys;
extern const Script k_sliding_log_single;

}  // namespace scripts
}  // namespace polylimit
