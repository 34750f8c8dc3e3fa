// reply_reader.h - RESP2 replies out of a connection's received bytes.
//
// A reply is handed out as a tree of Reply nodes (reply.h) built in ONE
// allocation: the nodes, then the element arrays, then the strings, each
// NUL-terminated. A reader that allocates per element (hiredis's, which the
// core used before: seven allocations for a check's five integers) cost
// about a third of a check's instructions.
//
// Headers are checked as soon as they arrive, before anything is reserved
// for what they announce: an array of more than kMaxArray elements, a bulk
// string longer than kMaxBulk, nesting deeper than kMaxDepth, a type byte
// that RESP2 does not have or a malformed length is a protocol error, not a
// wait for gigabytes. Scanning resumes where it stopped, so a large reply
// arriving in many reads is walked once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "net/reply.h"

namespace polylimit {

class ReplyReader {
 public:
  static constexpr int64_t kMaxArray = 1 << 16;          // CLUSTER SLOTS of 16384 ranges fits
  static constexpr int64_t kMaxBulk = 16 * 1024 * 1024;  // INFO, script sources, error texts
  static constexpr size_t kMaxDepth = 7;                 // CLUSTER SLOTS needs 4

  // `where` names the server in errors ("reply from <where>: protocol error (...)").
  explicit ReplyReader(std::string where) : where_(std::move(where)) {}

  // Appends received bytes.
  void feed(const char* data, size_t len);
  // The next whole reply, or null while more bytes are needed. Throws
  // Error(kServer) on a protocol error (the stream cannot be trusted after
  // it) and Error(kNoMemory) when the reply cannot be allocated.
  ReplyPtr next();
  // Bytes received beyond the replies handed out.
  bool pending() const { return pos_ < buf_.size(); }

 private:
  // Scans on from scan_; true once the reply starting at pos_ is complete.
  bool scan();
  // The end of the CRLF-terminated line starting at `at` (the index of its
  // CR), or npos while it is incomplete.
  size_t line_end(size_t at) const;
  int64_t length(size_t from, size_t to, char type) const;
  [[noreturn]] void refuse(const std::string& why) const;
  ReplyPtr build();

  std::string where_;
  std::string buf_;
  size_t pos_ = 0;   // start of the next reply
  size_t scan_ = 0;  // start of the next element not yet scanned
  // The reply being scanned: elements still due at each open array level,
  // and what its tree needs.
  std::vector<int64_t> open_;
  size_t nodes_ = 0, slots_ = 0, chars_ = 0;
};

}  // namespace polylimit
