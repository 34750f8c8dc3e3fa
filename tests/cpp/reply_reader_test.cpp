// ReplyReader: RESP2 bytes into Reply trees, and the headers it refuses;
// hiredis's reader, the reference, makes the same trees of the same bytes.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "net/reply_reader.h"
#include "polylimit/errors.h"

using polylimit::Error;
using polylimit::ErrorCode;
using polylimit::Reply;
using polylimit::ReplyPtr;
using polylimit::ReplyReader;
using polylimit::ReplyType;

namespace {

// A reply as text, to compare trees: S"..." (status), E"..." (error),
// B"..." (bulk), I<n>, N (nil), [a,b,...].
std::string show(const Reply* r) {
  switch (r->type) {
    case ReplyType::kStatus: return "S\"" + std::string(r->text()) + "\"";
    case ReplyType::kError: return "E\"" + std::string(r->text()) + "\"";
    case ReplyType::kString: EXPECT_EQ(r->str[r->len], '\0'); return "B\"" + std::string(r->text()) + "\"";
    case ReplyType::kInteger: return "I" + std::to_string(r->integer);
    case ReplyType::kNil: EXPECT_EQ(r->str, nullptr); return "N";
    case ReplyType::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < r->elements; ++i) out += (i ? "," : "") + show(r->element[i]);
      if (r->elements == 0) EXPECT_EQ(r->element, nullptr);
      return out + "]";
    }
  }
  return "?";
}

// hiredis's reply as the same text.
std::string show(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_STATUS: return "S\"" + std::string(r->str, r->len) + "\"";
    case REDIS_REPLY_ERROR: return "E\"" + std::string(r->str, r->len) + "\"";
    case REDIS_REPLY_STRING: return "B\"" + std::string(r->str, r->len) + "\"";
    case REDIS_REPLY_INTEGER: return "I" + std::to_string(r->integer);
    case REDIS_REPLY_NIL: return "N";
    case REDIS_REPLY_ARRAY: {
      std::string out = "[";
      for (size_t i = 0; i < r->elements; ++i) out += (i ? "," : "") + show(r->element[i]);
      return out + "]";
    }
    default: return "hiredis type " + std::to_string(r->type);
  }
}

// Every reply in `bytes`, fed in chunks of `chunk` bytes.
std::vector<std::string> read_all(const std::string& bytes, size_t chunk) {
  ReplyReader reader("test:6379");
  std::vector<std::string> out;
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    reader.feed(bytes.data() + at, std::min(chunk, bytes.size() - at));
    while (ReplyPtr r = reader.next()) out.push_back(show(r.get()));
  }
  EXPECT_FALSE(reader.pending());
  return out;
}

// What hiredis's reader makes of the same bytes, fed the same way.
std::vector<std::string> hiredis_all(const std::string& bytes, size_t chunk) {
  redisReader* reader = redisReaderCreate();
  std::vector<std::string> out;
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    EXPECT_EQ(redisReaderFeed(reader, bytes.data() + at, std::min(chunk, bytes.size() - at)), REDIS_OK);
    for (;;) {
      void* r = nullptr;
      if (redisReaderGetReply(reader, &r) != REDIS_OK) {
        ADD_FAILURE() << "hiredis refused the stream: " << reader->errstr;
        redisReaderFree(reader);
        return out;
      }
      if (r == nullptr) break;
      out.push_back(show(static_cast<const redisReply*>(r)));
      freeReplyObject(r);
    }
  }
  redisReaderFree(reader);
  return out;
}

// One random well-formed reply within the reader's caps: every type, nested
// arrays up to kMaxDepth, bulk strings of any bytes (CR, LF and NUL too),
// integers over the whole int64 range, nils of both kinds.
std::string random_reply(std::mt19937_64& rng, size_t depth) {
  auto pick = [&rng](uint64_t n) { return rng() % n; };
  const uint64_t kind = depth < ReplyReader::kMaxDepth ? pick(7) : pick(5);
  switch (kind) {
    case 0:
    case 1: {  // a status or an error line: any bytes but CR and LF
      std::string line;
      for (uint64_t i = pick(24); i > 0; --i) {
        char c = static_cast<char>(pick(256));
        line += c == '\r' || c == '\n' ? ' ' : c;
      }
      return (kind == 0 ? "+" : "-") + line + "\r\n";
    }
    case 2: {  // an integer: small ones, and the extremes
      const uint64_t how = pick(4);
      int64_t v = static_cast<int64_t>(rng());
      if (how == 0) v = static_cast<int64_t>(pick(1000)) - 500;
      if (how == 1) v = pick(2) ? INT64_MAX : INT64_MIN;
      return ":" + std::to_string(v) + "\r\n";
    }
    case 3: {  // a bulk string, or a nil one
      if (pick(8) == 0) return "$-1\r\n";
      std::string body;
      for (uint64_t i = pick(pick(4) == 0 ? 300 : 12); i > 0; --i) body += static_cast<char>(pick(256));
      return "$" + std::to_string(body.size()) + "\r\n" + body + "\r\n";
    }
    case 4: return pick(2) ? "*-1\r\n" : "*0\r\n";
    default: {  // an array of 1 to 6 replies
      const uint64_t n = 1 + pick(6);
      std::string out = "*" + std::to_string(n) + "\r\n";
      for (uint64_t i = 0; i < n; ++i) out += random_reply(rng, depth + 1);
      return out;
    }
  }
}

