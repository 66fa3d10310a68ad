// tests/server/test_chat: /v1/chat/completions end to end over HTTP — real sampling with the
// small model (determinism, stream = fold of non-stream, usage = prompt tokenization), and the
// scripted-output mode for exact protocol checks on hand-written model outputs (a plain turn, a
// tool-call turn with escaped attribute text, the answer after a tool result).
#include <gtest/gtest.h>

#include <future>

#include "server/server_test_util.h"

namespace k3::server::test {
namespace {

const char* kPlainTurn =
    "Let me think.<|close|>think<|sep|><|open|>response<|sep|>Hello <world> | done"
    "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";
const char* kToolTurn =
    "Need weather.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>"
    "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
    "<|open|>argument key=\"city\" type=\"string\"<|sep|>Par\"is\n<|close|>argument<|sep|>"
    "<|open|>argument key=\"days\" type=\"number\"<|sep|>2<|close|>argument<|sep|>"
    "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>";
const char* kAfterTool =
    "Got it.<|close|>think<|sep|><|open|>response<|sep|>It is sunny in Paris."
    "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";

Json weather_tools() {
  return Json::parse(R"([{"type":"function","function":{"name":"get_weather",
    "description":"Weather for a city","parameters":{"type":"object","properties":{
    "city":{"type":"string"},"days":{"type":"number"}},"required":["city"]}}}])");
}

ServerOptions scripted_options(const std::vector<std::string>& scripts) {
  ServerOptions o = default_options();
  o.sched.n_ctx = 4096;  // tool declarations and history render long in a byte vocabulary
  o.sched.answers = scripted(scripts);
  return o;
}

size_t count_tokens(const TestServer& s, const std::string& text) {
  auto [st, j] = s.post("/tokenize", Json{{"content", text}, {"parse_special", true}});
  EXPECT_EQ(st, 200);
  return j["tokens"].size();
}

TEST(ServerChat, ScriptedPlainTurnNonStreaming) {
  TestServer s(scripted_options({kPlainTurn}));
  auto [st, j] = s.post("/v1/chat/completions", user_chat("hi"));
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "small-q8_0");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const Json& c = j["choices"][0];
  EXPECT_EQ(c["finish_reason"], "stop");
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_EQ(c["message"]["reasoning_content"], "Let me think.");
  EXPECT_EQ(c["message"]["content"], "Hello <world> | done");
  EXPECT_FALSE(c["message"].contains("tool_calls"));
  // Usage: every scripted token was produced except <|end_of_msg|>: the turn is over at
  // <|close|>message<|sep|>. The prompt is the rendered chat's tokens.
  EXPECT_EQ(j["usage"]["completion_tokens"], count_tokens(s, kPlainTurn) - 1);
  auto [st2, tpl] = s.post("/apply-template", user_chat("hi"));
  ASSERT_EQ(st2, 200);
  EXPECT_EQ(j["usage"]["prompt_tokens"], count_tokens(s, tpl["prompt"].get<std::string>()));
  EXPECT_EQ(j["usage"]["total_tokens"],
            j["usage"]["prompt_tokens"].get<int64_t>() + j["usage"]["completion_tokens"].get<int64_t>());
}

TEST(ServerChat, ScriptedStreamingIsTheFoldOfNonStreaming) {
  TestServer s(scripted_options({kToolTurn}));
  Json req = user_chat("weather in Paris?");
  req["tools"] = weather_tools();
  auto [st, full] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st, 200);
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  auto [st2, body] = s.post_raw("/v1/chat/completions", req);
  ASSERT_EQ(st2, 200);
  std::vector<std::string> evs = sse_events(body);
  ASSERT_GE(evs.size(), 4u);
  EXPECT_EQ(evs.back(), "[DONE]");
  Json first = Json::parse(evs[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string reasoning, content, finish;
  Json calls = Json::array();
  Json usage;
  for (size_t i = 1; i + 1 < evs.size(); ++i) {
    Json ch = Json::parse(evs[i]);
    EXPECT_EQ(ch["id"], first["id"]);
    if (ch["choices"].empty()) {
      usage = ch["usage"];
      continue;
    }
    const Json& c = ch["choices"][0];
    const Json& d = c["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      for (const Json& tc : d["tool_calls"]) calls.push_back(tc);
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  const Json& m = full["choices"][0]["message"];
  EXPECT_EQ(reasoning, "Need weather.");
  EXPECT_EQ(reasoning, m["reasoning_content"]);
  EXPECT_EQ(content, m["content"]);
  EXPECT_EQ(content, "");
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "tool_calls");
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], "{\"city\":\"Par\\\"is\\n\",\"days\":2}");
  EXPECT_EQ(calls[0]["function"], m["tool_calls"][0]["function"]);
  EXPECT_FALSE(calls[0]["id"].get<std::string>().empty());
  EXPECT_EQ(usage["completion_tokens"], count_tokens(s, kToolTurn) - 1);
  // The second (streamed) request repeats the first one's prompt, so its history comes from
  // the slot's prompt cache; the counts are otherwise the same.
  EXPECT_GT(usage["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0);
  usage["prompt_tokens_details"]["cached_tokens"] = 0;
  EXPECT_EQ(usage, full["usage"]);
}

TEST(ServerChat, ScriptedToolCallRoundTrip) {
  TestServer s(scripted_options({kToolTurn, kAfterTool}));
  Json req = user_chat("weather in Paris?");
  req["tools"] = weather_tools();
  auto [st, j1] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st, 200);
  Json msg = j1["choices"][0]["message"];
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  std::string call_id = msg["tool_calls"][0]["id"];
  req["messages"].push_back(msg);
  req["messages"].push_back(Json{{"role", "tool"}, {"tool_call_id", call_id}, {"content", "sunny, 24 C"}});
  // The replayed turn renders into the next prompt: reasoning, the typed call, the result.
  auto [stp, tpl] = s.post("/apply-template", req);
  ASSERT_EQ(stp, 200) << tpl.dump();
  std::string prompt = tpl["prompt"];
  EXPECT_NE(prompt.find("Need weather."), std::string::npos);
  EXPECT_NE(prompt.find("tool=\"get_weather\""), std::string::npos);
  EXPECT_NE(prompt.find("sunny, 24 C"), std::string::npos);
  auto [st2, j2] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st2, 200) << j2.dump();
  EXPECT_EQ(j2["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j2["choices"][0]["message"]["content"], "It is sunny in Paris.");
  EXPECT_EQ(j2["choices"][0]["message"]["reasoning_content"], "Got it.");
  EXPECT_GT(j2["usage"]["prompt_tokens"].get<int64_t>(), j1["usage"]["prompt_tokens"].get<int64_t>());
}

TEST(ServerChat, ToolsChannelWithoutDeclaredToolsIsDropped) {
  TestServer s(scripted_options({kToolTurn}));
  auto [st, j] = s.post("/v1/chat/completions", user_chat("weather?"));
  ASSERT_EQ(st, 200);
  const Json& m = j["choices"][0]["message"];
  EXPECT_FALSE(m.contains("tool_calls"));
  EXPECT_EQ(m["content"], "");
  EXPECT_EQ(m["content"].get<std::string>().find("<|"), std::string::npos);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST(ServerChat, MaxTokensTruncatesWithLength) {
  TestServer s(scripted_options({kPlainTurn}));
  Json req = user_chat("hi");
  req["max_tokens"] = 5;  // "Let m" (one byte per token in this vocabulary)
  auto [st, j] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "Let m");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "");
}

TEST(ServerChat, StopStringEndsTheAnswer) {
  TestServer s(scripted_options({kPlainTurn}));
  Json req = user_chat("hi");
  req["stop"] = Json::array({"| done", "never"});
  auto [st, j] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello <world> ");
}

TEST(ServerChat, ReasoningBudgetForcesTheThinkClose) {
  // The script keeps "thinking"; a budget of 3 injects the close and opens the response,
  // after which the script continues as the answer.
  TestServer s(scripted_options({"abcdefgh<|close|>message<|sep|><|end_of_msg|>"}));
  Json req = user_chat("hi");
  req["reasoning_budget_tokens"] = 3;
  auto [st, j] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "abc");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "defgh");
}

