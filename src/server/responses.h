// server/responses: the JSON bodies the OpenAI API returns (docs/serve.md), as llama-server
// writes them for /v1/chat/completions (whole and streamed) and /v1/completions.
// Contract: chat_message() folds the parser's deltas into the non-streaming message, so a
// non-streaming answer is exactly the concatenation of what a stream would have sent;
// reasoning_content and tool_calls are omitted when empty, content is "" (never null).
// Chunk builders produce one `chat.completion.chunk` / `text_completion` envelope each.
// dump() never throws: bytes that are not UTF-8 are replaced with U+FFFD.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/job.h"
#include "text/json_py.h"
#include "text/output_parser.h"

namespace k3::server {

struct ResponseMeta {
  std::string id;       // chatcmpl-… / cmpl-…
  int64_t created = 0;  // unix seconds
  std::string model;
};

// What a chat turn has produced so far (the fold of its deltas).
struct ChatFold {
  std::string reasoning_content, content;
  std::vector<text::ToolCall> tool_calls;
  void add(const text::ParseDelta& d);
};

text::Json usage_json(const Usage& u);
text::Json timings_json(const Usage& u);
text::Json tool_call_json(const text::ToolCall& c, bool with_index);
// The turn as an OpenAI assistant message: role, content, and reasoning_content and tool_calls
// when there are any (what a response carries and what a conversation keeps).
text::Json assistant_message(const ChatFold& f);

text::Json chat_response(const ResponseMeta& m, const ChatFold& f, const std::string& finish, const Usage& u);
// delta: {"role":…}, {"content":…}, …; finish: "" for null.
text::Json chat_chunk(const ResponseMeta& m, text::Json delta, const std::string& finish);
std::vector<text::Json> chat_delta_chunks(const ResponseMeta& m, const text::ParseDelta& d);
text::Json usage_chunk(const ResponseMeta& m, const char* object, const Usage& u);

text::Json completion_response(const ResponseMeta& m, const std::string& text, const std::string& finish,
                               const Usage& u);
text::Json completion_chunk(const ResponseMeta& m, const std::string& text, const std::string& finish);

std::string dump(const text::Json& j);
std::string sse(const text::Json& j);  // "data: <json>\n\n"
std::string random_id(const char* prefix, size_t n);

}  // namespace k3::server
