// connection_options.h - how a client's connections are made: the pool and
// TLS options (ClientOptions::pool, ClientOptions::tls). A header of their
// own, below client.h, so that the connection layer (core/src/net/) reads
// them without including the client.
#pragma once

#include <string>

#include "polylimit/vocabulary.h"

namespace polylimit {

// Pool and transport knobs; defaults and bounds come from the vocabulary.
struct PoolOptions {
  int size = bounds::kPoolSize.def;                        // most connections open at once
  int connect_timeout_ms = bounds::kConnectTimeoutMs.def;  // TCP / unix connect
  int command_timeout_ms = bounds::kCommandTimeoutMs.def;  // send and reply of one command
  int acquire_timeout_ms = bounds::kAcquireTimeoutMs.def;  // wait for a free connection when all are busy
  int keepalive_s = bounds::kKeepaliveS.def;               // TCP keepalive interval; 0: keepalive off
  int idle_check_ms = bounds::kIdleCheckMs.def;            // PING a connection idle longer than this before reuse
};

// TLS for rediss:// (and TLS Cluster / Sentinel URLs). Empty strings: unset.
struct TlsOptions {
  std::string ca_file;      // PEM bundle of trusted CAs; empty (and no ca_dir): the system's
  std::string ca_dir;       // directory of hashed CA certificates
  std::string cert_file;    // client certificate (PEM), for servers that require one
  std::string key_file;     // its private key (PEM)
  std::string server_name;  // SNI and the name the certificate must match; empty: the URL's host
  bool insecure = false;    // no certificate or host name verification (tests only)

  bool any_set() const {
    return !ca_file.empty() || !ca_dir.empty() || !cert_file.empty() || !key_file.empty() || !server_name.empty() ||
           insecure;
  }
};

}  // namespace polylimit
