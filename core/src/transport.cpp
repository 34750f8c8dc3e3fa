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
                                     const std::vector<ScriptCall>& calls, const Durability& durable, Ack* ack,
                                     const Argv& before) {
  // In failover-safe mode the WAIT rides in the same write, after the calls.
  std::string wait_storage[2];
  const Argv wait = durable.on() ? wait_command(durable, wait_storage) : Argv{};
  ReplyPtr wait_reply;
  std::vector<ReplyPtr> replies = cache.run_all(conn, script, calls, before, wait, &wait_reply);
  if (ack && wait_reply) *ack = read_ack(wait_reply.get());
  return replies;
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
