// script_cache.cpp - EVALSHA with one NOSCRIPT reload.
#include "script_cache.h"

#include <hiredis/hiredis.h>

#include <cstring>

#include "redis_errors.h"

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

bool ScriptCache::is_noscript(const redisReply* r) {
  return r->type == REDIS_REPLY_ERROR && r->len >= 8 && std::memcmp(r->str, "NOSCRIPT", 8) == 0;
}

void ScriptCache::load(Link& conn, const scripts::Script& script) {
  ReplyPtr r = conn.command({"SCRIPT", "LOAD", script.source});
  if (r->type == REDIS_REPLY_ERROR)
    throw_reply_error(std::string(r->str, r->len), std::string("SCRIPT LOAD ") + script.name);
  if (r->type != REDIS_REPLY_STRING || std::string(r->str, r->len) != script.sha1)
    throw Error(ErrorCode::kServer, std::string("SCRIPT LOAD ") + script.name +
                                        " answered an unexpected SHA1 (expected " + script.sha1 + ")");
  reloads_.fetch_add(1, std::memory_order_relaxed);
}

ReplyPtr ScriptCache::run(Link& conn, const scripts::Script& script, const Argv& keys, const Argv& args) {
  std::string numkeys;
  Argv argv = evalsha(script, keys, args, numkeys);
  // A failure after a script call went out may come after it ran; SCRIPT
  // LOAD runs only after a NOSCRIPT reply (the script did not run), and its
  // failures leave the outcome known.
  auto send = [&conn](const Argv& call) { return send_with_outcome(conn, [&] { return conn.command(call); }); };
  ReplyPtr r = send(argv);
  if (!is_noscript(r.get())) return r;
  load(conn, script);
  r = send(argv);
  if (!is_noscript(r.get())) return r;
  // Flushed again between the load and the retry: EVAL carries the source.
  return send(eval(script, keys, args, numkeys));
}

}  // namespace polylimit
