// Hostile HTTP clients (issue 17): each case a raw request on loopback, each asserting the
// answer and that the server still answers /health after.
#include <gtest/gtest.h>

#include <string>

#include "server_test_util.h"

namespace k3::server::test {
namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

void expect_health(const TestServer& s) {
  auto h = s.client()->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// (5) A request refused before its body is read (401 here) ends its connection; the body was
// parsed as the next request on the same connection before.
TEST(HttpHostile, RefusedRequestsBodyIsNotTheNextRequest) {
  ServerOptions o = default_options();
  o.api_key = "sekret";
  TestServer s(o);
  const std::string smuggled = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const std::string r = raw_http(s.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                           "Content-Type: application/json\r\nContent-Length: " +
                                               std::to_string(smuggled.size()) + "\r\n\r\n" + smuggled);
  EXPECT_EQ(r.rfind("HTTP/1.1 401", 0), 0u) << r;
  EXPECT_EQ(count(r, "HTTP/1.1 "), 1u) << "the body was answered as a request:\n" << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
  expect_health(s);
}

// (3) Many byte ranges each copied the body (2000 ranges of /v1/models: 260 KB): Range is
// ignored and the whole answer sent once.
TEST(HttpHostile, RangeRequestsAreIgnored) {
  TestServer s;
  std::string ranges = "bytes=0-0";
  for (int i = 0; i < 2000; ++i) ranges += ",0-0";
  const std::string r = raw_http(s.port(), "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: " + ranges +
                                               "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r.substr(0, 300);
  EXPECT_LT(r.size(), 4096u);
  EXPECT_EQ(r.find("multipart/byteranges"), std::string::npos);
  expect_health(s);
}

// (4) Paths are not labels: a forged path adds no sample and no series.
TEST(HttpHostile, MetricsLabelsAreRoutesNotPaths) {
  TestServer s;
  for (int i = 0; i < 50; ++i)
    raw_http(s.port(), "GET /x" + std::to_string(i) + "%22%7D%201%0Ak3_forged%7Ba%3D%22 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Connection: close\r\n\r\n");
  auto m = s.client()->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->body.find("forged"), std::string::npos) << m->body;
  EXPECT_EQ(m->body.find("/x1"), std::string::npos);
  EXPECT_NE(m->body.find("k3_http_requests_total{path=\"other\",status=\"404\"} 50"), std::string::npos) << m->body;
}

// (10) The HTTP library caps form bodies at 8 KiB; the error says so instead of naming --max-body.
TEST(HttpHostile, FormBodiesGetAnHonestLimit) {
  TestServer s;
  const std::string body = "a=" + std::string(10000, 'b');
  const std::string r = raw_http(s.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                           "Content-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n"
                                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.rfind("HTTP/1.1 413", 0), 0u) << r.substr(0, 300);
  EXPECT_NE(r.find("form-urlencoded bodies are limited to 8192 bytes"), std::string::npos) << r;
  EXPECT_EQ(r.find("--max-body"), std::string::npos) << r;
  expect_health(s);
}

}  // namespace
}  // namespace k3::server::test
