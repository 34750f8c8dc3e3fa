// TLS (rediss://, rediss+cluster://, rediss+sentinel://) against real
// redis-server processes started with --tls-port and certificates this test
// makes with the openssl command line: a CA, a server certificate for
// 127.0.0.1 and localhost, an unrelated second CA, a certificate for another
// host name (other.example), and a client certificate.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "error_code.h"
#include "net/connection.h"
#include "net/tls.h"
#include "polylimit.h"
#include "polylimit/client.h"
#include "polylimit/errors.h"
#include "polylimit/limiter.h"
#include "redis_cluster.h"
#include "redis_server.h"

using namespace polylimit;
using pltest::code_of;
using namespace std::chrono;

namespace {

// The certificates, made once for the whole test program.
struct Certs {
  std::string dir;
  std::string ca, ca_key;            // trusted CA
  std::string other_ca;              // an unrelated CA
  std::string server, server_key;    // by ca: IP 127.0.0.1, DNS localhost
  std::string other, other_key;      // by ca: DNS other.example only
  std::string client, client_key;    // by ca: a client certificate
  std::string expired, expired_key;  // by ca: 127.0.0.1, but no longer valid
};

void run(const std::string& cmd, const std::string& log) {
  std::string full = "(" + cmd + ") >>'" + log + "' 2>&1";
  if (std::system(full.c_str()) != 0)
    throw std::runtime_error("failed: " + cmd + " (is the openssl command installed? see " + log + ")");
}

const Certs& certs() {
  static Certs* c = [] {
    auto* out = new Certs;
    char tmpl[] = "/tmp/polylimit-tls-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    const std::string d = out->dir = tmpl;
    const std::string log = d + "/openssl.log";
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto ca = [&](const std::string& name) {
      run("openssl req -x509 " + key + " -keyout '" + d + "/" + name + ".key' -out '" + d + "/" + name +
              ".crt' -days 30 -subj /CN=polylimit-test-" + name,
          log);
    };
    auto leaf = [&](const std::string& name, const std::string& cn, const std::string& ext, int days) {
      std::ofstream(d + "/" + name + ".ext") << ext << "\n";
      run("openssl req " + key + " -keyout '" + d + "/" + name + ".key' -out '" + d + "/" + name +
              ".csr' -subj /CN=" + cn,
          log);
      run("openssl x509 -req -in '" + d + "/" + name + ".csr' -CA '" + d + "/ca.crt' -CAkey '" + d +
              "/ca.key' -CAcreateserial -out '" + d + "/" + name + ".crt' -days " + std::to_string(days) +
              " -extfile '" + d + "/" + name + ".ext'",
          log);
    };
    ca("ca");
    ca("otherca");
    leaf("server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost", 30);
    leaf("other", "other.example", "subjectAltName=DNS:other.example", 30);
    leaf("client", "polylimit-client", "extendedKeyUsage=clientAuth", 30);
    out->ca = d + "/ca.crt";
    out->ca_key = d + "/ca.key";
    out->other_ca = d + "/otherca.crt";
    out->server = d + "/server.crt";
    out->server_key = d + "/server.key";
    out->other = d + "/other.crt";
    out->other_key = d + "/other.key";
    out->client = d + "/client.crt";
    out->client_key = d + "/client.key";
    return out;
  }();
  return *c;
}

class CertsCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::string cmd = "rm -rf '" + certs().dir + "'";
    if (std::system(cmd.c_str()) != 0) { /* best effort */
    }
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new CertsCleanup);

// redis-server with a plain port (for the fixture's PING and for test
// commands) and a TLS port serving `cert`.
struct TlsServer {
  explicit TlsServer(const std::string& cert, const std::string& cert_key, bool auth_clients = false,
                     std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--tls-auth-clients", auth_clients ? "yes" : "no"};
    args.insert(args.end(), more.begin(), more.end());
    server = std::make_unique<pltest::RedisServer>(args, pltest::TlsFiles{cert, cert_key, certs().ca});
    tls_port = server->tls_port();
  }
  std::string url(const std::string& host = "127.0.0.1") const {
    return "rediss://" + host + ":" + std::to_string(tls_port);
  }
  std::unique_ptr<pltest::RedisServer> server;
  int tls_port = 0;
};

