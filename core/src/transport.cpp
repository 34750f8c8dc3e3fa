// transport.cpp - the standalone transport and pipelined script runs.
#include "transport.h"

namespace polylimit {

std::vector<ReplyPtr> run_scripts_on(Connection& conn, ScriptCache& cache, const scripts::Script& script,
                                     const std::vector<ScriptCall>& calls) {
  auto build = [&](const std::vector<size_t>& which, std::vector<std::string>& numkeys) {
    std::vector<Argv> commands;
    numkeys.resize(which.size());
    for (size_t i = 0; i < which.size(); ++i)
      commands.push_back(ScriptCache::evalsha(script, calls[which[i]].keys, calls[which[i]].args, numkeys[i]));
    return commands;
  };
  // Every call of the batch shares the one error: a failure after a
  // pipeline went out (or after some of its calls already ran, when a
  // NOSCRIPT reload or retry fails) has an unknown outcome for all of them.
  auto send = [&conn](const std::vector<Argv>& commands) {
    return send_with_outcome(conn, [&] { return conn.pipeline(commands); });
  };
  std::vector<size_t> all(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) all[i] = i;
  std::vector<std::string> numkeys;
  std::vector<ReplyPtr> replies = send(build(all, numkeys));

  std::vector<size_t> again;
  for (size_t i = 0; i < replies.size(); ++i)
    if (ScriptCache::is_noscript(replies[i].get())) again.push_back(i);
  if (again.empty()) return replies;
  const bool some_ran = again.size() < replies.size();
  return mark_outcome_unknown_if([some_ran] { return some_ran; }, [&] {
    cache.load(conn, script);
    std::vector<ReplyPtr> retried = send(build(again, numkeys));
    for (size_t i = 0; i < again.size(); ++i) replies[again[i]] = std::move(retried[i]);
    // Flushed again between the load and the retry: EVAL carries the source
    // and cannot answer NOSCRIPT.
    std::vector<size_t> last;
    for (size_t i : again)
      if (ScriptCache::is_noscript(replies[i].get())) last.push_back(i);
    if (last.empty()) return std::move(replies);
    std::vector<Argv> evals;
    numkeys.assign(last.size(), std::string());
    for (size_t i = 0; i < last.size(); ++i)
      evals.push_back(ScriptCache::eval(script, calls[last[i]].keys, calls[last[i]].args, numkeys[i]));
    std::vector<ReplyPtr> final_replies = send(evals);
    for (size_t i = 0; i < last.size(); ++i) replies[last[i]] = std::move(final_replies[i]);
    return std::move(replies);
  });
}

ReplyPtr StandaloneTransport::run_script(const scripts::Script& script, const Argv& keys, const Argv& args) {
  PooledConnection conn = pool_.acquire();
  return scripts_.run(*conn, script, keys, args);
}

std::vector<ReplyPtr> StandaloneTransport::run_scripts(const scripts::Script& script,
                                                       const std::vector<ScriptCall>& calls) {
  if (calls.empty()) return {};
  PooledConnection conn = pool_.acquire();
  return run_scripts_on(*conn, scripts_, script, calls);
}

ReplyPtr StandaloneTransport::run_command(std::string_view, const Argv& argv) {
  PooledConnection conn = pool_.acquire();
  return send_with_outcome(*conn, [&] { return conn->command(argv); });
}

}  // namespace polylimit
