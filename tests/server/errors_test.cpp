// tests/server/test_errors: hostile and mistaken requests get OpenAI-shaped 4xx errors, and
// the server survives all of them (every test ends with a request that must still succeed).
#include <gtest/gtest.h>

#include <filesystem>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "server/server_test_util.h"

namespace k3::server::test {
namespace {

void expect_alive(const TestServer& s) {
  Json req = user_chat("still there?");
  req["max_tokens"] = 2;
  auto [st, j] = s.post("/v1/chat/completions", req);
  EXPECT_EQ(st, 200) << j.dump();
}

TEST(ServerErrors, MalformedJson) {
  TestServer s;
  Json e = expect_error(s.post("/v1/chat/completions", std::string("{\"messages\": [")), 400,
                        "invalid_request_error");
  EXPECT_NE(e["message"].get<std::string>().find("invalid JSON"), std::string::npos);
  expect_error(s.post("/v1/chat/completions", std::string("[1,2]")), 400, "invalid_request_error");
  expect_error(s.post("/v1/chat/completions", std::string("")), 400, "invalid_request_error");
  expect_alive(s);
}

TEST(ServerErrors, WrongTypesNameTheField) {
  TestServer s;
  auto check = [&](Json req, const std::string& param) {
    Json e = expect_error(s.post("/v1/chat/completions", req), 400, "invalid_request_error");
    EXPECT_EQ(e["param"], param) << req.dump();
  };
  check(Json{{"messages", "hi"}}, "messages");
  check(Json::object(), "messages");
  check(Json{{"messages", Json::array()}}, "messages");
  check(Json{{"messages", Json::array({42})}}, "messages");
  Json r = user_chat("hi");
  r["temperature"] = "hot";
  check(r, "temperature");
  r = user_chat("hi");
  r["temperature"] = -1;
  check(r, "temperature");
  r = user_chat("hi");
  r["max_tokens"] = "ten";
  check(r, "max_tokens");
  r = user_chat("hi");
  r["max_tokens"] = -5;
  check(r, "max_tokens");
  r = user_chat("hi");
  r["n"] = 2;
  check(r, "n");
  r = user_chat("hi");
  r["stop"] = Json::array({1, 2});
  check(r, "stop");
  r = user_chat("hi");
  r["tools"] = "get_weather";
  check(r, "tools");
  r = user_chat("hi");
  r["tool_choice"] = "sometimes";
  check(r, "tool_choice");
  r = user_chat("hi");
  r["reasoning_effort"] = "extreme";
  check(r, "messages");  // rejected by the template mapping, still a 400
  r = user_chat("hi");
  r["stream"] = "yes";
  check(r, "stream");
  // Nulls mean "default".
  r = user_chat("hi");
  r["temperature"] = nullptr;
  r["max_tokens"] = 2;
  EXPECT_EQ(s.post("/v1/chat/completions", r).first, 200);
}

// Regression: what the sampler refuses is a 400 naming the field before any work, not
// a 500 after prefill (top_p 0 and repeat_penalty 0 passed the range check; 1e-50 passes it
// as a double and is 0 as a float).
TEST(ServerErrors, SamplerRefusalsAre400BeforeWork) {
  TestServer s;
  const std::pair<const char*, double> cases[] = {
      {"top_p", 0.0}, {"top_p", 1e-50}, {"repeat_penalty", 0.0}, {"repeat_penalty", 1e-50}};
  for (const auto& [name, value] : cases) {
    Json r = user_chat("hi");
    r["max_tokens"] = 2;
    r[name] = value;
    Json e = expect_error(s.post("/v1/chat/completions", r), 400, "invalid_request_error");
    EXPECT_EQ(e["param"], name) << e.dump();
    r.erase("messages");
    r["prompt"] = "hi";
    expect_error(s.post("/v1/completions", r), 400, "invalid_request_error");
  }
  auto m = s.client()->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("k3_prompt_tokens_total 0\n"), std::string::npos) << "no prefill ran";
  expect_alive(s);
}

// What the server cannot honour is refused, not ignored: an unknown content part (the template
// alone would render nothing for it) and a logit bias.
TEST(ServerErrors, UnsupportedInputIsRefusedNotIgnored) {
  TestServer s;
  const Json parts[] = {Json::array({{{"type", "input_audio"}, {"input_audio", {{"data", "x"}}}}}),
                        Json::array({{{"type", "text"}, {"text", "a"}}, 42}),
                        Json::array({{{"type", "text"}}}), Json::array({{{"text", "no type"}}}),
                        Json{{"text", "an object"}}};
  const char* params[] = {"messages[0].content[0].type", "messages[0].content[1]",
                          "messages[0].content[0].text", "messages[0].content[0].type",
                          "messages[0].content"};
  for (size_t i = 0; i < std::size(parts); ++i) {
    Json r = {{"messages", Json::array({{{"role", "user"}, {"content", parts[i]}}})}, {"max_tokens", 2}};
    Json e = expect_error(s.post("/v1/chat/completions", r), 400, "invalid_request_error");
    EXPECT_EQ(e["param"], params[i]) << e.dump();
  }
  Json r = user_chat("hi");
  r["max_tokens"] = 2;
  r["logit_bias"] = {{"5", 10}};
  EXPECT_EQ(expect_error(s.post("/v1/chat/completions", r), 400, "invalid_request_error")["param"],
            "logit_bias");
  r["logit_bias"] = Json::object();  // asks for nothing
  EXPECT_EQ(s.post("/v1/chat/completions", r).first, 200);
  // An image sent to a server without a vision tower is refused too: answering without seeing
  // it would ignore it silently.
  r["messages"][0]["content"] = Json::array({{{"type", "text"}, {"text", "hi"}}, {{"type", "image_url"}}});
  Json e = expect_error(s.post("/v1/chat/completions", r), 400, "invalid_request_error");
  EXPECT_EQ(e["param"], "messages[0].content[1]") << e.dump();
  EXPECT_NE(e["message"].get<std::string>().find("--mmproj"), std::string::npos) << e.dump();
  expect_alive(s);
}

TEST(ServerErrors, HugeMaxTokensIsCappedToTheContext) {
  ServerOptions o = default_options();
  o.sched.answers =
      scripted({"x<|close|>think<|sep|><|open|>response<|sep|>ok<|close|>message<|sep|><|end_of_msg|>"});
  TestServer s(o);
  Json r = user_chat("hi");
  r["max_tokens"] = 1000000000000LL;
  auto [st, j] = s.post("/v1/chat/completions", r);
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["choices"][0]["message"]["content"], "ok");
}

