// server/responses: see responses.h.
#include "server/responses.h"

#include <random>

#include "core/version.h"
#include "server/api_error.h"

namespace k3::server {

using text::Json;

void ChatFold::add(const text::ParseDelta& d) {
  reasoning_content += d.reasoning_content;
  content += d.content;
  tool_calls.insert(tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
}

Json usage_json(const Usage& u) {
  Json j;
  j["completion_tokens"] = u.completion_tokens;
  j["prompt_tokens"] = u.prompt_tokens;
  j["total_tokens"] = u.completion_tokens + u.prompt_tokens;
  j["prompt_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  return j;
}

Json timings_json(const Usage& u) {
  auto per = [](double ms, int64_t n) { return n > 0 ? ms / static_cast<double>(n) : 0.0; };
  auto rate = [](double ms, int64_t n) { return ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0; };
  Json j;
  j["cache_n"] = u.cached_tokens;
  j["prompt_n"] = u.prompt_tokens - u.cached_tokens;
  j["prompt_ms"] = u.prompt_ms;
  j["prompt_per_token_ms"] = per(u.prompt_ms, u.prompt_tokens);
  j["prompt_per_second"] = rate(u.prompt_ms, u.prompt_tokens);
  j["predicted_n"] = u.completion_tokens;
  j["predicted_ms"] = u.predicted_ms;
  j["predicted_per_token_ms"] = per(u.predicted_ms, u.completion_tokens);
  j["predicted_per_second"] = rate(u.predicted_ms, u.completion_tokens);
  return j;
}

Json tool_call_json(const text::ToolCall& c, bool with_index) {
  Json j;
  if (with_index) j["index"] = c.index;
  j["id"] = c.id;
  j["type"] = "function";
  j["function"] = {{"name", c.name}, {"arguments", c.arguments}};
  return j;
}

Json assistant_message(const ChatFold& f) {
  Json msg;
  msg["role"] = "assistant";
  msg["content"] = f.content;
  if (!f.reasoning_content.empty()) msg["reasoning_content"] = f.reasoning_content;
  if (!f.tool_calls.empty()) {
    Json calls = Json::array();
    for (const auto& c : f.tool_calls) calls.push_back(tool_call_json(c, false));
    msg["tool_calls"] = std::move(calls);
  }
  return msg;
}

static Json envelope(const ResponseMeta& m, const char* object) {
  Json j;
  j["id"] = m.id;
  j["object"] = object;
  j["created"] = m.created;
  j["model"] = m.model;
  j["system_fingerprint"] = std::string("k3cpp-") + k3::version();
  return j;
}

Json chat_response(const ResponseMeta& m, const ChatFold& f, const std::string& finish, const Usage& u) {
  Json j = envelope(m, "chat.completion");
  Json choice;
  choice["index"] = 0;
  choice["finish_reason"] = finish;
  choice["message"] = assistant_message(f);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(u);
  j["timings"] = timings_json(u);
  return j;
}

Json chat_chunk(const ResponseMeta& m, Json delta, const std::string& finish) {
  Json j = envelope(m, "chat.completion.chunk");
  Json choice;
  choice["index"] = 0;
  choice["finish_reason"] = finish.empty() ? Json() : Json(finish);
  choice["delta"] = std::move(delta);
  j["choices"] = Json::array({std::move(choice)});
  return j;
}

std::vector<Json> chat_delta_chunks(const ResponseMeta& m, const text::ParseDelta& d) {
  std::vector<Json> out;
  if (!d.reasoning_content.empty())
    out.push_back(chat_chunk(m, Json{{"reasoning_content", d.reasoning_content}}, ""));
  if (!d.content.empty()) out.push_back(chat_chunk(m, Json{{"content", d.content}}, ""));
  for (const auto& c : d.tool_calls)
    out.push_back(chat_chunk(m, Json{{"tool_calls", Json::array({tool_call_json(c, true)})}}, ""));
  return out;
}

Json usage_chunk(const ResponseMeta& m, const char* object, const Usage& u) {
  Json j = envelope(m, object);
  j["choices"] = Json::array();
  j["usage"] = usage_json(u);
  j["timings"] = timings_json(u);
  return j;
}

Json completion_response(const ResponseMeta& m, const std::string& text, const std::string& finish,
                         const Usage& u) {
  Json j = envelope(m, "text_completion");
  Json choice;
  choice["text"] = text;
  choice["index"] = 0;
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish;
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(u);
  j["timings"] = timings_json(u);
  return j;
}

Json completion_chunk(const ResponseMeta& m, const std::string& text, const std::string& finish) {
  Json j = envelope(m, "text_completion");
  Json choice;
  choice["text"] = text;
  choice["index"] = 0;
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish.empty() ? Json() : Json(finish);
  j["choices"] = Json::array({std::move(choice)});
  return j;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string sse(const Json& j) { return "data: " + dump(j) + "\n\n"; }

std::string random_id(const char* prefix, size_t n) {
  static const char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(0, 61);
  std::string s = prefix;
  for (size_t i = 0; i < n; ++i) s.push_back(kAlnum[pick(rng)]);
  return s;
}

std::string error_body(int status, const std::string& type, const std::string& message,
                       const std::string& param) {
  Json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? Json() : Json(param);
  e["code"] = status;
  return dump(Json{{"error", std::move(e)}});
}

}  // namespace k3::server
