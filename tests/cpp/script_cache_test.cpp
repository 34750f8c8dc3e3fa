// Embedded scripts against a real server: the build-time SHA1 equals what
// SCRIPT LOAD computes, and NOSCRIPT is recovered exactly once.
#include <gtest/gtest.h>

#include "net/pool.h"
#include "redis_server.h"
#include "transport/script_cache.h"
#include "transport/transport.h"

using namespace polylimit;

TEST(ScriptCache, EmbeddedSha1MatchesScriptLoad) {
  pltest::RedisServer server;
  for (const scripts::Script* s : {&scripts::k_sliding_log, &scripts::k_sliding_counter, &scripts::k_fixed_window,
                                   &scripts::k_gcra, &scripts::k_sliding_log_single, &scripts::k_sliding_counter_single,
                                   &scripts::k_fixed_window_single, &scripts::k_gcra_single}) {
    std::string sha = server.command({"SCRIPT", "LOAD", s->source});
    EXPECT_EQ(sha, s->sha1) << s->name;
    EXPECT_EQ(sha.size(), 40u);
  }
}

TEST(ScriptCache, NoscriptReloadsOnceThenRuns) {
  pltest::RedisServer server;
  ConnectionPool pool(parse_url(server.url()), PoolOptions{});
  ScriptCache cache;
  auto conn = pool.acquire();
  const Argv args = {"check", "1", "", "5", "1000000"};
  ReplyPtr r = cache.run(*conn, scripts::k_sliding_log, {"t:{x}:k"}, args);
  ASSERT_EQ(r->type, polylimit::ReplyType::kArray);
  EXPECT_EQ(cache.reloads(), 1);  // a fresh server has no scripts
  r = cache.run(*conn, scripts::k_sliding_log, {"t:{x}:k"}, args);
  EXPECT_EQ(cache.reloads(), 1);  // cached now: plain EVALSHA
  server.command({"SCRIPT", "FLUSH"});
  r = cache.run(*conn, scripts::k_sliding_log, {"t:{x}:k"}, args);
  ASSERT_EQ(r->type, polylimit::ReplyType::kArray);
  EXPECT_EQ(cache.reloads(), 2);
  EXPECT_EQ(server.integer(pltest::ring_units("t:{x}:k")), 3);
}

// A pipeline of script calls after SCRIPT FLUSH: every call NOSCRIPTs, the
// script is loaded once, and each call runs exactly once.
TEST(ScriptCache, PipelinedCallsRecoverNoscript) {
  pltest::RedisServer server;
  StandaloneTransport transport(parse_url(server.url()), PoolOptions{});
  std::vector<ScriptCall> calls;
  for (int i = 0; i < 4; ++i) calls.push_back({{"p:{x}:k"}, {"check", "2", "", "10", "1000000000"}});
  auto replies = transport.run_scripts(scripts::k_sliding_log, calls);
  ASSERT_EQ(replies.size(), 4u);
  for (auto& r : replies) ASSERT_EQ(r->type, polylimit::ReplyType::kArray);
  EXPECT_EQ(replies[3]->element[2]->integer, 2);  // remaining after 4 x 2 units
  EXPECT_EQ(transport.noscript_reloads(), 1);
  EXPECT_EQ(server.integer(pltest::ring_units("p:{x}:k")), 8);
}
