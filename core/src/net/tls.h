// tls.h - the OpenSSL side of rediss:// connections.
//
// A TlsContext is made once per client (Client::open) from its TlsOptions and
// shared by every connection of that client, in any thread: after the
// constructor nothing changes it, and SSL_new on a configured SSL_CTX is
// thread-safe. The files named by the options are read here, at open time, so
// a typo in a path is an EINVALID that names the option, not a failure on the
// first check.
//
// The session itself (TlsSession) never touches the socket: OpenSSL reads and
// writes two memory buffers, and the Connection moves the bytes with its own
// non-blocking send/recv under the call's one deadline. So TLS needs no
// socket BIO (which would write without MSG_NOSIGNAL), nothing in it can
// block, and bytes OpenSSL holds are always visible before a poll.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "polylimit/connection_options.h"
#include "polylimit/errors.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct ssl_session_st SSL_SESSION;
typedef struct bio_st BIO;

namespace polylimit {

class TlsContext {
 public:
  // Throws Error(kInvalidArgument) naming the option (tls_ca_file, ...) whose
  // file cannot be read or used.
  explicit TlsContext(const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

  // Session resumption: the last session a server (by `key`, its host:port)
  // gave us, offered on the next connection to it, so reconnects (a pool
  // growing, a restart, a failover back) skip the full handshake. Thread-safe.
  SSL_SESSION* take_session(const std::string& key) const;                // a new reference, or null
  void keep_session(const std::string& key, SSL_SESSION* session) const;  // takes the reference
  // The name to send as SNI and to verify; empty: the host being connected to.
  const std::string& server_name() const { return server_name_; }
  bool verify() const { return verify_; }

 private:
  SSL_CTX* ctx_ = nullptr;
  std::string server_name_;
  bool verify_ = true;
  mutable std::mutex sessions_mu_;
  mutable std::map<std::string, SSL_SESSION*> sessions_;
};

// One client-side TLS session over memory buffers (see above).
class TlsSession {
 public:
  // `host` is what the URL (or CLUSTER SLOTS, or a sentinel) named; the
  // certificate must match it (or the context's server_name), as a DNS name
  // or, for an IP literal, as an IP address SAN. No SNI for IP literals.
  // `session_key` (host:port) names the server for session resumption;
  // empty: none.
  TlsSession(const TlsContext& context, const std::string& host, const std::string& session_key = "");
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  enum class Want { kNone, kRead, kWrite };

  // One step of the handshake: kNone when it is complete, kRead when it needs
  // bytes from the server (after flushing outgoing()). Throws Error on
  // failure, with `where` ("127.0.0.1:6390") in the message.
  Want handshake(const std::string& where);

  // Encrypts all of data into the outgoing buffer. Throws on a TLS error.
  void write(const char* data, size_t len, const std::string& where);

  // Decrypts into buf; returns the bytes read, or 0 when more input is needed
  // (feed() it). Throws Error(kUnavailable) when the server closed the session.
  size_t read(char* buf, size_t cap, const std::string& where);

  // Bytes from the socket, for OpenSSL to decrypt.
  void feed(const char* data, size_t len);

  // The bytes to send: outgoing(&p) gives them, consume(n) drops what was sent.
  size_t outgoing(const char** data);
  void consume(size_t n);

  // Received bytes not yet handed out by read(): raw or decrypted.
  bool has_pending() const;

  // The handshake resumed an earlier session (no certificate exchange).
  bool resumed() const;

 private:
  [[noreturn]] void fail(const char* op, int ssl_error, const std::string& where);
  friend class TlsContext;
  SSL* ssl_ = nullptr;
  const TlsContext* context_ = nullptr;
  std::string session_key_;
  BIO* in_ = nullptr;    // server -> us (owned by ssl_)
  BIO* out_ = nullptr;   // us -> server (owned by ssl_)
  std::string out_buf_;  // taken from out_, partly sent
  size_t out_sent_ = 0;
};

}  // namespace polylimit
