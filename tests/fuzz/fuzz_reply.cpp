// fuzz_reply.cpp - arbitrary bytes as a server's replies.
//
// The bytes go down the path Connection::read_reply takes: each chunk is
// scanned by RespGuard first, then fed to hiredis's redisReader, then every
// complete reply is taken out; a refused header or a reader error ends the
// stream, as it breaks a connection. Every reply that gets through must be
// within RespGuard's caps (so hiredis never allocated more), and is then
// decoded as a script reply (decode_script_reply): a Decision within the
// limits, or an Error with a message.
//
// Input: byte 0 picks the limits the reply is decoded against, byte 1 the
// chunk size (0: everything in one chunk), the rest is the stream.
#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <vector>

#include "connection.h"
#include "fuzz_common.h"
#include "polylimit/errors.h"
#include "redis_backend.h"

using polylimit::Error;
using polylimit::ErrorCode;
using polylimit::LimitParams;
using polylimit::RespGuard;

namespace {

std::vector<LimitParams> limits_for(uint8_t selector) {
  static const polylimit::Algorithm kAlgorithms[] = {
      polylimit::Algorithm::kSlidingLog, polylimit::Algorithm::kSlidingCounter, polylimit::Algorithm::kFixedWindow,
      polylimit::Algorithm::kGcra};
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

void check_caps(const redisReply* r, int depth) {
  FUZZ_CHECK(depth < 64, "reply nested %d deep", depth);
  switch (r->type) {
    case REDIS_REPLY_ARRAY:
      FUZZ_CHECK(r->elements <= static_cast<size_t>(RespGuard::kMaxArray), "array of %zu elements got through",
                 r->elements);
      for (size_t i = 0; i < r->elements; ++i) check_caps(r->element[i], depth + 1);
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      FUZZ_CHECK(r->len <= static_cast<size_t>(RespGuard::kMaxBulk), "string of %zu bytes got through", r->len);
      break;
    default:
      break;
  }
}

void decode(const redisReply* r, const std::vector<LimitParams>& limits) {
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

  redisReader* reader = redisReaderCreate();
  FUZZ_CHECK(reader != nullptr, "redisReaderCreate");
  RespGuard guard;
  const std::string where = "fuzz:6379";
  bool broken = false;
  for (size_t at = 0; at < len && !broken; at += chunk) {
    const size_t n = std::min(chunk, len - at);
    try {
      guard.scan(stream + at, n, where);
    } catch (const Error& e) {
      FUZZ_CHECK(e.code() == ErrorCode::kServer, "RespGuard threw code %d: %s", static_cast<int>(e.code()), e.what());
      FUZZ_CHECK(std::string(e.what()).find(where) != std::string::npos, "message without the server: %s", e.what());
      break;
    }
    FUZZ_CHECK(redisReaderFeed(reader, stream + at, n) == REDIS_OK, "redisReaderFeed failed");
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader, &raw) != REDIS_OK) {
        FUZZ_CHECK(reader->errstr[0] != '\0', "reader error without a message");
        broken = true;
        break;
      }
      if (raw == nullptr) break;
      auto* reply = static_cast<redisReply*>(raw);
      check_caps(reply, 0);
      decode(reply, limits);
      freeReplyObject(reply);
    }
  }
  redisReaderFree(reader);
  return 0;
}
