// tls.cpp - TlsContext and TlsSession on OpenSSL (1.1.1 or 3.x).
#include "net/tls.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace polylimit {
namespace {

// The reason text of the earliest queued OpenSSL error ("wrong version
// number"), or `fallback` when the queue is empty. Clears the queue.
std::string openssl_reason(const char* fallback) {
  unsigned long e = ERR_get_error();
  std::string out;
  if (e != 0) {
    const char* reason = ERR_reason_error_string(e);
    if (reason != nullptr) {
      out = reason;
    } else {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof buf);
      out = buf;
    }
  } else {
    out = fallback;
  }
  ERR_clear_error();
  return out;
}

// A file the process can open for reading, else Error(kInvalidArgument)
// "<option> \"<path>\": <strerror>".
void check_readable(const char* option, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int e = errno;
    throw Error(ErrorCode::kInvalidArgument,
                std::string(option) + " \"" + path + "\": cannot read it (" + std::strerror(e) + ")", e);
  }
  std::fclose(f);
}

bool is_ip_literal(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

TlsContext::TlsContext(const TlsOptions& o) : server_name_(o.server_name), verify_(!o.insecure) {
  auto invalid = [&](const std::string& message) {
    ERR_clear_error();
    throw Error(ErrorCode::kInvalidArgument, message);
  };
  if (!o.key_file.empty() && o.cert_file.empty()) invalid("tls_key_file is set without tls_cert_file");
  if (!o.cert_file.empty() && o.key_file.empty()) invalid("tls_cert_file is set without tls_key_file");
  for (char c : o.server_name)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '/')
      invalid("tls_server_name \"" + o.server_name + "\" is not a host name");
  if (!o.ca_file.empty()) check_readable("tls_ca_file", o.ca_file);
  if (!o.ca_dir.empty()) {
    DIR* d = ::opendir(o.ca_dir.c_str());
    if (d == nullptr) {
      int e = errno;
      throw Error(ErrorCode::kInvalidArgument,
                  "tls_ca_dir \"" + o.ca_dir + "\": cannot open the directory (" + std::strerror(e) + ")", e);
    }
    ::closedir(d);
  }
  if (!o.cert_file.empty()) check_readable("tls_cert_file", o.cert_file);
  if (!o.key_file.empty()) check_readable("tls_key_file", o.key_file);

  ERR_clear_error();
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) throw Error(ErrorCode::kNoMemory, "cannot make a TLS context: " + openssl_reason("?"));
  try {
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    // Renegotiation is never asked for by Redis; refusing it keeps a write
    // from ever needing a read.
    SSL_CTX_set_options(ctx_, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_verify(ctx_, verify_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    // Client-side session cache, kept by us per server (keep_session): TLS
    // 1.3 tickets arrive after the handshake, through this callback.
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx_, [](SSL* ssl, SSL_SESSION* session) -> int {
      auto* s = static_cast<TlsSession*>(SSL_get_app_data(ssl));
      if (s == nullptr || s->session_key_.empty()) return 0;
      s->context_->keep_session(s->session_key_, session);
      return 1;  // the reference is ours now
    });
    if (!o.ca_file.empty() || !o.ca_dir.empty()) {
      const char* file = o.ca_file.empty() ? nullptr : o.ca_file.c_str();
      const char* dir = o.ca_dir.empty() ? nullptr : o.ca_dir.c_str();
      if (SSL_CTX_load_verify_locations(ctx_, file, dir) != 1)
        invalid(std::string(file ? "tls_ca_file \"" + o.ca_file + "\"" : "tls_ca_dir \"" + o.ca_dir + "\"") +
                ": no CA certificate could be loaded (" + openssl_reason("not PEM?") + ")");
    } else if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
      // Not fatal with tls_insecure; else every handshake says what failed.
      ERR_clear_error();
    }
    if (!o.cert_file.empty()) {
      if (SSL_CTX_use_certificate_chain_file(ctx_, o.cert_file.c_str()) != 1)
        invalid("tls_cert_file \"" + o.cert_file + "\": not a usable PEM certificate (" + openssl_reason("?") + ")");
      if (SSL_CTX_use_PrivateKey_file(ctx_, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        const std::string why = openssl_reason("?");
        if (why.find("mismatch") != std::string::npos)
          invalid("tls_key_file \"" + o.key_file + "\" does not match tls_cert_file \"" + o.cert_file + "\" (" + why +
                  ")");
        invalid("tls_key_file \"" + o.key_file + "\": not a usable PEM private key (" + why + ")");
      }
      if (SSL_CTX_check_private_key(ctx_) != 1)
        invalid("tls_key_file \"" + o.key_file + "\" does not match tls_cert_file \"" + o.cert_file + "\" (" +
                openssl_reason("?") + ")");
    }
  } catch (...) {
    SSL_CTX_free(ctx_);
    throw;
  }
}

TlsContext::~TlsContext() {
  for (auto& entry : sessions_) SSL_SESSION_free(entry.second);
  SSL_CTX_free(ctx_);
}

SSL_SESSION* TlsContext::take_session(const std::string& key) const {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return nullptr;
  SSL_SESSION_up_ref(it->second);
  return it->second;
}

void TlsContext::keep_session(const std::string& key, SSL_SESSION* session) const {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  SSL_SESSION*& slot = sessions_[key];
  if (slot != nullptr) SSL_SESSION_free(slot);
  slot = session;
}

