// The HTTP contract's golden vectors (tests/http/vectors.json) through the C
// ABI: what C programs get, and what every binding must get through its own
// API (each language's suite checks the same file).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "polylimit.h"
#include "util/json.h"

namespace {

using polylimit::json::Value;

const Value& vectors() {
  static const Value v = [] {
    std::ifstream in(POLYLIMIT_HTTP_VECTORS);
    std::stringstream s;
    s << in.rdbuf();
    return polylimit::json::parse(s.str());
  }();
  return v;
}

std::string text(const Value* v) { return v == nullptr || v->is_null() ? std::string() : v->string(); }

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A policy document back to JSON text (the vectors hold it as an object).
std::string serialize(const Value& v) {
  switch (v.type()) {
    case Value::Type::kNull: return "null";
    case Value::Type::kBool: return v.boolean() ? "true" : "false";
    case Value::Type::kNumber: return std::to_string(v.integer());
    case Value::Type::kString: return quote(v.string());
    case Value::Type::kArray: {
      std::string out = "[";
      for (const auto& i : v.array()) out += (out.size() > 1 ? "," : "") + serialize(i);
      return out + "]";
    }
    case Value::Type::kObject: {
      std::string out = "{";
      for (const auto& m : v.object()) out += (out.size() > 1 ? "," : "") + quote(m.first) + ":" + serialize(m.second);
      return out + "}";
    }
  }
  return "";
}

struct Suite {
  polylimit_client* client = nullptr;
  std::vector<polylimit_limiter*> limiters;
  polylimit_http_policy* policy = nullptr;
  std::map<std::string, size_t> header_index;

  explicit Suite(const Value& s) {
    polylimit_error err;
    EXPECT_EQ(polylimit_client_open("memory://", nullptr, &client, &err), POLYLIMIT_OK) << err.message;
    for (const auto& spec : s.find("limiters")->array()) {
      polylimit_limiter* l = nullptr;
      EXPECT_EQ(polylimit_limiter_new_spec(client, spec.string().c_str(), nullptr, &l, &err), POLYLIMIT_OK)
          << err.message;
      limiters.push_back(l);
    }
    std::string doc = serialize(*s.find("policy"));
    EXPECT_EQ(polylimit_http_policy_new(doc.data(), doc.size(), limiters.data(), limiters.size(), &policy, &err),
              POLYLIMIT_OK)
        << err.message;
    for (size_t i = 0; i < polylimit_http_policy_header_count(policy); ++i)
      header_index[polylimit_http_policy_header_name(policy, i)] = i;
  }
  ~Suite() {
    polylimit_http_policy_free(policy);
    for (auto* l : limiters) polylimit_limiter_free(l);
    polylimit_client_close(client);
  }