ClientOptions with_ca(const std::string& ca_file = certs().ca) {
  ClientOptions o;
  o.tls.ca_file = ca_file;
  o.pool.connect_timeout_ms = 2000;
  o.pool.command_timeout_ms = 2000;
  return o;
}

Limiter limiter(std::shared_ptr<Client> client, int64_t limit, const std::string& prefix = "tls") {
  LimiterOptions o;
  o.prefix = prefix;
  o.limit = {Algorithm::kSlidingLog, limit, 60000};
  return Limiter(std::move(client), o);
}

// The error of the first check through a client opened with `options`.
ErrorCode check_error(const std::string& url, const ClientOptions& options, std::string* message) {
  return code_of(
      [&] {
        Limiter l = limiter(Client::open(url, options), 5);
        l.check("k");
      },
      message);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int64_t ms_since(steady_clock::time_point t) { return duration_cast<milliseconds>(steady_clock::now() - t).count(); }

// A listening socket that never accepts: connects succeed (the backlog) and
// then nothing is ever said.
struct Blackhole {
  Blackhole() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0)
      throw std::runtime_error("blackhole listen");
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Blackhole() { ::close(fd); }
  int fd = -1;
  int port = 0;
};

}  // namespace

TEST(Tls, ChecksAreExactOverRediss) {
  TlsServer s(certs().server, certs().server_key);
  auto client = Client::open(s.url(), with_ca());
  Limiter l = limiter(client, 5);
  for (int i = 0; i < 5; ++i) {
    Decision d = l.check("user:1");
    ASSERT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.remaining, 4 - i);
  }
  for (int i = 0; i < 3; ++i) {
    Decision d = l.check("user:1");
    EXPECT_FALSE(d.allowed);
    EXPECT_GT(d.retry_after_ms, 0);
  }
  // The limiter's state is on the server (read over the plain port).
  EXPECT_EQ(s.server->integer(pltest::ring_units(l.storage_key("user:1"))), 5);

  // Concurrent callers through one client: exactly `limit` admitted.
  Limiter shared = limiter(client, 300, "tls-mt");
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i)
        if (shared.check("hot").allowed) admitted.fetch_add(1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 300);
  // Batches (pipelines) over TLS.
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back("batch:" + std::to_string(i % 10));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  auto outcomes = l.check_many(views);
  int ok = 0;
  for (auto& o : outcomes) ok += !o.error && o.decision.allowed ? 1 : 0;
  EXPECT_EQ(ok, 40);
  // No connection churn: TLS leftovers never made a healthy connection look stale.
  EXPECT_LE(client->stats().connect_attempts, static_cast<uint64_t>(PoolOptions{}.size));

  // The TLS port speaks only TLS: a plain client there fails.
  ClientOptions plain;
  plain.pool.connect_timeout_ms = plain.pool.command_timeout_ms = 500;
  std::string message;
  EXPECT_NE(
      code_of([&] { limiter(Client::open("redis://127.0.0.1:" + std::to_string(s.tls_port), plain), 5).check("k"); },
              &message),
      ErrorCode::kInternal);
}

