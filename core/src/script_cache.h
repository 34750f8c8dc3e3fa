// script_cache.h - runs embedded Lua scripts with EVALSHA.
//
// The SHA1 of every script is known at build time, so the first call already
// uses EVALSHA. A NOSCRIPT reply (new server, SCRIPT FLUSH, failover) makes the
// cache SCRIPT LOAD the source and retry once; when the script was flushed
// again in between, a last try sends EVAL with the source, which cannot
// answer NOSCRIPT. It never loops.
#pragma once

#include <atomic>
#include <string>

#include "connection.h"
#include "scripts_generated.h"

namespace polylimit {

class ScriptCache {
 public:
  // Runs `script` with KEYS and ARGV; returns the reply (error replies other
  // than NOSCRIPT are returned for the caller to map).
  ReplyPtr run(Link& conn, const scripts::Script& script, const Argv& keys, const Argv& args);

  // Builds the EVALSHA command for a script, for pipelines.
  static Argv evalsha(const scripts::Script& script, const Argv& keys, const Argv& args,
                      std::string& numkeys_storage);

  // The same call as EVAL with the script's source (cannot answer NOSCRIPT).
  static Argv eval(const scripts::Script& script, const Argv& keys, const Argv& args,
                   std::string& numkeys_storage);

  // True when the reply is a NOSCRIPT error.
  static bool is_noscript(const redisReply* reply);

  // SCRIPT LOAD; throws when the server refuses or answers another SHA1.
  void load(Link& conn, const scripts::Script& script);

  long reloads() const { return reloads_.load(std::memory_order_relaxed); }
  // Counts a reload done elsewhere (the non-blocking path re-sends with EVAL).
  void note_reload() { reloads_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<long> reloads_{0};
};

}  // namespace polylimit
