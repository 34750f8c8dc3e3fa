// script_cache.h - runs embedded Lua scripts with EVALSHA.
//
// The SHA1 of every script is known at build time, so the first call already
// uses EVALSHA. A NOSCRIPT reply (new server, SCRIPT FLUSH, failover) makes the
// cache SCRIPT LOAD the source and retry once; when the script was flushed
// again in between, a last try sends EVAL with the source, which cannot
// answer NOSCRIPT. It never loops. This rule (Attempts) and the retry-safety
// rule around it (run_all) are the only ones: every transport, blocking or
// not, sends its script calls through them.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "net/connection.h"
#include "scripts_generated.h"

namespace polylimit {

// One script invocation; all its keys share one hash tag (one slot).
struct ScriptCall {
  Argv keys;
  Argv args;
};

class ScriptCache {
 public:
  // The sends of one script call (or of one pipelined batch), for the
  // blocking and the non-blocking paths alike. The first goes out as EVALSHA.
  // NOSCRIPT means the script did not run, so the call goes out again: after
  // SCRIPT LOAD when the sender can wait for one (prepare()), then, on
  // NOSCRIPT once more, as EVAL. A sender that cannot wait for a load (the
  // non-blocking path) goes to EVAL at once: EVAL caches the script too, and
  // counts as the reload. At most three sends.
  class Attempts {
   public:
    Attempts(ScriptCache& cache, const scripts::Script& script, bool can_load)
        : cache_(&cache), script_(&script), can_load_(can_load) {}
    // One call's command for the next send.
    Argv command(const Argv& keys, const Argv& args, std::string& numkeys_storage) const;
    // Before each send: SCRIPT LOAD on `conn` when the step asks for it.
    void prepare(Link& conn);
    // After a send in which some calls answered NOSCRIPT: true when they go
    // out again; false when their replies are final.
    bool retry_noscript();
    // After a send that failed: true, once, when no byte of it was written
    // (nothing ran), so that it may go again on a fresh connection.
    bool resend_unsent(bool sent);
    bool resent() const { return resent_; }

   private:
    enum class Step { kEvalsha, kLoadThenEvalsha, kEval };
    ScriptCache* cache_;
    const scripts::Script* script_;
    bool can_load_;
    bool loaded_ = false;
    bool resent_ = false;
    Step step_ = Step::kEvalsha;
  };

  // Runs `calls` pipelined on `conn` (one write per send) through Attempts.
  // `before` (ASKING after a Cluster ASK redirection) precedes each call and
  // `after` (WAIT / WAITAOF) follows the calls, in the same write;
  // *after_reply gets the last send's `after` reply. Replies come in the
  // order of `calls`, error replies included. Failures throw, marked
  // outcome_unknown once any call may have run (see the body).
  std::vector<ReplyPtr> run_all(Link& conn, const scripts::Script& script, const std::vector<ScriptCall>& calls,
                                const Argv& before = {}, const Argv& after = {}, ReplyPtr* after_reply = nullptr);

  // run_all for one call.
  ReplyPtr run(Link& conn, const scripts::Script& script, const Argv& keys, const Argv& args);

  // Builds the EVALSHA command for a script, for pipelines.
  static Argv evalsha(const scripts::Script& script, const Argv& keys, const Argv& args, std::string& numkeys_storage);

  // The same call as EVAL with the script's source (cannot answer NOSCRIPT).
  static Argv eval(const scripts::Script& script, const Argv& keys, const Argv& args, std::string& numkeys_storage);

  // True when the reply is a NOSCRIPT error.
  static bool is_noscript(const Reply* reply);

  // SCRIPT LOAD; throws when the server refuses or answers another SHA1.
  void load(Link& conn, const scripts::Script& script);

  long reloads() const { return reloads_.load(std::memory_order_relaxed); }

 private:
  std::atomic<long> reloads_{0};
};

}  // namespace polylimit
