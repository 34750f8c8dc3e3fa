// fuzz_url.cpp - polylimit::parse_url and redact_url.
//
// The first byte picks a mode:
//  - raw: the rest is the URL. parse_url either returns a sane Endpoint or
//    throws Error(kInvalidArgument) with a message; redact_url never fails
//    and is idempotent.
//  - structured: the rest builds scheme://user:<password>@<tail>, plus
//    ?sentinel_password=<password2> for Sentinel, where each password starts
//    with a marker no other part contains. Whatever parse_url throws, its
//    message never holds a password (or its marker), and redact_url's output
//    never holds one either.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "polylimit/errors.h"
#include "polylimit/url.h"

using polylimit::Endpoint;
using polylimit::Error;
using polylimit::ErrorCode;
using polylimit_fuzz::contains;

namespace {

constexpr const char* kMarker = "Zk9Secret";
constexpr const char* kMarker2 = "Qx7Sentinel";

void check_endpoint(const std::string& url, const Endpoint& ep) {
  switch (ep.kind) {
    case Endpoint::Kind::kTcp:
      FUZZ_CHECK(!ep.host.empty(), "url %s: empty host", url.c_str());
      FUZZ_CHECK(ep.port >= 1 && ep.port <= 65535, "url %s: port %d", url.c_str(), ep.port);
      break;
    case Endpoint::Kind::kUnix:
      FUZZ_CHECK(!ep.path.empty() && ep.path[0] == '/', "url %s: path %s", url.c_str(), ep.path.c_str());
      break;
    case Endpoint::Kind::kCluster:
    case Endpoint::Kind::kSentinel:
      FUZZ_CHECK(!ep.seeds.empty(), "url %s: no seeds", url.c_str());
      for (const auto& hp : ep.seeds) {
        FUZZ_CHECK(!hp.host.empty(), "url %s: empty seed host", url.c_str());
        FUZZ_CHECK(hp.port >= 1 && hp.port <= 65535, "url %s: seed port %d", url.c_str(), hp.port);
        (void)hp.describe();
      }
      if (ep.kind == Endpoint::Kind::kSentinel) FUZZ_CHECK(!ep.master_name.empty(), "url %s", url.c_str());
      break;
    case Endpoint::Kind::kMemory: break;
  }
  for (char c : ep.host) {
    const auto u = static_cast<unsigned char>(c);
    FUZZ_CHECK(u >= 0x20 && u != 0x7f, "url %s: control character in host", url.c_str());
  }
  FUZZ_CHECK(ep.db >= 0, "url %s: db %d", url.c_str(), ep.db);
  (void)ep.describe();
}

// parse_url's outcome: "" when it parsed, else the message it threw.
std::string parse(const std::string& url) {
  try {
    check_endpoint(url, polylimit::parse_url(url));
    return std::string();
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::kInvalidArgument, "url %s: code %d", url.c_str(), static_cast<int>(e.code()));
    std::string message = e.what();
    FUZZ_CHECK(!message.empty(), "url %s: empty message", url.c_str());
    return message;
  }
}

// A fuzzed string without the bytes in `banned` and without either marker.
std::string part(FuzzedDataProvider& in, size_t max, const char* banned) {
  std::string s = in.ConsumeRandomLengthString(max);
  std::string out;
  for (char c : s)
    if (std::string(banned).find(c) == std::string::npos && c != '\0') out += c;
  for (const char* m : {kMarker, kMarker2})
    for (size_t p; (p = out.find(m)) != std::string::npos;) out.erase(p, 1);
  return out;
}

void structured(FuzzedDataProvider& in) {
  static const char* const kSchemes[] = {"redis",  "redis+cluster", "redis+sentinel", "rediss",         "unix",
                                         "memory", "REDIS",         "redis+sentinel", "rediss+cluster", ""};
  const std::string scheme = kSchemes[in.ConsumeIntegralInRange<size_t>(0, 9)];
  const bool with_user = in.ConsumeBool();
  // Userinfo may hold anything but the authority's terminators.
  const std::string user = with_user ? part(in, 16, "@/?:") : std::string();
  const std::string password = kMarker + part(in, 24, "@/?");
  const bool with_sentinel_password = in.ConsumeBool();
  const std::string password2 = kMarker2 + part(in, 24, "&");
  const std::string tail = part(in, 64, "");
  const std::string query_tail = part(in, 32, "");

  std::string url = scheme + "://" + (with_user ? user : std::string()) + ":" + password + "@" + tail;
  if (with_sentinel_password) {
    url += (tail.find('?') == std::string::npos ? "?" : "&");
    url += "sentinel_password=" + password2;
    if (!query_tail.empty()) url += "&" + query_tail;
  }

  const std::string message = parse(url);
  const std::string redacted = polylimit::redact_url(url);
  for (const std::string& secret : {password, with_sentinel_password ? password2 : std::string()}) {
    if (secret.empty()) continue;
    FUZZ_CHECK(!contains(message, secret), "url %s: the error message quotes a password:\n  %s", url.c_str(),
               message.c_str());
    FUZZ_CHECK(!contains(redacted, secret), "url %s: redact_url kept a password: %s", url.c_str(), redacted.c_str());
  }
  FUZZ_CHECK(!contains(message, kMarker), "url %s: the error message quotes part of the password:\n  %s", url.c_str(),
             message.c_str());
  FUZZ_CHECK(!contains(redacted, kMarker), "url %s: redact_url kept part of the password: %s", url.c_str(),
             redacted.c_str());
  if (with_sentinel_password) {
    FUZZ_CHECK(!contains(message, kMarker2), "url %s: the error message quotes the sentinel password:\n  %s",
               url.c_str(), message.c_str());
    FUZZ_CHECK(!contains(redacted, kMarker2), "url %s: redact_url kept the sentinel password: %s", url.c_str(),
               redacted.c_str());
  }
}

void raw(const std::string& url) {
  (void)parse(url);
  const std::string once = polylimit::redact_url(url);
  const std::string twice = polylimit::redact_url(once);
  FUZZ_CHECK(once == twice, "redact_url is not idempotent:\n  %s\n  %s\n  %s", url.c_str(), once.c_str(),
             twice.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 4096) return 0;
  if (data[0] & 1) {
    FuzzedDataProvider in(data + 1, size - 1);
    structured(in);
  } else {
    raw(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  }
  return 0;
}
