// policy.cpp - `polylimit policy check FILE` and `polylimit policy explain
// FILE ...`: the core's own parser and request policy, so the answer is
// what every language's middleware would do with the request.
#include "policy.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "polylimit.h"

namespace {

const char* kPolicyUsage = R"(usage: polylimit policy check FILE
       polylimit policy explain FILE [request options] [--url URL]

check     reads the policy document (TOML, or JSON when it starts with '{')
          and reports its rules, or the first error with its line.
          Exit status 0 valid, 2 refused.
explain   says what the policy does with one request: the rule, the key,
          the plan and the limit, or the answer given without a check
          (401, 403, ...). With --url (or $POLYLIMIT_URL) it also shows the
          key's state on that server (a peek: nothing is consumed).
          Exit status 0 the request would go on, 1 it would be refused
          (429 included, with --url), 2 error.

Request options:
  --method M          the request's method (default GET)
  --path P            its decoded path (default /)
  --route R           the framework's route template
  --ip ADDR           the peer address (default 127.0.0.1)
  --header NAME=VAL   a request header; repeat for more
  --user ID           the user id the application supplies
  --tenant ID         the tenant id the application supplies
  --plan NAME         the plan the application's resolver would answer
  --app-key KEY       the application's key, for rules keyed by "app"
)";

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "polylimit policy: %s\n", msg.c_str());
  std::exit(2);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// A URL for messages: its password replaced.
std::string redacted(const std::string& url) {
  char* out = nullptr;
  size_t len = 0;
  polylimit_error err;
  if (polylimit_redact_url(url.c_str(), &out, &len, &err) != POLYLIMIT_OK) return "(the URL)";
  std::string s(out, len);
  polylimit_free(out);
  return s;
}

polylimit_str str(const std::string* s) {
  return s == nullptr ? polylimit_str{nullptr, 0} : polylimit_str{s->data(), s->size()};
}

}  // namespace

