// transport.cpp - the standalone transport and pipelined script runs.
#include "transport.h"

#include <hiredis/hiredis.h>

namespace polylimit {

Argv wait_command(const Durability& durable, std::string (&storage)[2]) {
  storage[0] = std::to_string(durable.replicas);
  storage[1] = std::to_string(durable.timeout_ms);
  if (durable.aof) return {"WAITAOF", "1", storage[0], storage[1]};
  return {"WAIT", storage[0], storage[1]};
}

Ack read_ack(const redisReply* r) {
  Ack a;
  a.waited = true;
  if (r->type == REDIS_REPLY_ERROR) {
    a.error.assign(r->str, r->len);
  } else if (r->type == REDIS_REPLY_INTEGER) {
    a.replicas = r->integer;
  } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_INTEGER &&
             r->element[1]->type == REDIS_REPLY_INTEGER) {
    a.local = r->element[0]->integer;
    a.replicas = r->element[1]->integer;
  } else {
    a.error = "unexpected reply shape";
  }
  return a;
}

std::vector<ReplyPtr> run_scripts_on(Link& conn, ScriptCache& cache, const scripts::Script& script,
                                     const std::vector<ScriptCall>& calls, const Durability& durable, Ack* ack) {
  std::string wait_storage[2];
  const Argv wait = durable.on() ? wait_command(durable, wait_storage) : Argv{};
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
  // In failover-safe mode the WAIT rides in the same write, after the
  // calls; its reply is taken off the end.
  auto send = [&](std::vector<Argv> commands) {
    if (durable.on()) commands.push_back(wait);
    std::vector<ReplyPtr> replies = send_with_outcome(conn, [&] { return conn.pipeline(commands); });
    if (durable.on()) {
      if (ack) *ack = read_ack(replies.back().get());
      replies.pop_back();
    }
    return replies;
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
                                                       const std::vector<ScriptCall>& calls, const Durability& durable,
                                                       std::vector<Ack>* acks) {
  if (calls.empty()) return {};
  PooledConnection conn = pool_.acquire();
  Ack ack;
  std::vector<ReplyPtr> replies = run_scripts_on(*conn, scripts_, script, calls, durable, &ack);
  if (acks) acks->assign(calls.size(), ack);
  return replies;
}

ReplyPtr StandaloneTransport::run_command(std::string_view, const Argv& argv) {
  PooledConnection conn = pool_.acquire();
  return send_with_outcome(*conn, [&] { return conn->command(argv); });
}

}  // namespace polylimit