TEST(Tls, CApiOpensRedissWithCaFile) {
  TlsServer s(certs().server, certs().server_key);
  polylimit_client_options o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  o.tls_ca_file = certs().ca.c_str();
  polylimit_client* c = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_client_open(s.url().c_str(), &o, &c, &err), POLYLIMIT_OK) << err.message;
  polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
  lo.limit = 2;
  lo.window_ms = 60000;
  polylimit_limiter* l = nullptr;
  ASSERT_EQ(polylimit_limiter_new(c, &lo, &l, &err), POLYLIMIT_OK) << err.message;
  int allowed = 0;
  for (int i = 0; i < 4; ++i) {
    polylimit_decision d;
    ASSERT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, &err), POLYLIMIT_OK) << err.message;
    allowed += d.allowed ? 1 : 0;
  }
  EXPECT_EQ(allowed, 2);
  polylimit_limiter_free(l);
  polylimit_client_close(c);

  // The wrong CA through the C ABI: POLYLIMIT_EAUTH and the reason.
  o.tls_ca_file = certs().other_ca.c_str();
  ASSERT_EQ(polylimit_client_open(s.url().c_str(), &o, &c, &err), POLYLIMIT_OK) << err.message;
  ASSERT_EQ(polylimit_limiter_new(c, &lo, &l, &err), POLYLIMIT_OK) << err.message;
  polylimit_decision d;
  EXPECT_EQ(polylimit_limiter_check(l, "k", 1, 1, &d, &err), POLYLIMIT_EAUTH);
  EXPECT_TRUE(contains(err.message, "certificate verify failed")) << err.message;
  polylimit_limiter_free(l);
  polylimit_client_close(c);
}

// A reconnect to the same server resumes the TLS session (no certificate
// exchange); another server does not get it.
TEST(Tls, ReconnectsResumeTheSession) {
  TlsServer s(certs().server, certs().server_key);
  TlsServer other(certs().server, certs().server_key);
  ClientOptions o = with_ca();
  TlsContext context(o.tls);
  Endpoint ep = parse_url(s.url());
  {
    Connection first(ep, o.pool, &context);
    EXPECT_FALSE(first.tls_resumed());
    ASSERT_EQ(first.command({"PING"})->type, polylimit::ReplyType::kStatus);  // reads the session tickets
  }
  Connection second(ep, o.pool, &context);
  EXPECT_TRUE(second.tls_resumed());
  EXPECT_EQ(second.command({"PING"})->type, polylimit::ReplyType::kStatus);
  Connection elsewhere(parse_url(other.url()), o.pool, &context);
  EXPECT_FALSE(elsewhere.tls_resumed());
}

// A refused certificate backs off like a dead node: a loop of checks does
// not make a TLS handshake per call, and every error stays EAUTH.
TEST(Tls, RefusedCertificateBacksOff) {
  TlsServer s(certs().server, certs().server_key);
  const std::string url = "rediss://:s3cret-pass@127.0.0.1:" + std::to_string(s.tls_port);
  auto client = Client::open(url, with_ca(certs().other_ca));
  Limiter l = limiter(client, 5);
  const auto t0 = steady_clock::now();
  int calls = 0;
  while (ms_since(t0) < 300) {
    std::string message;
    ASSERT_EQ(code_of([&] { l.check("k"); }, &message), ErrorCode::kAuth) << message;
    ++calls;
  }
  const uint64_t attempts = client->stats().connect_attempts;
  std::printf("%d checks in 300 ms made %llu handshakes\n", calls, static_cast<unsigned long long>(attempts));
  EXPECT_GT(calls, 50);
  EXPECT_LE(attempts, 12u);  // 10 ms doubling: about 6 in 300 ms
}

TEST(Tls, WrongCaFailsWithTheReason) {
  TlsServer s(certs().server, certs().server_key);
  const std::string url = "rediss://:s3cret-pass@127.0.0.1:" + std::to_string(s.tls_port);
  std::string message;
  EXPECT_EQ(check_error(url, with_ca(certs().other_ca), &message), ErrorCode::kAuth);
  // The reason depends on whether the server sends its CA along (Redis does).
  EXPECT_TRUE(contains(message, "TLS handshake with 127.0.0.1:" + std::to_string(s.tls_port) +
                                    " failed: certificate verify failed (") &&
              (contains(message, "(self-signed certificate in certificate chain)") ||
               contains(message, "(unable to get local issuer certificate)")))
      << message;
  EXPECT_FALSE(contains(message, "s3cret")) << message;

  // No options: the system's CAs, which do not know the test CA.
  EXPECT_EQ(check_error(s.url(), ClientOptions{}, &message), ErrorCode::kAuth);
  EXPECT_TRUE(contains(message, "certificate verify failed (")) << message;
}