TEST(ServerChat, RealSamplingIsDeterministicAndStreamMatches) {
  TestServer s;
  Json req = user_chat("Tell me a story.");
  req["max_tokens"] = 12;
  req["seed"] = 1234;
  req["temperature"] = 0.9;
  auto [st, a] = s.post("/v1/chat/completions", req);
  auto [st2, b] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st, 200) << a.dump();
  ASSERT_EQ(st2, 200);
  EXPECT_EQ(a["choices"], b["choices"]);
  EXPECT_LE(a["usage"]["completion_tokens"].get<int64_t>(), 12);
  EXPECT_GE(a["usage"]["completion_tokens"].get<int64_t>(), 1);
  req["stream"] = true;
  auto [st3, body] = s.post_raw("/v1/chat/completions", req);
  ASSERT_EQ(st3, 200);
  std::string reasoning, content, finish;
  for (const std::string& e : sse_events(body)) {
    if (e == "[DONE]") continue;
    Json ch = Json::parse(e);
    const Json& d = ch["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
    if (!ch["choices"][0]["finish_reason"].is_null()) finish = ch["choices"][0]["finish_reason"];
  }
  const Json& m = a["choices"][0]["message"];
  EXPECT_EQ(reasoning, m.value("reasoning_content", std::string()));
  EXPECT_EQ(content, m["content"]);
  EXPECT_EQ(finish, a["choices"][0]["finish_reason"]);
}

TEST(ServerChat, ConcurrentRequestsShareTheBatch) {
  TestServer s(scripted_options({kPlainTurn}));
  std::vector<std::future<std::pair<int, Json>>> fs;
  for (int i = 0; i < 6; ++i)
    fs.push_back(
        std::async(std::launch::async, [&] { return s.post("/v1/chat/completions", user_chat("hi")); }));
  for (auto& f : fs) {
    auto [st, j] = f.get();
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello <world> | done");
    EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "Let me think.");
  }
  // All six ran to completion (the counter can trail the last answer by one step).
  EXPECT_TRUE(wait_for_metric(s, "k3_requests_finished_total 6"));
}

TEST(ServerChat, RawCompletion) {
  TestServer s;
  Json req{{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"seed", 7}};
  auto [st, j] = s.post("/v1/completions", req);
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["usage"]["prompt_tokens"], count_tokens(s, "Once upon a time"));
  EXPECT_LE(j["usage"]["completion_tokens"].get<int64_t>(), 6);
  // Token-id prompts give the same prompt and, with the same seed, the same text.
  auto [st1, toks] = s.post("/tokenize", Json{{"content", "Once upon a time"}});
  req["prompt"] = toks["tokens"];
  auto [st2, j2] = s.post("/v1/completions", req);
  ASSERT_EQ(st2, 200);
  EXPECT_EQ(j2["choices"][0]["text"], j["choices"][0]["text"]);
  req["stream"] = true;
  auto [st3, body] = s.post_raw("/v1/completions", req);
  ASSERT_EQ(st3, 200);
  std::string text;
  for (const std::string& e : sse_events(body))
    if (e != "[DONE]") text += Json::parse(e)["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, j["choices"][0]["text"]);
}

}  // namespace
}  // namespace k3::server::test