TEST(ServerErrors, PromptLongerThanTheContext) {
  TestServer s;  // 1024-token context, one token per byte in this vocabulary
  Json e = expect_error(s.post("/v1/chat/completions", user_chat(std::string(3000, 'a'))), 400,
                        "exceed_context_size_error");
  EXPECT_NE(e["message"].get<std::string>().find("1024"), std::string::npos);
  expect_alive(s);
}

TEST(ServerErrors, TenMegabyteBody) {
  TestServer s;  // default --max-body is 8 MiB
  std::string big =
      "{\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(10u << 20, 'a') + "\"}]}";
  auto r = s.post("/v1/chat/completions", big);
  expect_error(r, 413, "invalid_request_error");
  expect_alive(s);
}

TEST(ServerErrors, ThousandsOfMessages) {
  TestServer s;
  Json msgs = Json::array();
  for (int i = 0; i < 5000; ++i) msgs.push_back(Json{{"role", "user"}, {"content", "hi"}});
  Json e =
      expect_error(s.post("/v1/chat/completions", Json{{"messages", msgs}}), 400, "invalid_request_error");
  EXPECT_EQ(e["param"], "messages");
  // Under the count limit the context decides.
  msgs.erase(msgs.begin() + 1000, msgs.end());
  expect_error(s.post("/v1/chat/completions", Json{{"messages", msgs}}), 400, "exceed_context_size_error");
  expect_alive(s);
}

TEST(ServerErrors, DeepNestingAndInvalidUtf8) {
  TestServer s;
  std::string deep = "{\"messages\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error(s.post("/v1/chat/completions", deep), 400, "invalid_request_error");
  std::string bad = "{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xC3\x28 \xFF\"}]}";
  expect_error(s.post("/v1/chat/completions", bad), 400, "invalid_request_error");
  expect_alive(s);
}