TEST(Tls, WrongHostNameFailsAndServerNameFixesIt) {
  TlsServer s(certs().other, certs().other_key);  // valid, by the trusted CA, for other.example only
  std::string message;
  EXPECT_EQ(check_error(s.url("127.0.0.1"), with_ca(), &message), ErrorCode::kAuth);
  EXPECT_TRUE(contains(message, "certificate verify failed (IP address mismatch)")) << message;
  EXPECT_EQ(check_error(s.url("localhost"), with_ca(), &message), ErrorCode::kAuth);
  EXPECT_TRUE(contains(message, "certificate verify failed (hostname mismatch)")) << message;

  ClientOptions named = with_ca();
  named.tls.server_name = "other.example";
  Limiter l = limiter(Client::open(s.url("127.0.0.1"), named), 1);
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_FALSE(l.check("k").allowed);

  // The name is checked, not just sent: a name the certificate lacks fails.
  named.tls.server_name = "third.example";
  EXPECT_EQ(check_error(s.url("127.0.0.1"), named, &message), ErrorCode::kAuth);
  EXPECT_TRUE(contains(message, "hostname mismatch")) << message;
}

TEST(Tls, ServerCertificateForLocalhostMatchesBothNames) {
  TlsServer s(certs().server, certs().server_key);
  EXPECT_TRUE(limiter(Client::open(s.url("localhost"), with_ca()), 1).check("k").allowed);
  EXPECT_TRUE(limiter(Client::open(s.url("127.0.0.1"), with_ca()), 1).check("j").allowed);
}

TEST(Tls, InsecureAcceptsTheWrongCaAndName) {
  TlsServer s(certs().other, certs().other_key);
  ClientOptions o;
  o.tls.ca_file = certs().other_ca;
  o.tls.insecure = true;
  Limiter l = limiter(Client::open(s.url(), o), 2);
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_FALSE(l.check("k").allowed);
}

TEST(Tls, ClientCertificateWhenTheServerRequiresOne) {
  TlsServer s(certs().server, certs().server_key, /*auth_clients=*/true);
  std::string message;
  ErrorCode code = check_error(s.url(), with_ca(), &message);
  EXPECT_EQ(code, ErrorCode::kAuth) << message;
  EXPECT_TRUE(contains(message, "client certificate")) << message;

  ClientOptions o = with_ca();
  o.tls.cert_file = certs().client;
  o.tls.key_file = certs().client_key;
  Limiter l = limiter(Client::open(s.url(), o), 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.check("k").allowed);
  EXPECT_FALSE(l.check("k").allowed);
}

