// server/origin_policy and its use by the server: Host names a loopback server answers
// (DNS rebinding), Origins it answers (cross-site requests from a browser), CORS preflight.
#include <gtest/gtest.h>

#include <string>

#include "server/origin_policy.h"
#include "server/server_test_util.h"

namespace k3::server::test {
namespace {

using V = OriginPolicy::Verdict;

TEST(OriginPolicy, HostNames) {
  EXPECT_EQ(host_name_of("LocalHost:8080"), "localhost");
  EXPECT_EQ(host_name_of("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(host_name_of("[::1]:80"), "[::1]");
  EXPECT_EQ(host_name_of("localhost."), "localhost");
  EXPECT_EQ(host_name_of("a:b"), "");  // port not a number
  EXPECT_EQ(host_name_of("localhost:"), "");
  EXPECT_EQ(host_name_of(std::string("localhost\0.evil", 15)), "");  // NUL inside
  EXPECT_EQ(host_name_of("[::1"), "");
  EXPECT_EQ(host_name_of("[::1]x"), "");
}

TEST(OriginPolicy, LoopbackDefault) {
  const OriginPolicy p = OriginPolicy::make("127.0.0.1", {}, {});
  EXPECT_EQ(p.check("127.0.0.1:8080", ""), V::same_origin);
  EXPECT_EQ(p.check("localhost:8080", ""), V::same_origin);
  EXPECT_EQ(p.check("[::1]:8080", ""), V::same_origin);
  EXPECT_EQ(p.check("", ""), V::same_origin);                    // HTTP/1.0 without Host: not a browser
  EXPECT_EQ(p.check("attacker.example:8080", ""), V::bad_host);  // DNS rebinding
  EXPECT_EQ(p.check("localhost.attacker.example", ""), V::bad_host);
  EXPECT_EQ(p.check("127.0.0.1:8080", "http://127.0.0.1:8080"), V::same_origin);
  EXPECT_EQ(p.check("127.0.0.1:8080", "http://127.0.0.1:9999"), V::bad_origin);  // another local port
  EXPECT_EQ(p.check("127.0.0.1:8080", "https://evil.example"), V::bad_origin);
  EXPECT_EQ(p.check("127.0.0.1:8080", "null"), V::bad_origin);  // sandboxed frame, file://
}

TEST(OriginPolicy, FlagsReplaceTheDefaults) {
  EXPECT_TRUE(OriginPolicy::make("0.0.0.0", {}, {}).allowed_hosts.empty());  // any host when exposed
  const OriginPolicy any = OriginPolicy::make("127.0.0.1", {"*"}, {});
  EXPECT_EQ(any.check("whatever.example", ""), V::same_origin);
  const OriginPolicy named =
      OriginPolicy::make("0.0.0.0", {"k3.lan", "K3.LAN:8080"}, {"http://localhost:3000/"});
  EXPECT_EQ(named.check("k3.lan:8080", ""), V::same_origin);
  EXPECT_EQ(named.check("other.lan", ""), V::bad_host);
  EXPECT_EQ(named.check("k3.lan:8080", "http://LOCALHOST:3000"), V::cross_allowed);
  EXPECT_EQ(named.check("k3.lan:8080", "https://k3.lan:8080"), V::same_origin);  // behind a TLS proxy
  EXPECT_EQ(OriginPolicy::make("127.0.0.1", {}, {"*"}).check("localhost", "https://x.example"),
            V::cross_allowed);
  EXPECT_EQ(split_list(" a, ,b ,"), (std::vector<std::string>{"a", "b"}));
}

std::string chat_post(const std::string& host, const std::string& origin, const std::string& type) {
  const std::string body = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
  std::string r = "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
  if (!origin.empty()) r += "Origin: " + origin + "\r\n";
  return r + "Content-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

TEST(ServerOrigin, RebindingAndCrossSiteRequestsAreRefused) {
  TestServer s;
  const std::string self = "127.0.0.1:" + std::to_string(s.port());
  // A cross-site form or fetch in text/plain needs no preflight: refused before any work.
  std::string r = raw_http(s.port(), chat_post(self, "https://evil.example", "text/plain"));
  EXPECT_EQ(r.rfind("HTTP/1.1 403", 0), 0u) << r;
  EXPECT_NE(r.find("permission_error"), std::string::npos) << r;
  EXPECT_EQ(r.find("Access-Control-Allow-Origin"), std::string::npos) << r;
  // DNS rebinding: the attacker's name resolving to 127.0.0.1, same-origin to its page.
  r = raw_http(s.port(), chat_post("rebind.example:" + std::to_string(s.port()),
                                   "http://rebind.example:" + std::to_string(s.port()), "application/json"));
  EXPECT_EQ(r.rfind("HTTP/1.1 403", 0), 0u) << r;
  EXPECT_NE(r.find("--allowed-hosts"), std::string::npos) << r;
  auto m = s.client()->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("k3_tokens_predicted_total 0\n"), std::string::npos) << "nothing was generated";
  // The server's own page, and clients that send no Origin, are answered.
  r = raw_http(s.port(), chat_post(self, "http://" + self, "application/json"));
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  r = raw_http(s.port(), chat_post("localhost:" + std::to_string(s.port()), "", "application/json"));
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
}

TEST(ServerOrigin, CorsListedOriginGetsPreflightAndHeaders) {
  ServerOptions o = default_options();
  o.cors_origins = {"http://localhost:3000"};
  o.api_key = "sekret";
  TestServer s(o);
  const std::string self = "127.0.0.1:" + std::to_string(s.port());
  std::string r =
      raw_http(s.port(), "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: " + self +
                             "\r\nOrigin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\n"
                             "Connection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 204", 0), 0u) << r;
  EXPECT_NE(r.find("Access-Control-Allow-Origin: http://localhost:3000"), std::string::npos) << r;
  EXPECT_NE(r.find("Access-Control-Allow-Headers: Authorization, Content-Type"), std::string::npos) << r;
  // Without the key: 401, readable by the page (the CORS header is there).
  r = raw_http(s.port(), chat_post(self, "http://localhost:3000", "application/json"));
  EXPECT_EQ(r.rfind("HTTP/1.1 401", 0), 0u) << r;
  EXPECT_NE(r.find("Access-Control-Allow-Origin: http://localhost:3000"), std::string::npos) << r;
  // Another origin still gets 403, preflight or not.
  r = raw_http(s.port(), "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: " + self +
                             "\r\nOrigin: http://localhost:3001\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 403", 0), 0u) << r;
}

}  // namespace
}  // namespace k3::server::test
