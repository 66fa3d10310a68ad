// cli/chat_session: see chat_session.h.
#include "cli/chat_session.h"

#include <memory>

#include "chat/api_error.h"
#include "chat/constraint.h"
#include "chat/prompt.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "server/local_job.h"
#include "server/request_images.h"
#include "server/request_parse.h"
#include "server/responses.h"
#include "server/scheduler.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace k3::cli {

using text::Json;

ChatSession::ChatSession(server::Scheduler& sched, const text::Tokenizer& tok, ChatOptions opt)
    : sched_(sched), tok_(tok), opt_(std::move(opt)) {}

int64_t ChatSession::n_ctx() const { return sched_.n_ctx(); }

text::ChatTemplateInput ChatSession::input(bool generation_prompt) const {
  text::ChatTemplateInput in;
  in.messages = messages;
  in.tools = opt_.tools;
  in.vars = opt_.vars;
  in.vars["add_generation_prompt"] = generation_prompt;
  return in;
}

chat::ChatPrompt ChatSession::prompt(const std::vector<text::ChatSegment>& history,
                                     server::RequestImages& images) const {
  server::RequestLimits lim;
  lim.vision = opt_.vision.get();
  lim.allow_file_urls = true;
  images = server::collect_images(Json{{"messages", messages}}, lim);
  return chat::tokenize_chat(tok_, text::render_chat_segments(input(true)), history, images.slots);
}

void ChatSession::check_renders(const Json& msgs) const {
  text::ChatTemplateInput in = input(true);
  in.messages = msgs;
  text::render_chat_segments(in);
}

// The fields a chat request with these settings would carry: --grammar / --json-schema and the
// tools, whose strict ones constrain their calls.
std::shared_ptr<const grammar::Grammar> ChatSession::constraint(bool thinking) const {
  Json req = opt_.constraint;
  if (!opt_.tools.is_null()) req["tools"] = opt_.tools;
  return chat::chat_constraint(req, thinking, tok_);
}

void ChatSession::check_constraint() const {
  constraint(!opt_.vars.contains("thinking") || opt_.vars["thinking"] != false);
}

std::optional<TurnStats> ChatSession::answer(const std::function<void(const text::ParseDelta&)>& show,
                                             const std::function<bool()>& interrupted, std::string& error) {
  chat::ChatPrompt prompt;
  server::RequestImages images;
  try {
    std::vector<text::ChatSegment> history;
    try {
      history = text::render_chat_segments(input(false));
    } catch (const std::exception&) {}  // no history point: the whole prompt is new
    prompt = this->prompt(history, images);
  } catch (const chat::ApiError& e) {
    error = e.what();
    return std::nullopt;
  } catch (const std::exception& e) {
    error = fmt::format("the conversation does not render: {}", e.what());
    return std::nullopt;
  }
  if (static_cast<int64_t>(prompt.tokens.size()) >= n_ctx()) {
    error = fmt::format(
        "the conversation ({} tokens) does not fit the context ({} tokens): /reset, or start "
        "again with a larger -c",
        prompt.tokens.size(), n_ctx());
    return std::nullopt;
  }

  auto job = std::make_shared<server::Job>();
  job->kind = server::JobKind::Chat;
  job->prompt = std::move(prompt.tokens);
  job->snapshot_at = prompt.history_end;
  server::attach_images(*job, prompt.image_at, images, tok_);
  job->parser.thinking = prompt.thinking;
  job->parser.tools = opt_.tools;
  job->params = opt_.params;
  job->params.sampler.seed += n_answers_++;  // /regen draws a different answer
  // --grammar / --json-schema / strict tools: the constraint a chat request with those
  // fields gets from k3 serve (the reasoning stays free).
  try {
    job->grammar = constraint(prompt.thinking);
  } catch (const chat::ApiError& e) {
    error = e.what();
    return std::nullopt;
  }

  server::ChatFold fold;
  server::Event done = server::run_job(
      sched_, job,
      [&](const server::Event& e) {
        fold.add(e.delta);
        show(e.delta);
      },
      interrupted);
  const server::Usage& u = done.usage;
  TurnStats st{.n_prompt = u.prompt_tokens,
               .n_cached = u.cached_tokens,
               .n_generated = u.completion_tokens,
               .prompt_seconds = u.prompt_ms / 1000,
               .gen_seconds = u.predicted_ms / 1000,
               .stop = done.stop};
  context_used_ = u.prompt_tokens + std::max<int64_t>(u.completion_tokens - 1, 0);
  if (st.n_generated == 0 && st.stop == text::StopReason::Interrupted) return st;

  messages.push_back(server::assistant_message(fold));
  return st;
}