// Regression: JSON nested 10^6 deep inside a string (an assistant tool call's arguments in
// the history) passes the body's own depth check; rendering parsed it without a limit and
// wrote the object back recursively: a stack overflow. Now the parse stops at the depth limit
// and the template takes the string as it is (a JSON block with the client's bytes).
TEST(ServerErrors, DeepJsonInsideToolCallArguments) {
  TestServer s;
  const std::string deep = "{\"a\":" + std::string(1'000'000, '[') + std::string(1'000'000, ']') + "}";
  Json req = user_chat("hi");
  req["messages"].push_back(Json{
      {"role", "assistant"},
      {"content", ""},
      {"tool_calls",
       Json::array({Json{
           {"id", "c1"}, {"type", "function"}, {"function", Json{{"name", "f"}, {"arguments", deep}}}}})}});
  req["messages"].push_back(Json{{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "ok"}});
  req["max_tokens"] = 1;
  auto t = s.post("/apply-template", req);
  ASSERT_EQ(t.first, 200);
  EXPECT_NE(t.second["prompt"].get<std::string>().find("<|sep|>{\"a\":[[[["), std::string::npos);
  EXPECT_EQ(s.post("/v1/chat/completions", req).first, 400);  // 2M tokens: longer than the context
  expect_alive(s);
}

TEST(ServerErrors, UnknownEndpointAndMethod) {
  TestServer s;
  auto res = s.client()->Get("/v1/nothing");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  auto j = text::try_parse_json_exact(res->body);
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["error"]["type"], "not_found_error");
}

TEST(ServerErrors, ApiKey) {
  ServerOptions o = default_options();
  o.api_key = "sekret";
  TestServer s(o);
  Json r = user_chat("hi");
  r["max_tokens"] = 2;
  expect_error(s.post("/v1/chat/completions", r), 401, "authentication_error");
  auto c = s.client();
  c->set_bearer_token_auth("wrong");
  auto bad = c->Post("/v1/chat/completions", r.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 401);
  c->set_bearer_token_auth("sekret");
  auto good = c->Post("/v1/chat/completions", r.dump(), "application/json");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
  auto health = s.client()->Get("/health");  // public
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto metrics = s.client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 401);
}

TEST(ServerErrors, TimeoutIsReportedAsAnError) {
  ServerOptions o = default_options();
  o.timeout_s = 0.3;
  o.sched.answers = scripted({std::string(900, 'z')});  // ~900 decode steps
  TestServer s(o);
  auto r = s.post("/v1/chat/completions", user_chat("hi"));
  expect_error(r, 408, "timeout_error");
}

// Sends a chat request on a new raw connection (so a test can hang up at will); fd < 0 on failure.
void send_raw_chat(int port, const std::string& body, int& fd) {
  fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string req =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
}

// Opens a raw connection, starts a streaming chat, reads a little and hangs up.
void stream_and_drop(int port, const std::string& body) {
  int fd = -1;
  ASSERT_NO_FATAL_FAILURE(send_raw_chat(port, body, fd));
  char buf[512];
  ssize_t got = ::recv(fd, buf, sizeof buf, 0);  // headers and the first chunks
  EXPECT_GT(got, 0);
  linger lg{1, 0};  // reset, not a polite close
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  ::close(fd);
}

TEST(ServerErrors, ClientDisconnectMidStreamCancelsTheRequest) {
  ServerOptions o = default_options();
  o.sched.n_ctx = 8192;
  o.sched.answers = scripted({std::string(6000, 'y')});
  o.sched.n_slots = 1;
  TestServer s(o);
  Json r = user_chat("hi");
  r["stream"] = true;
  stream_and_drop(s.port(), r.dump());
  // The slot is freed long before the 6000-token script would end.
  EXPECT_TRUE(wait_for_metric(s, "k3_requests_cancelled_total 1"));
  Json ok = user_chat("hi");
  ok["max_tokens"] = 3;
  auto [st, j] = s.post("/v1/chat/completions", ok);
  EXPECT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
}

// Sends a non-streaming chat on a raw connection and closes it before the answer comes.
void post_and_hang_up(int port, const std::string& body) {
  int fd = -1;
  ASSERT_NO_FATAL_FAILURE(send_raw_chat(port, body, fd));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the request is decoding
  ::close(fd);  // a polite close (FIN), as an impatient client's library does
}

