// fuzz_reply.cpp - arbitrary bytes as a server's replies.
//
// The bytes go down the path Connection::read_reply takes: each chunk is fed
// to ReplyReader, then every complete reply is taken out; a protocol error
// ends the stream, as it breaks a connection. Every reply that gets through
// must be within the reader's caps, must equal what hiredis's own reader
// makes of the same bytes (fed alongside: where ours accepts, hiredis agrees
// on every node), and is then decoded as a script reply
// (decode_script_reply): a Decision within the limits, or an Error with a
// message.
//
// Input: byte 0 picks the limits the reply is decoded against, byte 1 the
// chunk size (0: everything in one chunk), the rest is the stream.
#include <hiredis/hiredis.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/redis_backend.h"
#include "fuzz_common.h"
#include "net/connection.h"
#include "polylimit/errors.h"

using polylimit::Error;
using polylimit::ErrorCode;
using polylimit::LimitParams;
using polylimit::Reply;
using polylimit::ReplyPtr;
using polylimit::ReplyReader;
using polylimit::ReplyType;

namespace {

std::vector<LimitParams> limits_for(uint8_t selector) {
  static const polylimit::Algorithm kAlgorithms[] = {polylimit::Algorithm::kSlidingLog,
                                                     polylimit::Algorithm::kSlidingCounter,
                                                     polylimit::Algorithm::kFixedWindow, polylimit::Algorithm::kGcra};
  static const int64_t kLimits[] = {10, 1, 5, 1000000};
  std::vector<LimitParams> out(1 + selector % 3);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].algorithm = kAlgorithms[(selector >> 2) % 4];
    out[i].limit = kLimits[(i + (selector >> 4)) % 4];
    out[i].window_ms = 1000 * static_cast<int64_t>(i + 1);
    if (out[i].algorithm == polylimit::Algorithm::kGcra && (selector & 0x80)) out[i].burst = 20;
  }
  return out;
}

void check_caps(const Reply* r, size_t depth) {
  FUZZ_CHECK(depth <= ReplyReader::kMaxDepth, "reply nested %zu deep", depth);
  switch (r->type) {
    case ReplyType::kArray:
      FUZZ_CHECK(r->elements <= static_cast<size_t>(ReplyReader::kMaxArray), "array of %zu elements got through",
                 r->elements);
      for (size_t i = 0; i < r->elements; ++i) check_caps(r->element[i], depth + 1);
      break;
    case ReplyType::kString:
    case ReplyType::kStatus:
    case ReplyType::kError:
      FUZZ_CHECK(r->len <= static_cast<size_t>(ReplyReader::kMaxBulk), "string of %zu bytes got through", r->len);
      break;
    default: break;
  }
}

// hiredis's type of the same reply.
int hiredis_type(ReplyType t) {
  switch (t) {
    case ReplyType::kNil: return REDIS_REPLY_NIL;
    case ReplyType::kStatus: return REDIS_REPLY_STATUS;
    case ReplyType::kError: return REDIS_REPLY_ERROR;
    case ReplyType::kInteger: return REDIS_REPLY_INTEGER;
    case ReplyType::kString: return REDIS_REPLY_STRING;
    case ReplyType::kArray: return REDIS_REPLY_ARRAY;
  }
  return -1;
}

// Ours and hiredis's trees of the same bytes are the same.
void check_same(const Reply* ours, const redisReply* theirs) {
  FUZZ_CHECK(hiredis_type(ours->type) == theirs->type, "type %d, hiredis %d", static_cast<int>(ours->type),
             theirs->type);
  switch (ours->type) {
    case ReplyType::kArray:
      FUZZ_CHECK(ours->elements == theirs->elements, "%zu elements, hiredis %zu", ours->elements, theirs->elements);
      for (size_t i = 0; i < ours->elements; ++i) check_same(ours->element[i], theirs->element[i]);
      break;
    case ReplyType::kString:
    case ReplyType::kStatus:
    case ReplyType::kError:
      FUZZ_CHECK(ours->len == theirs->len && std::memcmp(ours->str, theirs->str, ours->len) == 0,
                 "a string of %zu bytes, hiredis %zu", ours->len, theirs->len);
      FUZZ_CHECK(ours->str[ours->len] == '\0', "a string without its NUL");
      break;
    case ReplyType::kInteger:
      FUZZ_CHECK(ours->integer == theirs->integer, "integer %lld, hiredis %lld", static_cast<long long>(ours->integer),
                 theirs->integer);
      break;
    default: break;
  }
}

void decode(const Reply* r, const std::vector<LimitParams>& limits) {
  try {
    const polylimit::Decision d = polylimit::decode_script_reply(r, limits);
    bool matches = false;
    for (const auto& lp : limits) matches = matches || d.limit == lp.capacity();
    FUZZ_CHECK(matches, "decision limit %lld is none of the limits", static_cast<long long>(d.limit));
    FUZZ_CHECK(d.remaining >= 0 && d.remaining <= d.limit, "remaining %lld of %lld",
               static_cast<long long>(d.remaining), static_cast<long long>(d.limit));
    FUZZ_CHECK(d.retry_after_ms >= 0 && d.reset_after_ms >= 0, "negative duration");
  } catch (const Error& e) {
    FUZZ_CHECK(e.what()[0] != '\0', "empty message for code %d", static_cast<int>(e.code()));
    FUZZ_CHECK(static_cast<int>(e.code()) < 0, "an Error with code %d: %s", static_cast<int>(e.code()), e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 1 << 16) return 0;
  const std::vector<LimitParams> limits = limits_for(data[0]);
  const size_t chunk = data[1] == 0 ? size : data[1];
  const char* stream = reinterpret_cast<const char*>(data + 2);
  const size_t len = size - 2;

  ReplyReader ours("fuzz:6379");
  redisReader* hiredis = redisReaderCreate();
  FUZZ_CHECK(hiredis != nullptr, "redisReaderCreate");
  bool broken = false;
  for (size_t at = 0; at < len && !broken; at += chunk) {
    const size_t n = std::min(chunk, len - at);
    ours.feed(stream + at, n);
    FUZZ_CHECK(redisReaderFeed(hiredis, stream + at, n) == REDIS_OK, "redisReaderFeed failed");
    for (;;) {
      ReplyPtr reply;
      try {
        reply = ours.next();
      } catch (const Error& e) {
        FUZZ_CHECK(e.code() == ErrorCode::kServer, "ReplyReader threw code %d: %s", static_cast<int>(e.code()),
                   e.what());
        FUZZ_CHECK(std::string(e.what()).find("reply from fuzz:6379: protocol error (") == 0, "message: %s", e.what());
        broken = true;
        break;
      }
      if (!reply) break;
      void* raw = nullptr;
      FUZZ_CHECK(redisReaderGetReply(hiredis, &raw) == REDIS_OK && raw != nullptr,
                 "hiredis has no reply where ours has one (%s)", hiredis->errstr);
      check_same(reply.get(), static_cast<redisReply*>(raw));
      freeReplyObject(raw);
      check_caps(reply.get(), 0);
      decode(reply.get(), limits);
    }
  }
  redisReaderFree(hiredis);
  return 0;
}
