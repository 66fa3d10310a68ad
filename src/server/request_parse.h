// server/request_parse: OpenAI request bodies → validated Jobs.
// Contract: parse_body() accepts only a JSON object of bounded nesting (a deep "[[[[…" body
// is refused before any recursive code sees it); invalid JSON or UTF-8 is a 400. The
// build_* functions read every field the server honours, apply llama-server's defaults,
// check types and ranges (a numeric field sent as null means "default"; unknown fields are
// ignored), cap what a request may make the server allocate (messages, tools, stop strings,
// max_tokens is limited by the context) and render + tokenize the prompt. Every client
// mistake is an ApiError 400 naming the field; a prompt that does not fit the context is
// exceed_context_size_error. Nothing here touches the engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/job.h"
#include "text/json_py.h"
#include "text/tokenizer.h"

#include "image/image.h"

namespace k3::chat {
class GrammarLedger;
}  // namespace k3::chat
namespace k3::vision {
class EmbeddingCache;
}

namespace k3::server {

struct RequestLimits {
  int64_t n_ctx = 4096;  // per slot
  size_t max_messages = 4096;
  size_t max_tools = 512;
  size_t max_stop = 16;
  size_t max_stop_bytes = 1024;
  int64_t reasoning_budget = -1;  // server default (--reasoning-budget)
  std::string reasoning_budget_message;
  // Compiling a request's grammar or schema (chat/constraint.h): its deadline (a 400 past
  // it), a probe that answers true once the client is gone or the server drains (the compile
  // stops with grammar::Cancelled), and the server's ledger of held grammars (null: none).
  std::chrono::milliseconds grammar_compile_limit{2000};
  std::function<bool()> cancelled;
  chat::GrammarLedger* grammar_ledger = nullptr;
  size_t grammar_matcher_bytes = 0;  // a matcher's memory cap (the start check); 0: its default
  // Images (server/request_images.h): the tower's embeddings by content (null: the server has
  // no vision tower, and image parts are refused), the decode limits, images per request.
  vision::EmbeddingCache* vision = nullptr;
  image::Limits image_limits{};
  size_t max_images = 16;
  bool allow_file_urls = false;  // file:// image URLs (k3 chat's /image); never for HTTP clients
};

text::Json parse_body(std::string_view body);

struct BuiltRequest {
  std::shared_ptr<Job> job;
  bool stream = false;
  bool include_usage = false;
  // A cache_key made for a request that sent "cache_key": "new", "" otherwise: the response
  // hands it to the client, which sends it back to reuse this request's snapshot.
  std::string issued_cache_key;
};

BuiltRequest build_chat_request(const text::Json& req, const text::Tokenizer& tok, const RequestLimits& lim);
BuiltRequest build_completion_request(const text::Json& req, const text::Tokenizer& tok,
                                      const RequestLimits& lim);

// The prompt a chat request renders to (for /apply-template).
std::string render_chat_prompt(const text::Json& req, const RequestLimits& lim);

}  // namespace k3::server
