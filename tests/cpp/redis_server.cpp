// redis_server.cpp - start/stop redis-server processes for tests.
#include "redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "net/connection.h"
#include "polylimit/connection_options.h"
#include "polylimit/errors.h"
#include "polylimit/url.h"

namespace pltest {

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("bind");
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    int devnull = ::open("/dev/null", O_RDWR);
    int out = log.empty() ? -1 : ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(devnull, 0);
    ::dup2(out >= 0 ? out : devnull, 1);
    ::dup2(out >= 0 ? out : devnull, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::_Exit(127);
  }
  return pid;
}

// ---------------------------------------------------------------- JSON

namespace {

struct JsonParser {
  const std::string& s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  [[noreturn]] void fail() { throw std::runtime_error("redisfix: bad JSON: " + s); }
  std::string str() {
    std::string out;
    if (s[i++] != '"') fail();
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) fail();
      char e = s[i++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          unsigned cp = std::stoul(s.substr(i, 4), nullptr, 16);
          i += 4;
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default: out += e;
      }
    }
    if (i >= s.size()) fail();
    ++i;
    return out;
  }
  Json value() {
    ws();
    if (i >= s.size()) fail();
    Json v;
    char c = s[i];
    if (c == '{') {
      v.kind = Json::kObject;
      ++i;
      ws();
      if (s[i] == '}') return ++i, v;
      for (;;) {
        ws();
        std::string k = str();
        ws();
        if (s[i++] != ':') fail();
        v.fields[k] = value();
        ws();
        if (s[i] == ',') {
          ++i;
          continue;
        }
        if (s[i++] != '}') fail();
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::kArray;
      ++i;
      ws();
      if (s[i] == ']') return ++i, v;
      for (;;) {
        v.items.push_back(value());
        ws();
        if (s[i] == ',') {
          ++i;
          continue;
        }
        if (s[i++] != ']') fail();
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::kString;
      v.text = str();
      return v;
    }
    if (s.compare(i, 4, "true") == 0) {
      i += 4;
      v.kind = Json::kBool;
      v.boolean = true;
      return v;
    }
    if (s.compare(i, 5, "false") == 0) {
      i += 5;
      v.kind = Json::kBool;
      return v;
    }
    if (s.compare(i, 4, "null") == 0) {
      i += 4;
      return v;
    }
    size_t used = 0;
    v.kind = Json::kNumber;
    v.number = std::stod(s.substr(i), &used);
    i += used;
    return v;
  }
};

std::string redisfix_path() {
  if (const char* p = std::getenv("POLYLIMIT_REDISFIX")) return p;
#ifdef POLYLIMIT_REDISFIX
  return POLYLIMIT_REDISFIX;
#else
  return "tests/fixture/redisfix";
#endif
}

}  // namespace

const Json& Json::operator[](const std::string& k) const {
  static const Json null;
  auto it = fields.find(k);
  return it == fields.end() ? null : it->second;
}

Json Json::parse(const std::string& text) {
  JsonParser p{text};
  return p.value();
}

// ---------------------------------------------------------------- launcher

Launcher::Launcher(const std::vector<std::string>& args) {
  int in[2], out[2];  // close-on-exec: no other child of ours may hold them open
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  std::vector<std::string> argv = {"python3", redisfix_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // No PR_SET_PDEATHSIG here: it fires when the *thread* that forked ends.
    // The launcher stops at end of input instead, when this process is gone.
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    ::execvp(cargv[0], cargv.data());
    std::_Exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_ = in[1];
  from_ = ::fdopen(out[0], "r");
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, from_)) {
    line += buf;
    if (!line.empty() && line.back() == '\n') break;
  }
  if (line.empty()) {
    int status = 0;
    ::close(to_);
    std::fclose(from_);
    ::waitpid(pid_, &status, 0);
    throw std::runtime_error(argv[1] + " printed nothing (status " + std::to_string(status) + ")");
  }
  description_ = Json::parse(line);
  if (description_["error"].kind == Json::kString) {
    std::string why = description_["error"].text;
    int status = 0;
    ::close(to_);
    std::fclose(from_);
    ::waitpid(pid_, &status, 0);
    throw std::runtime_error("redisfix " + (args.empty() ? std::string() : args[0]) + ": " + why);
  }
}

Launcher::~Launcher() {
  if (pid_ <= 0) return;
  try {
    request("stop");
  } catch (...) {
  }
  ::close(to_);
  std::fclose(from_);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

Json Launcher::request(const std::string& line) {
  std::string l = line + "\n";
  if (::write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size()))
    throw std::runtime_error("redisfix: cannot write \"" + line + "\"");
  char buf[4096];
  std::string reply;
  while (std::fgets(buf, sizeof buf, from_)) {
    reply += buf;
    if (reply.back() == '\n') break;
  }
  if (reply.empty()) throw std::runtime_error("redisfix: no answer to \"" + line + "\"");
  Json j = Json::parse(reply);
  if (j["error"].kind == Json::kString) throw std::runtime_error("redisfix " + line + ": " + j["error"].text);
  return j;
}

// ---------------------------------------------------------------- server