int run_policy(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::fputs(kPolicyUsage, stdout);
    return 0;
  }
  if (argc < 3) fail("needs a command and a FILE: policy check FILE, or policy explain FILE [options]");
  const std::string command = argv[1], file = argv[2];
  if (command != "check" && command != "explain") fail("unknown command '" + command + "' (check or explain)");
  std::string method = "GET", path = "/", ip = "127.0.0.1", url;
  std::string route, user, tenant, plan, app_key;
  bool has_route = false, has_user = false, has_tenant = false, has_plan = false, has_app_key = false;
  std::vector<std::pair<std::string, std::string>> headers;
  for (int i = 3; i < argc; ++i) {
    std::string opt = argv[i], value;
    size_t eq = opt.find('=');
    if (opt.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      fail("option " + opt + " needs a value");
    }
    if (command == "check") fail("check takes no options (got " + opt + ")");
    if (opt == "--method") {
      method = value;
    } else if (opt == "--path") {
      path = value;
    } else if (opt == "--route") {
      route = value, has_route = true;
    } else if (opt == "--ip") {
      ip = value;
    } else if (opt == "--user") {
      user = value, has_user = true;
    } else if (opt == "--tenant") {
      tenant = value, has_tenant = true;
    } else if (opt == "--plan") {
      plan = value, has_plan = true;
    } else if (opt == "--app-key") {
      app_key = value, has_app_key = true;
    } else if (opt == "--url") {
      url = value;
    } else if (opt == "--header") {
      size_t sep = value.find('=');
      if (sep == std::string::npos || sep == 0) fail("--header takes NAME=VALUE, got '" + value + "'");
      headers.emplace_back(lower(value.substr(0, sep)), value.substr(sep + 1));
    } else {
      fail("unknown option '" + opt + "' (run 'polylimit policy --help')");
    }
  }
  const std::string doc = read_file(file);
  if (url.empty() && command == "explain") {
    const char* env = std::getenv("POLYLIMIT_URL");
    if (env != nullptr) url = env;
  }
  // Without a server the limits are made on an in-process client: the rules,
  // keys and limits are the same; only the state is not the server's.
  polylimit_error err;
  polylimit_client* client = nullptr;
  const std::string where = url.empty() ? "memory://" : url;
  if (polylimit_client_open(where.c_str(), nullptr, &client, &err) != POLYLIMIT_OK)
    fail(redacted(where) + ": " + err.message);
  polylimit_http_policy* policy = nullptr;
  if (polylimit_http_policy_load(client, doc.data(), doc.size(), nullptr, 0, &policy, &err) != POLYLIMIT_OK) {
    std::fprintf(stderr, "%s: %s\n", file.c_str(), err.message);
    polylimit_client_close(client);
    return 2;
  }
  int status = 0;
  if (command == "check") {
    size_t n = polylimit_http_policy_rule_count(policy);
    std::printf("%s: valid, %zu rule%s\n", file.c_str(), n, n == 1 ? "" : "s");
    for (size_t r = 0; r < n; ++r) {
      int l = polylimit_http_policy_rule_limiter(policy, r);
      std::printf(
          "  %s: %s\n", polylimit_http_policy_rule_name(policy, r),
          l < 0 ? "exempt"
                : (*polylimit_http_policy_limiter_plan(policy, static_cast<size_t>(l)) ? "by plan" : "own limit"));
    }
  } else {
    // The headers the policy reads, in its order.
    std::vector<polylimit_str> values;
    for (size_t h = 0; h < polylimit_http_policy_header_count(policy); ++h) {
      const std::string name = polylimit_http_policy_header_name(policy, h);
      const std::string* v = nullptr;
      for (const auto& kv : headers)
        if (kv.first == name) v = &kv.second;
      values.push_back(str(v));
    }
    polylimit_http_request req{};
    req.version = POLYLIMIT_HTTP_REQUEST_VERSION;
    req.method = str(&method);
    req.path = str(&path);
    req.route = str(has_route ? &route : nullptr);
    req.peer = str(&ip);
    req.headers = values.data();
    req.header_count = values.size();
    req.user = str(has_user ? &user : nullptr);
    req.tenant = str(has_tenant ? &tenant : nullptr);
    req.app_key = str(has_app_key ? &app_key : nullptr);
    static const std::string none;
    req.plan = str(has_plan ? &plan : &none);  // no resolver here: --plan is its answer
    polylimit_http_step step;
    if (polylimit_http_prepare(policy, &req, &step, &err) != POLYLIMIT_OK) fail(err.message);
    const char* rule =
        step.rule >= 0 ? polylimit_http_policy_rule_name(policy, static_cast<size_t>(step.rule)) : nullptr;
    std::printf("rule:    %s\n", rule != nullptr ? rule : "(none matches)");
    polylimit_http_response resp;
    switch (step.action) {
      case POLYLIMIT_HTTP_PROCEED:
        std::printf("action:  proceed, unchecked (%s)\n",
                    rule != nullptr ? "the rule exempts it" : "exempt, allowed or no rule");
        break;
      case POLYLIMIT_HTTP_NEED_APP_KEY:
        std::printf("action:  the rule keys by the application's key: give --app-key\n");
        break;
      case POLYLIMIT_HTTP_RESPOND:
        polylimit_http_answer(policy, &step, nullptr, &resp, &err);
        std::printf("action:  answer %d: %s", resp.status, resp.body);
        status = 1;
        break;
      case POLYLIMIT_HTTP_CHECK: {
        std::printf("action:  check\nkey:     %.*s\ncost:    %lld\n", static_cast<int>(step.key_len), step.key,
                    static_cast<long long>(step.cost));
        const char* p = polylimit_http_policy_limiter_plan(policy, static_cast<size_t>(step.limiter));
        if (p != nullptr && *p) std::printf("plan:    %s\n", p);
        polylimit_limiter* l = nullptr;
        if (polylimit_http_policy_limiter(policy, static_cast<size_t>(step.limiter), &l, &err) != POLYLIMIT_OK)
          fail(err.message);
        polylimit_decision d;
        if (polylimit_limiter_peek(l, step.key, step.key_len, &d, &err) != POLYLIMIT_OK)
          fail(redacted(where) + ": " + err.message);
        polylimit_limiter_free(l);
        polylimit_http_answer(policy, &step, &d, &resp, &err);
        // The limit as the headers state it (RateLimit-Policy names the rule).
        std::string h(resp.headers, resp.headers_len);
        size_t at = h.find("RateLimit-Policy: ");
        if (at != std::string::npos)
          std::printf("limit:   %s\n", h.substr(at + 18, h.find('\n', at) - at - 18).c_str());
        if (!url.empty()) {
          std::printf("state:   %lld of %lld left on %s, full again in %lld ms%s\n",
                      static_cast<long long>(d.remaining), static_cast<long long>(d.limit), redacted(url).c_str(),
                      static_cast<long long>(d.reset_after_ms), d.allowed ? "" : " (the next request would get 429)");
          if (!d.allowed) status = 1;
        }
        break;
      }
      default: std::printf("action:  the tenant's plan comes from the resolver: give --plan\n"); break;
    }
  }
  polylimit_http_policy_free(policy);
  polylimit_client_close(client);
  return status;
}
