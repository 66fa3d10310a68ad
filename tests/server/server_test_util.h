// tests/server: an in-process `k3 serve` on an ephemeral loopback port, over the golden
// small-q8_0 model (272-token byte-level vocabulary with the XTML control tokens; no chat
// template key, so the built-in K3 renderer applies).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "model/model.h"
#include "server/server.h"
#include "text/json_py.h"
#include "text/tokenizer.h"

namespace k3::server::test {

using text::Json;

inline std::string model_path() { return std::string(K3_TEST_DATA_DIR) + "/golden/small-q8_0.gguf"; }

inline std::shared_ptr<model::Model> shared_model() {
  static std::shared_ptr<model::Model> m = model::Model::load(model_path());
  return m;
}
inline std::shared_ptr<const text::Tokenizer> shared_tokenizer() {
  static std::shared_ptr<const text::Tokenizer> t = text::Tokenizer::from_gguf(shared_model()->gguf());
  return t;
}

inline ServerOptions default_options() {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.sched.n_slots = 2;
  o.sched.n_threads = 1;
  o.sched.n_ctx = 1024;
  o.timeout_s = 60;
  o.model_alias = "small-q8_0";
  return o;
}

// Fixed answers in place of sampling (server/answer_source.h), for checks of what surrounds
// generation.
inline std::shared_ptr<AnswerSource> scripted(const std::vector<std::string>& texts) {
  return scripted_answers(*shared_tokenizer(), texts);
}

class TestServer {
 public:
  explicit TestServer(ServerOptions o = default_options())
      : TestServer(shared_model(), shared_tokenizer(), std::move(o)) {}
  TestServer(std::shared_ptr<model::Model> m, std::shared_ptr<const text::Tokenizer> tok, ServerOptions o)
      : server_(std::make_unique<Server>(std::move(m), std::move(tok), std::move(o))) {
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }
  ~TestServer() {
    server_->stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(60, 0);
    return c;
  }
  // POST a JSON body; returns status and parsed body (null when not JSON).
  std::pair<int, Json> post(const std::string& path, const std::string& body) const {
    auto res = client()->Post(path.c_str(), body, "application/json");
    if (!res) return {0, Json()};
    auto j = text::try_parse_json_exact(res->body);
    return {res->status, j ? *j : Json(res->body)};
  }
  std::pair<int, Json> post(const std::string& path, const Json& body) const {
    return post(path, body.dump());
  }
  std::pair<int, std::string> post_raw(const std::string& path, const Json& body) const {
    auto res = client()->Post(path.c_str(), body.dump(), "application/json");
    if (!res) return {0, ""};
    return {res->status, res->body};
  }
  Server& server() { return *server_; }

 private:
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::thread thread_;
};

// The data: payloads of an SSE body, in order ("[DONE]" included).
inline std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    std::string ev = body.substr(pos, end - pos);
    if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

// Sends raw bytes on a fresh loopback connection; returns everything read until the server
// closes it (requests should carry Connection: close, or end in a way the server closes).
// half_close: shut down the sending side after the request (a body that ends at EOF).
inline std::string raw_http(int port, const std::string& request, bool half_close = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
  for (size_t at = 0; at < request.size();) {  // a large request is sent in pieces
    const ssize_t n = ::send(fd, request.data() + at, request.size() - at, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before it has read everything
    at += static_cast<size_t>(n);
  }
  if (half_close) ::shutdown(fd, SHUT_WR);
  // Read until the server closes, or until one whole response (headers + Content-Length
  // bytes) has arrived and nothing more comes for 300 ms: a connection kept alive stays open
  // for the server's keep-alive timeout (5 s).
  std::string out;
  char buf[4096];
  auto complete = [&out] {
    const size_t end = out.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const size_t cl = out.find("Content-Length: ");
    if (cl == std::string::npos || cl > end) return false;
    return out.size() >= end + 4 + std::stoull(out.substr(cl + 16));
  };
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, complete() ? 300 : 30000) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

inline Json user_chat(const std::string& text) {
  return Json{{"messages", Json::array({Json{{"role", "user"}, {"content", text}}})}};
}

// Asserts the OpenAI error shape and returns the error object.
inline Json expect_error(const std::pair<int, Json>& r, int status, const std::string& type) {
  EXPECT_EQ(r.first, status) << r.second.dump();
  const Json& e = r.second.is_object() && r.second.contains("error") ? r.second["error"] : Json();
  EXPECT_TRUE(e.is_object()) << r.second.dump();
  if (!e.is_object()) return Json();
  EXPECT_EQ(e["type"], type) << r.second.dump();
  EXPECT_EQ(e["code"], status);
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_TRUE(e.contains("param"));
  return e;
}

// Counters move when the scheduler finishes its step, which can be just after the client
// has its answer: poll (up to 10 s) instead of reading once.
inline bool wait_for_metric(TestServer& s, const std::string& line) {
  for (int i = 0; i < 100; ++i) {
    auto m = s.client()->Get("/metrics");
    if (m && m->body.find(line) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace k3::server::test