int64_t ChatSession::save_state(const std::string& path) const { return sched_.slot_save(0, path).n_tokens; }

// The state is kept only when its tokens start this conversation's next prompt (the file
// beside an edited JSON may not): a state the next answer could not use would only hide that
// it prefills.
int64_t ChatSession::load_state(const std::string& path) {
  server::SlotFileResult r = sched_.slot_restore(0, path);
  server::RequestImages images;
  const std::vector<int32_t> next = prompt({}, images).tokens;
  if (r.tokens.size() > next.size() || !std::equal(r.tokens.begin(), r.tokens.end(), next.begin())) {
    sched_.slot_erase(0);
    fail("{}: its {} tokens do not start this conversation", path, r.tokens.size());
  }
  context_used_ = r.n_tokens;
  return r.n_tokens;
}

// A failure here costs only the next session's resume, so it is a warning, not an error.
void ChatSession::autosave() const {
  if (autosave_path.empty()) return;
  try {
    save_messages(messages, autosave_path);
  } catch (const std::exception& e) {
    log::warn("the conversation was not kept for the next session: {}", e.what());
  }
}

// Through AtomicFile: a random temporary next to the target (never a predictable name another
// user could plant a link at), fsynced and renamed, so a crash or a full disk never leaves
// half a file; a file it replaces keeps its mode, a new one is 0600 (a conversation is
// private), and a symbolic link at FILE is refused, neither followed nor replaced.
void save_messages(const Json& msgs, const std::string& path) {
  std::string text = msgs.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  AtomicFile f(path, AtomicFileOptions{.new_mode = 0600, .refuse_symlink = true});
  f.write(text.data(), text.size());
  f.commit();
}

// A conversation file: an array of messages (or {"messages": [...]}) whose roles and fields
// have the API's types. Rendering is checked by the caller.
Json load_messages(const std::string& path) {
  Json doc = text::parse_json_exact(read_file(path, 64u << 20), path);
  if (doc.is_object() && doc.contains("messages")) doc = doc["messages"];
  if (!doc.is_array()) fail("{}: expected a JSON array of messages", path);
  for (size_t i = 0; i < doc.size(); ++i) {
    const Json& m = doc[i];
    if (!m.is_object()) fail("{}: message {} is not an object", path, i);
    auto it = m.find("role");
    if (it == m.end() || !it->is_string()) fail("{}: message {} has no role", path, i);
    const std::string& role = it->get_ref<const std::string&>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
      fail("{}: message {} has the unknown role '{}'", path, i, role);
    if (auto c = m.find("content"); c != m.end() && !c->is_string() && !c->is_null() && !c->is_array())
      fail("{}: message {}: content must be a string, an array of parts or null", path, i);
    if (auto r = m.find("reasoning_content"); r != m.end() && !r->is_string() && !r->is_null())
      fail("{}: message {}: reasoning_content must be a string", path, i);
    if (auto t = m.find("tool_calls"); t != m.end() && !t->is_array() && !t->is_null())
      fail("{}: message {}: tool_calls must be an array", path, i);
  }
  return doc;
}

}  // namespace k3::cli