TlsSession::TlsSession(const TlsContext& context, const std::string& host, const std::string& session_key)
    : context_(&context), session_key_(session_key) {
  ERR_clear_error();
  ssl_ = SSL_new(context.get());
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  if (ssl_ == nullptr || in_ == nullptr || out_ == nullptr) {
    BIO_free(in_);
    BIO_free(out_);
    SSL_free(ssl_);
    ERR_clear_error();
    throw Error(ErrorCode::kNoMemory, "cannot make a TLS session");
  }
  // An empty input buffer is "retry later", not end of file.
  BIO_set_mem_eof_return(in_, -1);
  BIO_set_mem_eof_return(out_, -1);
  SSL_set_bio(ssl_, in_, out_);  // ssl_ owns both from here
  SSL_set_connect_state(ssl_);
  SSL_set_app_data(ssl_, this);
  if (!session_key_.empty()) {
    if (SSL_SESSION* cached = context.take_session(session_key_)) {
      SSL_set_session(ssl_, cached);  // a failed resumption is a full handshake
      SSL_SESSION_free(cached);
    }
  }
  const std::string& name = context.server_name().empty() ? host : context.server_name();
  bool ok = true;
  if (is_ip_literal(name)) {
    if (context.verify()) ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str()) == 1;
  } else {
    ok = SSL_set_tlsext_host_name(ssl_, name.c_str()) == 1;
    if (ok && context.verify()) {
      SSL_set_hostflags(ssl_, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      ok = SSL_set1_host(ssl_, name.c_str()) == 1;
    }
  }
  if (!ok) {
    std::string why = openssl_reason("?");
    SSL_free(ssl_);
    throw Error(ErrorCode::kInvalidArgument, "TLS server name \"" + name + "\" cannot be used (" + why + ")");
  }
}

bool TlsSession::resumed() const { return SSL_session_reused(ssl_) == 1; }

TlsSession::~TlsSession() {
  // No close_notify: the destructor also runs in a forked child that drops
  // the parent's connections, and must not write on a socket it shares.
  // Marked shut down all the same (nothing is written): OpenSSL would
  // otherwise mark the session not resumable.
  SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_free(ssl_);
}

void TlsSession::fail(const char* op, int ssl_error, const std::string& where) {
  std::string head = std::string(op) + " " + where + " failed: ";
  if (ssl_error == SSL_ERROR_ZERO_RETURN) {
    ERR_clear_error();
    throw Error(ErrorCode::kUnavailable, head + "the server closed the TLS session");
  }
  unsigned long e = ERR_peek_error();
  int reason = e != 0 ? ERR_GET_REASON(e) : 0;
  if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    long vr = SSL_get_verify_result(ssl_);
    ERR_clear_error();
    // Not retryable: the server's certificate does not prove who it is.
    throw Error(ErrorCode::kAuth, head + "certificate verify failed (" + X509_verify_cert_error_string(vr) + ")");
  }
  switch (reason) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED: {
      std::string why = openssl_reason("?");
      throw Error(ErrorCode::kAuth,
                  head + "the server refused the client certificate (" + why + "; see tls_cert_file and tls_key_file)");
    }
    default: break;
  }
  std::string why = openssl_reason(ssl_error == SSL_ERROR_SYSCALL ? "I/O error" : "TLS error");
  if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG) why += "; is it a TLS port?";
  throw Error(ErrorCode::kUnavailable, head + why);
}

TlsSession::Want TlsSession::handshake(const std::string& where) {
  ERR_clear_error();
  int rc = SSL_do_handshake(ssl_);
  if (rc == 1) return Want::kNone;
  int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ) return Want::kRead;
  if (err == SSL_ERROR_WANT_WRITE) return Want::kWrite;  // not with memory buffers; handled anyway
  fail("TLS handshake with", err, where);
}

void TlsSession::write(const char* data, size_t len, const std::string& where) {
  if (len == 0) return;
  ERR_clear_error();
  size_t written = 0;
  // The output buffer grows: one call takes everything (no partial writes).
  if (SSL_write_ex(ssl_, data, len, &written) != 1 || written != len)
    fail("TLS write to", SSL_get_error(ssl_, 0), where);
}

size_t TlsSession::read(char* buf, size_t cap, const std::string& where) {
  ERR_clear_error();
  size_t got = 0;
  if (SSL_read_ex(ssl_, buf, cap, &got) == 1) return got;
  int err = SSL_get_error(ssl_, 0);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return 0;
  fail("TLS read from", err, where);
}

void TlsSession::feed(const char* data, size_t len) {
  if (BIO_write(in_, data, static_cast<int>(len)) != static_cast<int>(len)) {
    ERR_clear_error();
    throw Error(ErrorCode::kNoMemory, "cannot buffer TLS input");
  }
}

size_t TlsSession::outgoing(const char** data) {
  size_t pending = BIO_ctrl_pending(out_);
  if (pending > 0) {
    size_t old = out_buf_.size();
    out_buf_.resize(old + pending);
    int n = BIO_read(out_, &out_buf_[old], static_cast<int>(pending));
    out_buf_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
  }
  *data = out_buf_.data() + out_sent_;
  return out_buf_.size() - out_sent_;
}

void TlsSession::consume(size_t n) {
  out_sent_ += n;
  if (out_sent_ >= out_buf_.size()) {
    out_buf_.clear();
    out_sent_ = 0;
  }
}

bool TlsSession::has_pending() const { return SSL_pending(ssl_) > 0 || BIO_ctrl_pending(in_) > 0; }

}  // namespace polylimit