  polylimit_http_step prepare(const Value& r) {
    std::vector<std::string> owned;  // keeps the strings alive for the call
    owned.reserve(64);
    auto str = [&](const Value* v) {
      polylimit_str s{nullptr, 0};
      if (v != nullptr && v->is_string()) {
        owned.push_back(v->string());
        s.ptr = owned.back().c_str();
        s.len = owned.back().size();
      }
      return s;
    };
    std::vector<polylimit_str> headers(header_index.size(), polylimit_str{nullptr, 0});
    if (const Value* hs = r.find("headers"))
      for (const auto& h : hs->object()) {
        std::string name = h.first;
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        auto it = header_index.find(name);
        if (it != header_index.end()) headers[it->second] = str(&h.second);
      }
    polylimit_http_request req{};
    req.version = POLYLIMIT_HTTP_REQUEST_VERSION;
    req.method = str(r.find("method"));
    req.path = str(r.find("path"));
    req.route = str(r.find("route"));
    req.peer = str(r.find("peer"));
    req.headers = headers.data();
    req.header_count = headers.size();
    req.user = str(r.find("user"));
    req.tenant = str(r.find("tenant"));
    req.app_key = str(r.find("app_key"));
    const Value* cost = r.find("cost");
    req.cost = cost != nullptr ? cost->integer() : 0;
    polylimit_http_step step;
    polylimit_error err;
    EXPECT_EQ(polylimit_http_prepare(policy, &req, &step, &err), POLYLIMIT_OK) << err.message;
    return step;
  }
};

polylimit_decision decision_of(const Value& d) {
  polylimit_decision out{};
  auto flag = [&](const char* n) {
    const Value* v = d.find(n);
    return static_cast<uint8_t>(v != nullptr && v->boolean());
  };
  auto num = [&](const char* n) {
    const Value* v = d.find(n);
    return v != nullptr ? v->integer() : 0;
  };
  out.allowed = flag("allowed");
  out.shadowed = flag("shadowed");
  out.degraded = flag("degraded");
  out.limit = num("limit");
  out.remaining = num("remaining");
  out.retry_after_ms = num("retry_after_ms");
  out.reset_after_ms = num("reset_after_ms");
  out.granted = out.allowed ? 1 : 0;
  return out;
}

void expect_response(const polylimit_http_response& got, const Value& want, const std::string& where) {
  EXPECT_EQ(got.status, want.find("status")->integer()) << where;
  EXPECT_EQ(std::string(got.body, got.body_len), want.find("body")->string()) << where;
  std::string headers;
  for (const auto& h : want.find("headers")->array())
    headers += h.array()[0].string() + ": " + h.array()[1].string() + "\n";
  EXPECT_EQ(std::string(got.headers, got.headers_len), headers) << where;
}

const char* action_name(int a) {
  switch (a) {
    case POLYLIMIT_HTTP_PROCEED: return "proceed";
    case POLYLIMIT_HTTP_CHECK: return "check";
    case POLYLIMIT_HTTP_RESPOND: return "respond";
    case POLYLIMIT_HTTP_NEED_APP_KEY: return "need_app_key";
  }
  return "?";
}

TEST(HttpVectors, EveryCase) {
  size_t cases = 0;
  for (const auto& s : vectors().find("suites")->array()) {
    Suite suite(s);
    ASSERT_NE(suite.policy, nullptr);
    for (const auto& c : s.find("cases")->array()) {
      ++cases;
      const std::string where = s.find("name")->string() + " / " + c.find("name")->string();
      polylimit_http_step step = suite.prepare(*c.find("request"));
      const Value& want = *c.find("step");
      EXPECT_STREQ(action_name(step.action), want.find("action")->string().c_str()) << where;
      std::string rule = step.rule < 0 ? "" : polylimit_http_policy_rule_name(suite.policy, step.rule);
      EXPECT_EQ(rule, text(want.find("rule"))) << where;
      if (step.action == POLYLIMIT_HTTP_CHECK) {
        EXPECT_EQ(std::string(step.key, step.key_len), want.find("key")->string()) << where;
        EXPECT_EQ(step.cost, want.find("cost")->integer()) << where;
      }
      polylimit_http_response response;
      polylimit_error err;
      if (const Value* a = want.find("answer")) {
        ASSERT_EQ(polylimit_http_answer(suite.policy, &step, nullptr, &response, &err), POLYLIMIT_OK) << err.message;
        expect_response(response, *a, where);
      }
      if (const Value* answers = c.find("answers"))
        for (const auto& a : answers->array()) {
          const Value* d = a.find("decision");
          polylimit_decision decision{};
          if (!d->is_null()) decision = decision_of(*d);
          ASSERT_EQ(polylimit_http_answer(suite.policy, &step, d->is_null() ? nullptr : &decision, &response, &err),
                    POLYLIMIT_OK)
              << err.message;
          expect_response(response, *a.find("answer"), where + " / answer");
        }
      if (const Value* counts = c.find("counts"))
        for (const auto& kv : counts->object()) {
          polylimit_decision admitted{};
          admitted.allowed = 1;
          int status = std::stoi(kv.first);
          EXPECT_EQ(polylimit_http_refund_due(suite.policy, &step, &admitted, status), kv.second.boolean() ? 0 : 1)
              << where << " / counts " << status;
        }
    }
  }
  EXPECT_GE(cases, 40u);
}

TEST(HttpVectors, Refunds) {
  const auto& suites = vectors().find("suites")->array();
  for (const auto& r : vectors().find("refunds")->array()) {
    const Value& s = suites[static_cast<size_t>(r.find("suite")->integer())];
    Suite suite(s);
    const Value* request = nullptr;
    for (const auto& c : s.find("cases")->array())
      if (c.find("name")->string() == r.find("case")->string()) request = c.find("request");
    ASSERT_NE(request, nullptr) << r.find("case")->string();
    polylimit_http_step step = suite.prepare(*request);
    polylimit_decision d = decision_of(*r.find("decision"));
    EXPECT_EQ(polylimit_http_refund_due(suite.policy, &step, &d, static_cast<int>(r.find("status")->integer())),
              r.find("refund")->boolean() ? 1 : 0)
        << r.find("name")->string();
  }
}

TEST(HttpVectors, InvalidDocuments) {
  polylimit_client* client = nullptr;
  polylimit_error err;
  ASSERT_EQ(polylimit_client_open("memory://", nullptr, &client, &err), POLYLIMIT_OK);
  polylimit_limiter* l[2] = {nullptr, nullptr};
  ASSERT_EQ(polylimit_limiter_new_spec(client, "5/minute", nullptr, &l[0], &err), POLYLIMIT_OK);
  ASSERT_EQ(polylimit_limiter_new_spec(client, "10/second", nullptr, &l[1], &err), POLYLIMIT_OK);
  for (const auto& v : vectors().find("invalid")->array()) {
    const std::string& doc = v.find("document")->string();
    polylimit_http_policy* p = nullptr;
    EXPECT_EQ(polylimit_http_policy_new(doc.data(), doc.size(), l, 2, &p, &err), POLYLIMIT_EINVALID) << doc;
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(std::string(err.message).find(v.find("error")->string()), std::string::npos)
        << "message: " << err.message << "\nwanted: " << v.find("error")->string();
  }
  polylimit_limiter_free(l[0]);
  polylimit_limiter_free(l[1]);
  polylimit_client_close(client);
}

}  // namespace