TEST(Tls, BadFilesAreInvalidAtOpen) {
  std::string message;
  auto open_with = [&](const TlsOptions& t) {
    return code_of(
        [&] {
          ClientOptions o;
          o.tls = t;
          Client::open("rediss://127.0.0.1:1", o);
        },
        &message);
  };
  TlsOptions t;
  t.ca_file = certs().dir + "/missing-ca.pem";
  EXPECT_EQ(open_with(t), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(message, "tls_ca_file") && contains(message, "missing-ca.pem")) << message;

  t = {};
  t.ca_file = certs().dir + "/server.ext";  // readable, but no certificate in it
  EXPECT_EQ(open_with(t), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(message, "tls_ca_file")) << message;

  t = {};
  t.ca_dir = certs().dir + "/no-such-dir";
  EXPECT_EQ(open_with(t), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(message, "tls_ca_dir")) << message;

  t = {};
  t.cert_file = certs().client;
  EXPECT_EQ(open_with(t), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(message, "tls_key_file")) << message;

  t.key_file = certs().dir + "/missing.key";
  EXPECT_EQ(open_with(t), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(message, "tls_key_file") && contains(message, "missing.key")) << message;

  t.key_file = certs().server_key;  // another certificate's key
  EXPECT_EQ(open_with(t), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(message, "does not match")) << message;

  t.key_file = certs().client_key;
  EXPECT_NO_THROW({
    ClientOptions o;
    o.tls = t;
    Client::open("rediss://127.0.0.1:1", o);
  });

  // TLS options on a URL without TLS stay an error.
  t = {};
  t.ca_file = certs().ca;
  for (const char* url : {"redis://127.0.0.1:1", "redis+cluster://127.0.0.1:1", "memory://"}) {
    ClientOptions o;
    o.tls = t;
    EXPECT_EQ(code_of([&] { Client::open(url, o); }, &message), ErrorCode::kInvalidArgument) << url;
    EXPECT_TRUE(contains(message, "rediss://")) << message;
  }

  // Through the C ABI: POLYLIMIT_EINVALID naming the option, at open time.
  polylimit_client_options o = POLYLIMIT_CLIENT_OPTIONS_INIT;
  const std::string missing = certs().dir + "/missing-ca.pem";
  o.tls_ca_file = missing.c_str();
  polylimit_client* c = nullptr;
  polylimit_error err;
  EXPECT_EQ(polylimit_client_open("rediss://127.0.0.1:1", &o, &c, &err), POLYLIMIT_EINVALID);
  EXPECT_TRUE(contains(err.message, "tls_ca_file")) << err.message;
}

TEST(Tls, PlainPortOrSilentPortFailsWithinTheDeadline) {
  pltest::RedisServer plain;
  ClientOptions o = with_ca();
  o.pool.connect_timeout_ms = 300;
  o.pool.command_timeout_ms = 300;
  std::string message;
  auto t0 = steady_clock::now();
  ErrorCode code = check_error("rediss://127.0.0.1:" + std::to_string(plain.port()), o, &message);
  EXPECT_TRUE(code == ErrorCode::kUnavailable || code == ErrorCode::kTimeout) << message;
  EXPECT_TRUE(contains(message, "TLS handshake with 127.0.0.1:" + std::to_string(plain.port()))) << message;
  // ... and says what to do.
  EXPECT_TRUE(contains(message, "if the server does not speak TLS, use redis:// instead of rediss://")) << message;
  EXPECT_LT(ms_since(t0), 300 + 1000) << message;
  // The plain server is unharmed.
  EXPECT_EQ(plain.command({"PING"}), "PONG");

  // A port that accepts and never answers: the handshake ends at connect_timeout_ms.
  Blackhole hole;
  t0 = steady_clock::now();
  code = check_error("rediss://127.0.0.1:" + std::to_string(hole.port), o, &message);
  int64_t took = ms_since(t0);
  EXPECT_EQ(code, ErrorCode::kTimeout) << message;
  EXPECT_TRUE(
      contains(message, "TLS handshake with 127.0.0.1:" + std::to_string(hole.port) + ": timed out after 300 ms"))
      << message;
  EXPECT_GE(took, 280);
  EXPECT_LT(took, 300 + 1000);  // the deadline, not a multiple of it (the margin is for loaded machines)
}

// redis:// to a port that speaks only TLS: the server drops the connection
// at the first command, and the message names the fix.
TEST(Tls, PlainUrlToATlsPortSaysUseRediss) {
  TlsServer s(certs().server, certs().server_key);
  ClientOptions o;
  o.pool.connect_timeout_ms = 2000;
  o.pool.command_timeout_ms = 2000;
  std::string message;
  ErrorCode code = check_error("redis://127.0.0.1:" + std::to_string(s.tls_port), o, &message);
  EXPECT_EQ(code, ErrorCode::kUnavailable) << message;
  EXPECT_TRUE(contains(message, "127.0.0.1:" + std::to_string(s.tls_port))) << message;
  EXPECT_TRUE(contains(message, "if the server speaks only TLS, use rediss:// instead of redis://")) << message;
}