TEST(ServerErrors, ClientDisconnectNonStreamingCancelsTheRequest) {
  ServerOptions o = default_options();
  o.sched.n_ctx = 8192;
  o.sched.answers = scripted({std::string(6000, 'y')});
  o.sched.n_slots = 1;
  TestServer s(o);
  post_and_hang_up(s.port(), user_chat("hi").dump());
  // Without the probe the slot would stay busy for the whole 6000-token script.
  EXPECT_TRUE(wait_for_metric(s, "k3_requests_cancelled_total 1"));
  EXPECT_TRUE(wait_for_metric(s, "k3_requests_processing 0"));
  Json ok = user_chat("hi");
  ok["max_tokens"] = 3;
  auto [st, j] = s.post("/v1/chat/completions", ok);
  EXPECT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
}

TEST(ServerShutdown, RunningRequestsFinishAndNewOnesAreRefused) {
  ServerOptions o = default_options();
  o.sched.n_ctx = 4096;
  const std::string script(400, 'z');
  o.sched.answers = scripted({script});
  o.drain_s = 60;
  TestServer s(o);
  std::pair<int, Json> streamed_result, plain_result;
  Json streaming = user_chat("hi");
  streaming["stream"] = true;
  std::string stream_body;
  std::thread a([&] {
    auto res = s.client()->Post("/v1/chat/completions", streaming.dump(), "application/json");
    if (res) stream_body = res->body;
  });
  std::thread b([&] { plain_result = s.post("/v1/chat/completions", user_chat("hello")); });
  ASSERT_TRUE(wait_for_metric(s, "k3_requests_processing 2"));
  std::thread stopper([&] { s.server().shutdown(); });
  // While the two run, a newcomer is turned away.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  expect_error(s.post("/v1/chat/completions", user_chat("late")), 503, "unavailable_error");
  a.join();
  b.join();
  stopper.join();
  // Both answers are whole, not cut off by the shutdown (the scripted text has no think
  // close, so it is all reasoning).
  ASSERT_EQ(plain_result.first, 200) << plain_result.second.dump();
  EXPECT_EQ(plain_result.second["choices"][0]["message"]["reasoning_content"], script);
  EXPECT_EQ(plain_result.second["choices"][0]["finish_reason"], "stop");
  std::vector<std::string> ev = sse_events(stream_body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  Json last = Json::parse(ev[ev.size() - 2]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
}

TEST(ServerShutdown, DrainTimeoutEndsWhatIsLeftWith503) {
  ServerOptions o = default_options();
  o.sched.n_ctx = 8192;
  o.sched.answers = scripted({std::string(6000, 'y')});
  o.drain_s = 0.3;
  TestServer s(o);
  std::pair<int, Json> r;
  std::thread a([&] { r = s.post("/v1/chat/completions", user_chat("hi")); });
  ASSERT_TRUE(wait_for_metric(s, "k3_requests_processing 1"));
  const auto t0 = std::chrono::steady_clock::now();
  s.server().shutdown();
  a.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  expect_error(r, 503, "unavailable_error");
}

}  // namespace
}  // namespace k3::server::test

namespace k3::server::test {
namespace {

// Regression: an accept() failure other than EMFILE ended run() as if stopped: k3 serve
// exited 0 with nothing said. Here the listening socket is shut down under the server.
TEST(ServerShutdown, ListenerFailureIsAnErrorNotACleanExit) {
  auto srv = std::make_unique<Server>(shared_model(), shared_tokenizer(), default_options());
  const int port = srv->bind();
  std::string error;
  std::thread t([&] {
    try {
      srv->run();
    } catch (const std::exception& e) { error = e.what(); }
  });
  httplib::Client c("127.0.0.1", port);
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {
    auto r = c.Get("/health");
    up = r && r->status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(up);
  int shut = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(e.path().filename().c_str());
    sockaddr_in a{};
    socklen_t len = sizeof a;
    int listening = 0;
    socklen_t ol = sizeof listening;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 && a.sin_family == AF_INET &&
        ntohs(a.sin_port) == port && ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ol) == 0 &&
        listening) {
      ::shutdown(fd, SHUT_RDWR);
      ++shut;
    }
  }
  ASSERT_EQ(shut, 1);
  t.join();
  EXPECT_NE(error.find("the listening socket failed"), std::string::npos) << "run() returned quietly";
}

}  // namespace
}  // namespace k3::server::test
