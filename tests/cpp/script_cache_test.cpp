// Embedded scripts against a real server: the build-time SHA1 equals what
// SCRIPT LOAD computes, and NOSCRIPT is recovered exactly once.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include "pool.h"
#include "redis_server.h"
#include "script_cache.h"

using namespace redlimit;

TEST(ScriptCache, EmbeddedSha1MatchesScriptLoad) {
  rltest::RedisServer server;
  for (const scripts::Script* s : {&scripts::k_sliding_log}) {
    std::string sha = server.command({"SCRIPT", "LOAD", s->source});
    EXPECT_EQ(sha, s->sha1) << s->name;
    EXPECT_EQ(sha.size(), 40u);
  }
}

TEST(ScriptCache, NoscriptReloadsOnceThenRuns) {
  rltest::RedisServer server;
  ConnectionPool pool(parse_url(server.url()), PoolOptions{});
  ScriptCache cache;
  auto conn = pool.acquire();
  // Each call gets its own token, as RedisBackend gives it.
  auto args = [](const char* token) { return Argv{"check", "5", "1000000", "1", "", token}; };
  ReplyPtr r = cache.run(*conn, scripts::k_sliding_log, {"t:{x}:k"}, args("tok1"));
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  EXPECT_EQ(cache.reloads(), 1);  // a fresh server has no scripts
  r = cache.run(*conn, scripts::k_sliding_log, {"t:{x}:k"}, args("tok2"));
  EXPECT_EQ(cache.reloads(), 1);  // cached now: plain EVALSHA
  server.command({"SCRIPT", "FLUSH"});
  r = cache.run(*conn, scripts::k_sliding_log, {"t:{x}:k"}, args("tok3"));
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  EXPECT_EQ(cache.reloads(), 2);
  EXPECT_EQ(server.integer({"ZCARD", "t:{x}:k"}), 3);
}