TEST(Tls, CommandDeadlineCoversTheTlsReply) {
  TlsServer s(certs().server, certs().server_key);
  ClientOptions o = with_ca();
  o.pool.command_timeout_ms = 250;
  auto client = Client::open(s.url(), o);
  Limiter l = limiter(client, 100);
  ASSERT_TRUE(l.check("k").allowed);  // the connection is up
  s.server->pause();
  auto t0 = steady_clock::now();
  std::string message;
  EXPECT_EQ(code_of([&] { l.check("k"); }, &message), ErrorCode::kTimeout);
  int64_t took = ms_since(t0);
  s.server->resume();
  EXPECT_GE(took, 240) << message;
  EXPECT_LT(took, 250 + 1000) << message;
  // The timed-out connection was discarded: the next call gets its own reply.
  Decision d = l.check("k");
  EXPECT_TRUE(d.allowed);
  EXPECT_GE(d.remaining, 97);  // the timed-out call may or may not have run
}

TEST(Tls, ClusterOverTls) {
  const Certs& c = certs();
  // tls-cluster: the bus and CLUSTER SLOTS (to a TLS client) use the TLS ports.
  pltest::RedisCluster cluster(3, 0, {c.server, c.server_key, c.ca});
  // One seed is enough: the other nodes come from CLUSTER SLOTS.
  const std::string url = "rediss+cluster://127.0.0.1:" + std::to_string(cluster.node(0).tls_port());
  auto client = Client::open(url, with_ca());
  Limiter l = limiter(client, 3, "tlsc");
  std::set<size_t> masters;
  int admitted = 0;
  for (int k = 0; k < 30; ++k) {
    const std::string key = "user:" + std::to_string(k);
    masters.insert(cluster.master_of_key(l.storage_key(key)));
    for (int i = 0; i < 5; ++i) admitted += l.check(key).allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 30 * 3);
  EXPECT_EQ(masters.size(), 3u);  // the keys spread over every master, all reached over TLS
  // Each master holds its share (read over the plain ports).
  long long total = 0;
  for (size_t m : masters) {
    long long n = std::stoll(cluster.command(m, {"DBSIZE"}));
    EXPECT_GT(n, 0) << "node " << m;
    total += n;
  }
  EXPECT_EQ(total, 30);

  // Wrong CA: the cluster's nodes are verified as well.
  std::string message;
  EXPECT_EQ(check_error(url, with_ca(c.other_ca), &message), ErrorCode::kAuth);
  EXPECT_TRUE(contains(message, "certificate verify failed")) << message;
}

TEST(Tls, SentinelOverTls) {
  const Certs& c = certs();
  // One master and one sentinel (the fixture's), TLS to their clients, and
  // from the sentinel to the master; ready once the sentinel has reached the
  // master over TLS (its INFO answered).
  pltest::SentinelOptions o;
  o.name = "tlsmaster";
  o.replicas = 0;
  o.sentinels = 1;
  o.tls_cert_file = c.server;
  o.tls_key_file = c.server_key;
  o.tls_ca_cert_file = c.ca;
  pltest::RedisSentinels sentinels(o);
  const std::string url = sentinels.url();
  ASSERT_EQ(url, "rediss+sentinel://127.0.0.1:" + std::to_string(sentinels.sentinel_tls_port(0)) + "/tlsmaster");
  Limiter l = limiter(Client::open(url, with_ca()), 2, "tlss");
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_TRUE(l.check("k").allowed);
  EXPECT_FALSE(l.check("k").allowed);
  EXPECT_EQ(sentinels.master().integer(pltest::ring_units(l.storage_key("k"))), 2);

  std::string message;
  EXPECT_EQ(check_error(url, with_ca(c.other_ca), &message), ErrorCode::kAuth) << message;
  EXPECT_TRUE(contains(message, "TLS")) << message;
  EXPECT_FALSE(contains(message, "refused the credentials")) << message;
  EXPECT_TRUE(contains(message, "certificate verify failed")) << message;
}
