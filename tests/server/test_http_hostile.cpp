// Hostile HTTP clients (issue 17): each case a raw request on loopback, each asserting the
// answer and that the server still answers /health after.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

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

// (10) The HTTP library capped form bodies at 8 KiB with an error naming --max-body. POST
// bodies are now read by the server itself: a form body is a body like any other (here not
// JSON: a 400 from the parser), under the one limit, --max-body.
TEST(HttpHostile, FormBodiesHaveTheOneBodyLimit) {
  TestServer s;
  const std::string body = "a=" + std::string(10000, 'b');
  const std::string r = raw_http(s.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                           "Content-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n"
                                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << r.substr(0, 300);
  EXPECT_NE(r.find("invalid JSON"), std::string::npos) << r;
  expect_health(s);
}

// (2) --max-body holds however the body is framed: chunked, read to EOF (no Content-Length),
// or inflated by Content-Encoding (300 KB of gzip here inflates to 3 MB).
TEST(HttpHostile, MaxBodyHoldsForEveryFraming) {
  ServerOptions o = default_options();
  o.max_body = 64 * 1024;
  TestServer s(o);
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  std::string chunked = head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < 40; ++i) chunked += "1000\r\n" + std::string(4096, ' ') + "\r\n";  // 160 KB
  chunked += "0\r\n\r\n";
  std::string r = raw_http(s.port(), chunked);
  EXPECT_EQ(r.rfind("HTTP/1.1 413", 0), 0u) << r.substr(0, 300);
  EXPECT_NE(r.find("--max-body"), std::string::npos) << r.substr(0, 300);

  // No Content-Length and no chunking: the body runs to the end of the connection.
  r = raw_http(s.port(), head + "Connection: close\r\n\r\n" + std::string(200 * 1024, ' '), /*half_close=*/true);
  EXPECT_TRUE(r.rfind("HTTP/1.1 413", 0) == 0 || r.rfind("HTTP/1.1 400", 0) == 0) << r.substr(0, 300);

  std::string gz;
  {
    FILE* p = popen("head -c 3000000 /dev/zero | tr '\\0' ' ' | gzip -c", "r");
    ASSERT_NE(p, nullptr);
    char buf[65536];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) gz.append(buf, n);
    pclose(p);
  }
  ASSERT_GT(gz.size(), 1000u);
  ASSERT_LT(gz.size(), o.max_body);  // small on the wire, large inflated
  r = raw_http(s.port(), head + "Content-Encoding: gzip\r\nConnection: close\r\nContent-Length: " +
                             std::to_string(gz.size()) + "\r\n\r\n" + gz);
  EXPECT_EQ(r.rfind("HTTP/1.1 413", 0), 0u) << r.substr(0, 300);
  expect_health(s);
  // A body under the limit in any framing still works.
  const std::string ok = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", ok.size());
  r = raw_http(s.port(), head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + size + "\r\n" + ok + "\r\n0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r.substr(0, 300);
}

// (15, in part) Ambiguous framing is refused before the body is read, and the connection
// closes: lenient Content-Length, two different lengths, Content-Length with
// Transfer-Encoding, a coding other than chunked, a body on GET/OPTIONS.
TEST(HttpHostile, AmbiguousFramingIsRefused) {
  TestServer s;
  const std::string post = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  const std::string body = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1})";
  const std::string n = std::to_string(body.size());
  const std::vector<std::string> bad = {
      post + "Content-Length: " + n + "abc\r\n\r\n" + body,
      post + "Content-Length: +" + n + "\r\n\r\n" + body,
      post + "Content-Length: " + n + ", 3\r\n\r\n" + body,
      post + "Content-Length: " + n + "\r\nContent-Length: 3\r\n\r\n" + body,
      post + "Content-Length: " + n + "\r\nTransfer-Encoding: chunked\r\n\r\n" + body,
      post + "Transfer-Encoding: gzip, chunked\r\n\r\n" + body,
      post + "Transfer-Encoding: identity\r\n\r\n" + body,
      "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 40\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
      "OPTIONS /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
  };
  for (const std::string& req : bad) {
    const std::string r = raw_http(s.port(), req);
    EXPECT_TRUE(r.rfind("HTTP/1.1 400", 0) == 0) << req.substr(0, 160) << "\n->\n" << r.substr(0, 300);
    EXPECT_EQ(count(r, "HTTP/1.1 "), 1u) << "more than one answer on one connection:\n" << r.substr(0, 600);
    EXPECT_NE(r.find("Connection: close"), std::string::npos) << r.substr(0, 300);
  }
  // The same request framed plainly is answered.
  const std::string r = raw_http(s.port(), post + "Connection: close\r\nContent-Length: " + n + "\r\n\r\n" + body);
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r.substr(0, 300);
  expect_health(s);
}

}  // namespace
}  // namespace k3::server::test