// The message of the protocol error `bytes` (fed at once) end in.
std::string refusal(const std::string& bytes) {
  ReplyReader reader("test:6379");
  reader.feed(bytes.data(), bytes.size());
  try {
    while (reader.next()) {
    }
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kServer) << e.what();
    return e.what();
  }
  return "(not refused)";
}

}  // namespace

TEST(ReplyReader, EveryType) {
  const std::string binary("a\r\n\0b", 5);
  const std::string bytes =
      "+OK\r\n-ERR no such key\r\n:42\r\n:-9223372036854775808\r\n:9223372036854775807\r\n"
      "$3\r\nabc\r\n$0\r\n\r\n$5\r\n" +
      binary +
      "\r\n$-1\r\n*-1\r\n*0\r\n"
      "*3\r\n:1\r\n*2\r\n$1\r\nx\r\n*0\r\n+\r\n";
  const std::vector<std::string> expected = {"S\"OK\"",
                                             "E\"ERR no such key\"",
                                             "I42",
                                             "I-9223372036854775808",
                                             "I9223372036854775807",
                                             "B\"abc\"",
                                             "B\"\"",
                                             "B\"" + binary + "\"",
                                             "N",
                                             "N",
                                             "[]",
                                             "[I1,[B\"x\",[]],S\"\"]"};
  EXPECT_EQ(read_all(bytes, bytes.size()), expected);
}

// Whatever the reads' boundaries, the same replies come out, each only once
// its last byte is in.
TEST(ReplyReader, AnySplitGivesTheSameReplies) {
  const std::string bytes =
      "*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:60000\r\n$-1\r\n-MOVED 1 h:1\r\n"
      "*2\r\n*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
      "$4\r\n\r\n\r\n\r\n";
  const std::vector<std::string> whole = read_all(bytes, bytes.size());
  ASSERT_EQ(whole.size(), 4u);
  for (size_t chunk = 1; chunk < bytes.size(); ++chunk) EXPECT_EQ(read_all(bytes, chunk), whole) << chunk;

  ReplyReader reader("test:6379");
  const std::string one = "*2\r\n:1\r\n:2\r\n";
  for (size_t i = 0; i + 1 < one.size(); ++i) {
    reader.feed(&one[i], 1);
    EXPECT_EQ(reader.next(), nullptr) << i;
  }
  reader.feed(&one.back(), 1);
  ReplyPtr r = reader.next();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(show(r.get()), "[I1,I2]");
}

TEST(ReplyReader, BytesBeyondTheRepliesArePending) {
  ReplyReader reader("test:6379");
  const std::string bytes = ":1\r\n:2";
  reader.feed(bytes.data(), bytes.size());
  ASSERT_NE(reader.next(), nullptr);
  EXPECT_TRUE(reader.pending());
  EXPECT_EQ(reader.next(), nullptr);
  reader.feed("\r\n", 2);
  ASSERT_NE(reader.next(), nullptr);
  EXPECT_FALSE(reader.pending());
}

// A long stream read in odd chunks: the buffer is compacted on the way and
// every value arrives in order.
TEST(ReplyReader, ALongStreamInOddChunks) {
  std::string bytes;
  const int n = 50000;
  for (int i = 0; i < n; ++i)
    bytes += i % 3 == 0 ? ":" + std::to_string(i) + "\r\n"
                        : "$" + std::to_string(std::to_string(i).size()) + "\r\n" + std::to_string(i) + "\r\n";
  ReplyReader reader("test:6379");
  int next = 0;
  for (size_t at = 0; at < bytes.size(); at += 7) {
    reader.feed(bytes.data() + at, std::min<size_t>(7, bytes.size() - at));
    while (ReplyPtr r = reader.next()) {
      const std::string expected = next % 3 == 0 ? "I" + std::to_string(next) : "B\"" + std::to_string(next) + "\"";
      ASSERT_EQ(show(r.get()), expected);
      ++next;
    }
  }
  EXPECT_EQ(next, n);
  EXPECT_FALSE(reader.pending());
}