namespace {

std::vector<std::string> standalone_args(std::vector<std::string> tls, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"standalone"};
  args.insert(args.end(), tls.begin(), tls.end());
  args.push_back("--");
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

RedisServer::RedisServer(std::vector<std::string> extra_args)
    : RedisServer(std::make_shared<Launcher>(standalone_args({}, extra_args)), 0) {}

RedisServer::RedisServer(std::vector<std::string> extra_args, const TlsFiles& tls)
    : RedisServer(
          std::make_shared<Launcher>(standalone_args(
              {"--tls-cert-file", tls.cert, "--tls-key-file", tls.key, "--tls-ca-cert-file", tls.ca}, extra_args)),
          0) {}

RedisServer::RedisServer(std::shared_ptr<Launcher> launcher, size_t index)
    : launcher_(std::move(launcher)), index_(index) {
  const Json& node = launcher_->description()["nodes"][index];
  port_ = node["port"].integer();
  tls_port_ = node["tls_port"].integer();
  pid_ = node["pid"].integer();
}

// The launcher stops every process of the deployment with its last owner.
RedisServer::~RedisServer() = default;

void RedisServer::stop() {
  if (pid_ <= 0) return;
  launcher_->request("stop-node " + std::to_string(index_));  // SIGCONT, SIGTERM, reaped
  pid_ = -1;
}

void RedisServer::start() {
  if (pid_ > 0) return;
  pid_ = launcher_->request("start-node " + std::to_string(index_))["pid"].integer();
}

void RedisServer::pause() { ::kill(pid_, SIGSTOP); }
void RedisServer::resume() { ::kill(pid_, SIGCONT); }

namespace {

std::string to_text(const polylimit::Reply* r) {
  switch (r->type) {
    case polylimit::ReplyType::kInteger: return std::to_string(r->integer);
    case polylimit::ReplyType::kNil: return "(nil)";
    case polylimit::ReplyType::kArray: {
      std::string out;
      for (size_t i = 0; i < r->elements; ++i) {
        if (i) out += "\n";
        out += to_text(r->element[i]);
      }
      return out;
    }
    default: return std::string(r->text());
  }
}

polylimit::Endpoint loopback(int port) {
  polylimit::Endpoint ep;
  ep.kind = polylimit::Endpoint::Kind::kTcp;
  ep.host = "127.0.0.1";
  ep.port = port;
  return ep;
}

}  // namespace

polylimit::ReplyPtr raw_command(int port, const std::vector<std::string>& argv, int timeout_ms,
                                const std::string& password) {
  polylimit::PoolOptions options;
  options.connect_timeout_ms = timeout_ms;
  options.command_timeout_ms = timeout_ms;
  options.keepalive_s = 0;
  polylimit::Connection conn(loopback(port), options);
  if (!password.empty()) conn.command({"AUTH", password});
  return conn.command(polylimit::Argv(argv.begin(), argv.end()));
}

PushReader::PushReader(int port, const std::vector<std::string>& argv) {
  polylimit::PoolOptions options;
  options.connect_timeout_ms = 2000;
  options.command_timeout_ms = 10000;  // for the rest of a reply once it started
  options.keepalive_s = 0;
  conn_ = std::make_unique<polylimit::Connection>(loopback(port), options);
  std::string bytes;
  polylimit::Connection::encode(bytes, polylimit::Argv(argv.begin(), argv.end()));
  conn_->write(bytes, std::chrono::steady_clock::now() + std::chrono::seconds(2));
}

PushReader::~PushReader() = default;

polylimit::ReplyPtr PushReader::next(std::chrono::milliseconds wait) {
  bool woken = false;
  return conn_->next_reply(std::chrono::steady_clock::now() + wait, -1, woken);
}

double RedisServer::cpu_seconds() const {
  const std::string info = command({"INFO", "cpu"});
  double total = 0;
  for (const std::string field : {"used_cpu_sys:", "used_cpu_user:"}) {
    auto at = info.find(field);
    if (at != std::string::npos) total += std::atof(info.c_str() + at + field.size());
  }
  return total;
}

std::string RedisServer::command(const std::vector<std::string>& argv) const {
  polylimit::ReplyPtr r;
  try {
    r = raw_command(port_, argv, 10000);
  } catch (const polylimit::Error& e) {
    // Which command, on which server, and why (refused, closed, a timeout).
    throw std::runtime_error("test command " + (argv.empty() ? std::string() : argv[0]) + " on port " +
                             std::to_string(port_) + " failed: " + e.what());
  }
  return to_text(r.get());
}

std::vector<std::string> ring_units(const std::string& key) {
  return {"EVAL",
          "local h = redis.call('GETRANGE', KEYS[1], 0, 11) "
          "if h == '' then return 0 end "
          "local head, used = struct.unpack('>I4I4', h) return used",
          "1", key};
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int normal_clients(const RedisServer& server) {
  std::string list = server.command({"CLIENT", "LIST", "TYPE", "normal"});
  int n = 0;
  for (size_t at = 0; (at = list.find("id=", at)) != std::string::npos; at += 3) ++n;
  return n;
}

long long RedisServer::integer(const std::vector<std::string>& argv) const { return std::stoll(command(argv)); }

}  // namespace pltest
