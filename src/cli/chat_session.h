// cli/chat_session: the conversation behind `k3 chat`, one answer at a time.
// Contract: answer() renders the whole conversation with the K3 chat template (engine mode,
// the renderer the server uses, chat/prompt.h) and runs it as a one-slot job of the scheduler
// (server/local_job.h): the scheduler's prompt cache resumes from the longest prefix it holds
// (the last answer's own state, or the snapshot of the history), and its generation applies the
// sampler, the reasoning budget and the constraint exactly as for a server request. Deltas go
// to `show` as they come; the answer is then appended to `messages` (assistant messages keep
// their reasoning_content; whether it reaches the next prompt is the template's decision).
// `interrupted` is polled while the job runs: once it answers true the answer ends with what
// was generated (stop Interrupted). Returns nullopt, with the conversation unchanged and
// `error` saying why, when the prompt cannot be rendered, does not fit or asks for a
// constraint that cannot be honoured. An answer stopped before its first token appends
// nothing (its stats say n_generated 0, stop Interrupted).
// save_messages()/load_messages(): the conversation as a file (/save, /load).
// save_state()/load_state(): the state of the slot beside it (FILE.k3state, a state file:
// runtime/state_file.h), so /load resumes without a prefill when the model matches; they
// return the tokens moved and throw (k3::Error or chat::ApiError) saying why not.
// autosave_path: where autosave() keeps the conversation after each change (k3 chat with
// --prompt-cache-dir: the next session resumes it); empty: nowhere.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "chat/prompt.h"
#include "server/job.h"
#include "text/json_py.h"
#include "text/output_parser.h"

namespace k3::grammar {
struct Grammar;
}
namespace k3::vision {
class EmbeddingCache;
}
namespace k3::server {
class Scheduler;
struct RequestImages;
}  // namespace k3::server
namespace k3::text {
class Tokenizer;
struct ChatTemplateInput;
}  // namespace k3::text

namespace k3::cli {

struct ChatOptions {
  // Every answer's generation parameters, as a request's (server/job.h). sampler.seed is the
  // first answer's; answer i uses seed + i.
  server::GenParams params;
  text::Json vars = text::Json::object();        // template variables (thinking, thinking_effort)
  text::Json tools;                              // OpenAI tools array or null
  text::Json constraint = text::Json::object();  // {"grammar": …} or {"json_schema": …}
  // The vision tower (--mmproj): image parts of the messages (file:// or data: URLs) are
  // embedded through it; null: a text-only model, image parts are refused.
  std::shared_ptr<vision::EmbeddingCache> vision;
};

struct TurnStats {
  int64_t n_prompt = 0, n_cached = 0, n_generated = 0;
  double prompt_seconds = 0, gen_seconds = 0;
  text::StopReason stop = text::StopReason::Eog;
};

class ChatSession {
 public:
  ChatSession(server::Scheduler& sched, const text::Tokenizer& tok, ChatOptions opt);

  text::Json messages = text::Json::array();

  std::optional<TurnStats> answer(const std::function<void(const text::ParseDelta&)>& show,
                                  const std::function<bool()>& interrupted, std::string& error);
  // Checks that `msgs` renders with this session's settings (throws k3::Error if not), and
  // that the constraint of these settings can be honoured (throws chat::ApiError if not).
  void check_renders(const text::Json& msgs) const;
  void check_constraint() const;
  // Tokens the conversation's state holds after the last answer, and the context.
  int64_t context_used() const { return context_used_; }
  int64_t n_ctx() const;
  bool sees() const { return opt_.vision != nullptr; }  // a vision tower is attached
  int64_t save_state(const std::string& path) const;
  int64_t load_state(const std::string& path);
  std::string autosave_path;
  void autosave() const;

 private:
  text::ChatTemplateInput input(bool generation_prompt) const;
  // The conversation's prompt with its images (throws chat::ApiError for a bad image).
  chat::ChatPrompt prompt(const std::vector<text::ChatSegment>& history, server::RequestImages& images) const;
  std::shared_ptr<const grammar::Grammar> constraint(bool thinking) const;

  server::Scheduler& sched_;
  const text::Tokenizer& tok_;
  ChatOptions opt_;
  uint64_t n_answers_ = 0;
  int64_t context_used_ = 0;
};

void save_messages(const text::Json& msgs, const std::string& path);
text::Json load_messages(const std::string& path);

}  // namespace k3::cli
