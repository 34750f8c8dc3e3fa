// script_cache.cpp - EVALSHA with one NOSCRIPT reload, for every transport.
#include "transport/script_cache.h"

#include <cstring>

#include "net/redis_errors.h"

namespace polylimit {

Argv ScriptCache::evalsha(const scripts::Script& script, const Argv& keys, const Argv& args,
                          std::string& numkeys_storage) {
  numkeys_storage = std::to_string(keys.size());
  Argv argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("EVALSHA");
  argv.push_back(script.sha1);
  argv.push_back(numkeys_storage);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Argv ScriptCache::eval(const scripts::Script& script, const Argv& keys, const Argv& args,
                       std::string& numkeys_storage) {
  Argv argv = evalsha(script, keys, args, numkeys_storage);
  argv[0] = "EVAL";
  argv[1] = script.source;
  return argv;
}

bool ScriptCache::is_noscript(const Reply* r) {
  return r->type == ReplyType::kError && r->len >= 8 && std::memcmp(r->str, "NOSCRIPT", 8) == 0;
}

void ScriptCache::load(Link& conn, const scripts::Script& script) {
  ReplyPtr r = conn.command({"SCRIPT", "LOAD", script.source});
  if (r->type == ReplyType::kError)
    throw_reply_error(std::string(r->str, r->len), std::string("SCRIPT LOAD ") + script.name);
  if (r->type != ReplyType::kString || std::string(r->str, r->len) != script.sha1)
    throw Error(ErrorCode::kServer, std::string("SCRIPT LOAD ") + script.name +
                                        " answered an unexpected SHA1 (expected " + script.sha1 + ")");
  reloads_.fetch_add(1, std::memory_order_relaxed);
}

Argv ScriptCache::Attempts::command(const Argv& keys, const Argv& args, std::string& numkeys_storage) const {
  return step_ == Step::kEval ? eval(*script_, keys, args, numkeys_storage)
                              : evalsha(*script_, keys, args, numkeys_storage);
}

void ScriptCache::Attempts::prepare(Link& conn) {
  if (step_ != Step::kLoadThenEvalsha || loaded_) return;
  cache_->load(conn, *script_);
  loaded_ = true;
}

bool ScriptCache::Attempts::retry_noscript() {
  switch (step_) {
    case Step::kEvalsha:
      step_ = can_load_ ? Step::kLoadThenEvalsha : Step::kEval;
      // Without a load of ours, the EVAL is what puts the script back.
      if (!can_load_) cache_->reloads_.fetch_add(1, std::memory_order_relaxed);
      return true;
    case Step::kLoadThenEvalsha:
      step_ = Step::kEval;  // flushed again between the load and the retry
      return true;
    case Step::kEval: break;  // EVAL cannot answer NOSCRIPT: whatever it said is final
  }
  return false;
}

bool ScriptCache::Attempts::resend_unsent(bool sent) {
  if (sent || resent_) return false;
  resent_ = true;
  return true;
}

std::vector<ReplyPtr> ScriptCache::run_all(Link& conn, const scripts::Script& script,
                                           const std::vector<ScriptCall>& calls, const Argv& before, const Argv& after,
                                           ReplyPtr* after_reply) {
  Attempts attempts(*this, script, /*can_load=*/true);
  std::vector<ReplyPtr> replies(calls.size());
  std::vector<size_t> pending(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) pending[i] = i;
  const size_t stride = before.empty() ? 1 : 2;
  // Each send's failure after any byte of it went out has an unknown outcome
  // (send_with_outcome). Beyond that, every call of the batch shares the one
  // error: once some call ran (its reply was not NOSCRIPT), a failure of a
  // later load or send leaves it consumed. SCRIPT LOAD runs only after
  // NOSCRIPT replies (those calls did not run), so for a single call its
  // failure leaves the outcome known.
  bool some_ran = false;
  return mark_outcome_unknown_if(
      [&some_ran] { return some_ran; },
      [&] {
        for (;;) {
          attempts.prepare(conn);
          std::vector<std::string> numkeys(pending.size());
          std::vector<Argv> commands;
          commands.reserve(pending.size() * stride + 1);
          for (size_t k = 0; k < pending.size(); ++k) {
            if (!before.empty()) commands.push_back(before);
            commands.push_back(attempts.command(calls[pending[k]].keys, calls[pending[k]].args, numkeys[k]));
          }
          if (!after.empty()) commands.push_back(after);
          std::vector<ReplyPtr> got = send_with_outcome(conn, [&] { return conn.pipeline(commands); });
          if (!after.empty()) {
            if (after_reply) *after_reply = std::move(got.back());
            got.pop_back();
          }
          std::vector<size_t> again;
          for (size_t k = 0; k < pending.size(); ++k) {
            ReplyPtr& r = got[k * stride + stride - 1];
            if (is_noscript(r.get()))
              again.push_back(pending[k]);
            else
              some_ran = true;
            replies[pending[k]] = std::move(r);
          }
          if (again.empty() || !attempts.retry_noscript()) return std::move(replies);
          pending.swap(again);
        }
      });
}

ReplyPtr ScriptCache::run(Link& conn, const scripts::Script& script, const Argv& keys, const Argv& args) {
  // run_all for one call without its batch bookkeeping: the check's hot path.
  // A failure after the send has an unknown outcome; SCRIPT LOAD runs only
  // after NOSCRIPT (the call did not run), so its failure leaves it known.
  Attempts attempts(*this, script, /*can_load=*/true);
  std::string numkeys;
  for (;;) {
    attempts.prepare(conn);
    const Argv command = attempts.command(keys, args, numkeys);
    ReplyPtr r = send_with_outcome(conn, [&] { return conn.command(command); });
    if (!is_noscript(r.get()) || !attempts.retry_noscript()) return r;
  }
}

}  // namespace polylimit
