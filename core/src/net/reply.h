// reply.h - a Redis reply as the core reads it: the core's own type.
//
// ReplyReader (reply_reader.h) builds every reply it hands out as a tree of
// these nodes in ONE allocation: the nodes, then the element arrays, then the
// strings, each NUL-terminated. A ReplyPtr frees the whole tree with one
// free(). The transports pass replies up and the backends decode them, so a
// node stays a plain struct that is read in place: no constructor, no
// virtual call, no allocation of its own.
//
// The type is the core's, not a client library's: the core parses RESP
// itself, so no build of the library needs a Redis client's headers. Only
// the tests know hiredis, as the reference parser the reader is checked
// against (tests/cpp/reply_reader_test.cpp, tests/fuzz/fuzz_reply.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace polylimit {

// The RESP2 types. A nil bulk string ($-1) and a nil array (*-1) are both kNil.
enum class ReplyType : uint8_t { kNil, kStatus, kError, kInteger, kString, kArray };

struct Reply {
  ReplyType type;
  int64_t integer;  // kInteger
  size_t len;       // kStatus, kError, kString: the bytes at str
  const char* str;  // kStatus, kError, kString: len bytes and a NUL; else null
  size_t elements;  // kArray
  Reply** element;  // kArray: `elements` nodes; null when there are none

  std::string_view text() const { return {str, len}; }
};

struct ReplyDeleter {
  void operator()(Reply* r) const noexcept { std::free(r); }  // one block (ReplyReader::build)
};
using ReplyPtr = std::unique_ptr<Reply, ReplyDeleter>;

}  // namespace polylimit