TEST(ReplyReader, TheCapsThemselvesAreAccepted) {
  std::string bytes = "*" + std::to_string(ReplyReader::kMaxArray) + "\r\n";
  for (int64_t i = 0; i < ReplyReader::kMaxArray; ++i) bytes += ":7\r\n";
  ReplyReader reader("test:6379");
  reader.feed(bytes.data(), bytes.size());
  ReplyPtr r = reader.next();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->elements, static_cast<size_t>(ReplyReader::kMaxArray));
  EXPECT_EQ(r->element[ReplyReader::kMaxArray - 1]->integer, 7);

  std::string deep;
  for (size_t i = 0; i < ReplyReader::kMaxDepth; ++i) deep += "*1\r\n";
  deep += ":1\r\n";
  EXPECT_EQ(read_all(deep, 3).size(), 1u);

  const std::string big(static_cast<size_t>(ReplyReader::kMaxBulk), 'x');
  const std::string bulk = "$" + std::to_string(big.size()) + "\r\n" + big + "\r\n";
  ReplyReader bulk_reader("test:6379");
  bulk_reader.feed(bulk.data(), bulk.size());
  r = bulk_reader.next();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->len, big.size());
}

TEST(ReplyReader, RefusedHeadersNameTheServerAndTheReason) {
  std::string too_deep;
  for (size_t i = 0; i <= ReplyReader::kMaxDepth; ++i) too_deep += "*1\r\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"*65537\r\n", "'*65537' is larger than 65536 elements"},
      {"$16777217\r\n", "'$16777217' is larger than 16777216 bytes"},
      {"*2147483647\r\n", "larger than"},
      {"$99999999999999999999", "more than 18 digits"},  // refused before its CRLF
      {"!oops\r\n", "unexpected type byte 0x21"},
      {"*1\r\n$-5x\r\n", "a length with the byte 0x78"},
      {"$-2\r\n", "the length '$-2'"},
      {"*-\r\n", "empty length after '*'"},
      {"$\r\n", "empty length after '$'"},
      {":12a\r\n", "the integer '12a'"},
      {":007\r\n", "the integer '007'"},
      {":-0\r\n", "the integer '-0'"},
      {"*00\r\n", "the length '*00'"},
      {"$-01\r\n", "the length '$-01'"},
      {":\r\n", "the integer ''"},
      {":9223372036854775808\r\n", "the integer"},
      {":-9223372036854775809\r\n", "the integer"},
      {"+OK\rX", "CR without LF"},
      {"$3\r\nabcXY", "a bulk string without CRLF after its bytes"},
      {too_deep, "nested more than 7 deep"},
  };
  for (const auto& [bytes, why] : cases) {
    const std::string msg = refusal(bytes);
    EXPECT_NE(msg.find("reply from test:6379: protocol error ("), std::string::npos) << bytes << ": " << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << bytes << ": " << msg;
  }
}

// A line with no end is refused once it is longer than any line of ours,
// rather than buffered for ever.
TEST(ReplyReader, AnEndlessLineIsRefused) {
  ReplyReader reader("test:6379");
  const std::string chunk(64 * 1024, 'a');
  reader.feed("+", 1);
  bool refused = false;
  for (int i = 0; i < 32 && !refused; ++i) {
    reader.feed(chunk.data(), chunk.size());
    try {
      EXPECT_EQ(reader.next(), nullptr);
    } catch (const Error& e) {
      refused = true;
      EXPECT_NE(std::string(e.what()).find("a line of more than"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(refused);
}

// The differential test: streams of random replies, read whole, byte by byte
// and in random chunks, give the same trees as hiredis's reader (the fuzz
// target fuzz_reply does the same with arbitrary bytes).
TEST(ReplyReader, AgreesWithHiredis) {
  std::mt19937_64 rng(47);
  for (int round = 0; round < 400; ++round) {
    std::string bytes;
    for (uint64_t i = 1 + rng() % 12; i > 0; --i) bytes += random_reply(rng, 0);
    const std::vector<size_t> chunks = {bytes.size(), 1, 1 + static_cast<size_t>(rng() % 64)};
    for (size_t chunk : chunks) {
      const std::vector<std::string> ours = read_all(bytes, chunk);
      ASSERT_EQ(ours, hiredis_all(bytes, chunk)) << "round " << round << ", chunks of " << chunk;
      ASSERT_FALSE(ours.empty());
    }
  }
  // The streams of the tests above.
  std::string deep;
  for (size_t i = 0; i < ReplyReader::kMaxDepth; ++i) deep += "*1\r\n";
  deep += ":1\r\n";
  for (const std::string& bytes :
       {std::string("+OK\r\n-ERR no such key\r\n:42\r\n$3\r\nabc\r\n$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n"),
        std::string("*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:60000\r\n$-1\r\n-MOVED 1 h:1\r\n"
                    "*2\r\n*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
                    "$4\r\n\r\n\r\n\r\n"),
        deep})
    EXPECT_EQ(read_all(bytes, 1), hiredis_all(bytes, 1)) << bytes;
}
