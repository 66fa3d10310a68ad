// cli/cmd_chat: `k3 chat [-m MODEL] [flags]` — an interactive conversation in the terminal.
// Each turn renders the whole conversation with the K3 chat template (engine mode, the
// renderer the server uses), tokenizes it segment by segment (markers by id, text with
// special tokens off), reuses the engine state of the longest prefix it still holds, and
// streams the answer through the XTML output parser: reasoning dimmed, the response plain,
// tool calls as one line each. Assistant messages keep their reasoning_content; whether it
// reaches the next prompt is the template's decision. See docs/chat.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cli/chat_input.h"
#include "cli/commands.h"
#include "cli/embedded_model.h"
#include "cli/grammar_flags.h"
#include "cli/memory_flags.h"
#include "cli/parse_args.h"
#include "cli/sampling_flags.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "core/thread_pool.h"
#include "gguf/file.h"
#include "grammar/matcher.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "server/api_error.h"
#include "server/request_constraint.h"
#include "server/vocab_roles.h"
#include "store/engine_shape.h"
#include "store/install.h"
#include "text/chat_template.h"
#include "text/json_py.h"
#include "text/output_parser.h"
#include "text/reasoning_budget.h"
#include "text/tokenizer.h"

namespace k3::cli {

namespace {

using text::Json;
using Clock = std::chrono::steady_clock;

// Ctrl-C: the handler only counts; the chat loop compares the count between tokens and
// while it waits for input, so no engine code is ever interrupted halfway.
std::atomic<int> g_sigints{0};
std::atomic<int64_t> g_sigint_ns{0};  // CLOCK_MONOTONIC time of the latest one
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free);
extern "C" void on_sigint(int) {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe (POSIX)
  g_sigint_ns.store(int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec, std::memory_order_relaxed);
  g_sigints.fetch_add(1, std::memory_order_relaxed);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Bytes a terminal would act on (ESC sequences, carriage returns, C1 controls) are shown as
// U+FFFD, so model output can never move the cursor, retitle the window or change colours.
std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    bool c0 = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
    bool c1 = c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
              static_cast<unsigned char>(s[i + 1]) <= 0x9f;
    if (c0) {
      out += "\xef\xbf\xbd";
    } else if (c1) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// Streams one answer's parser deltas to stdout: "[think] …" (dim on a colour terminal)
// closed by "[/think]", then the response, then "[tool call] name(args)" lines.
class AnswerPrinter {
 public:
  AnswerPrinter(bool color, bool sanitize) : color_(color), sanitize_(sanitize) {}

  void show(const text::ParseDelta& d) {
    if (!d.reasoning_content.empty()) {
      if (mode_ != Mode::Think) {
        if (mode_ == Mode::Content) newline();
        style("\x1b[2m");
        out("[think] ");
        mode_ = Mode::Think;
      }
      out(d.reasoning_content);
    }
    if (!d.content.empty()) {
      close_think();
      mode_ = Mode::Content;
      out(d.content);
    }
    for (const text::ToolCall& c : d.tool_calls) {
      close_think();
      newline();
      style("\x1b[1m");
      out(fmt::format("[tool call] {}({})", c.name, c.arguments));
      style("\x1b[22m");
      out("\n");
      at_line_start_ = true;
      mode_ = Mode::None;
    }
    std::fflush(stdout);
  }
  // The answer is over: close what is open and end the line.
  void end() {
    close_think();
    newline();
    std::fflush(stdout);
  }

 private:
  enum class Mode { None, Think, Content };
  void out(std::string_view s) {
    if (s.empty()) return;
    std::string safe = sanitize_ ? terminal_safe(s) : std::string(s);
    std::fwrite(safe.data(), 1, safe.size(), stdout);
    at_line_start_ = safe.back() == '\n';
  }
  // Our own SGR sequences, which must not go through terminal_safe().
  void style(const char* sgr) {
    if (color_) std::fputs(sgr, stdout);
  }
  void newline() {
    if (!at_line_start_) out("\n");
  }
  void close_think() {
    if (mode_ != Mode::Think) return;
    newline();
    out("[/think]");
    style("\x1b[22m");
    out("\n");
    mode_ = Mode::None;
  }
  bool color_, sanitize_;
  Mode mode_ = Mode::None;
  bool at_line_start_ = true;
};

struct ChatOptions {
  int64_t max_tokens = 1024;
  bool ignore_eos = false;
  bool prompt_cache = true;
  int64_t n_ubatch = 512;
  int64_t reasoning_budget = -1;
  std::string reasoning_budget_message;
  runtime::SamplerParams sampler;    // seed: the first answer's; answer i uses seed + i
  Json vars = Json::object();        // template variables (thinking, thinking_effort)
  Json tools;                        // OpenAI tools array or null
  Json constraint = Json::object();  // {"grammar": …} or {"json_schema": …} (--grammar, --json-schema)
};

struct TurnStats {
  int64_t n_prompt = 0, n_cached = 0, n_generated = 0;
  double prompt_seconds = 0, gen_seconds = 0;
  std::string stop;  // eog, length, context, interrupted
};

// The conversation and the engine state behind it.
class ChatSession {
 public:
  ChatSession(runtime::Engine& engine, const text::Tokenizer& tok, ChatOptions opt)
      : engine_(engine), tok_(tok), roles_(server::VocabRoles::of(tok)), opt_(std::move(opt)) {}

  Json messages = Json::array();

  // Renders the conversation (which must end with the message to answer), generates the
  // assistant's answer, prints it and appends it to `messages`. Returns nullopt, with the
  // conversation unchanged, when the prompt cannot be rendered or does not fit; `error`
  // then says why. `interrupted` is polled between prompt chunks and between tokens.
  std::optional<TurnStats> answer(AnswerPrinter& printer, const std::function<bool()>& interrupted,
                                  std::string& error) {
    std::vector<int32_t> prompt;
    size_t snapshot_at = 0;
    bool thinking = false;
    try {
      render(prompt, snapshot_at, thinking);
    } catch (const k3::Error& e) {
      error = fmt::format("the conversation does not render: {}", e.what());
      return std::nullopt;
    } catch (const nlohmann::json::exception& e) {
      error = fmt::format("the conversation does not render: {}", e.what());
      return std::nullopt;
    }
    const int64_t n_ctx = engine_.n_ctx();
    if (static_cast<int64_t>(prompt.size()) >= n_ctx) {
      error = fmt::format(
          "the conversation ({} tokens) does not fit the context ({} tokens): /reset, or start "
          "again with a larger -c",
          prompt.size(), n_ctx);
      return std::nullopt;
    }

    TurnStats st;
    st.n_prompt = static_cast<int64_t>(prompt.size());
    size_t n_fed = reuse(prompt);
    st.n_cached = static_cast<int64_t>(n_fed);

    // The prompt, in micro-batch chunks so a Ctrl-C during a long prompt is seen; a chunk
    // ends at the snapshot point so the state there can be kept for the next turn.
    auto t0 = Clock::now();
    std::vector<float> logits;
    while (n_fed < prompt.size()) {
      if (interrupted()) {
        st.stop = "interrupted";
        st.prompt_seconds = seconds_since(t0);
        return st;  // nothing was generated: the caller drops the message
      }
      size_t end = std::min(prompt.size(), n_fed + static_cast<size_t>(opt_.n_ubatch));
      if (opt_.prompt_cache && snapshot_at > n_fed && snapshot_at < end) end = snapshot_at;
      std::vector<runtime::BatchToken> batch;
      for (size_t i = n_fed; i < end; ++i) batch.push_back({prompt[i], 0, -1, i + 1 == prompt.size()});
      logits = engine_.decode(batch);
      held_.insert(held_.end(), prompt.begin() + static_cast<std::ptrdiff_t>(n_fed),
                   prompt.begin() + static_cast<std::ptrdiff_t>(end));
      n_fed = end;
      if (opt_.prompt_cache && n_fed == snapshot_at) {
        engine_.seq_copy(0, 1);
        snap_ = held_;
      }
    }
    st.prompt_seconds = seconds_since(t0);

    runtime::SamplerParams sp = opt_.sampler;
    sp.seed = opt_.sampler.seed + n_answers_++;  // /regen draws a different answer
    runtime::Sampler sampler(sp);
    for (int32_t t : prompt) sampler.accept(t);  // as llama.cpp and the server do
    text::ParserOptions po;
    po.thinking = thinking;
    po.tools = opt_.tools;
    text::OutputParser parser(po);
    std::optional<text::ReasoningBudget> budget;
    if (opt_.reasoning_budget >= 0 && thinking)
      budget.emplace(text::ReasoningBudgetOptions{opt_.reasoning_budget, opt_.reasoning_budget_message, true},
                     true);
    std::deque<int32_t> forced;
    // --grammar / --json-schema / strict tools: the constraint a chat request with those
    // fields gets from k3 serve (the reasoning stays free).
    std::unique_ptr<grammar::GrammarMatcher> matcher;
    {
      Json req = opt_.constraint;
      if (!opt_.tools.is_null()) req["tools"] = opt_.tools;
      std::shared_ptr<const grammar::Grammar> g;
      try {
        g = server::chat_constraint(req, thinking, tok_);
      } catch (const server::ApiError& e) {
        error = e.what();
        return std::nullopt;
      }
      if (g) {
        if (!gvocab_) gvocab_ = grammar::TokenVocab::from_tokenizer(tok_, {roles_.end_of_msg});
        matcher = std::make_unique<grammar::GrammarMatcher>(g, gvocab_);
      }
    }

    auto t1 = Clock::now();
    for (;;) {
      if (interrupted()) {
        st.stop = "interrupted";
        break;
      }
      if (opt_.max_tokens >= 0 && st.n_generated >= opt_.max_tokens) {
        st.stop = "length";
        break;
      }
      if (forced.empty() && budget)
        if (auto inj = budget->take_injection()) {
          std::vector<int32_t> ids = server::tokenize_segments(tok_, *inj);
          forced.insert(forced.end(), ids.begin(), ids.end());
        }
      int32_t t;
      if (!forced.empty()) {
        t = forced.front();
        forced.pop_front();
      } else if (matcher && matcher->must_end()) {
        t = roles_.end_token(tok_);
      } else {
        t = matcher ? sampler.sample(logits, matcher->allowed()) : sampler.sample(logits);
      }
      if (matcher && !matcher->must_end()) matcher->accept(t);
      ++st.n_generated;
      sampler.accept(t);
      text::TokenKind kind = roles_.kind(tok_, t);
      const std::string& piece = tok_.token_bytes(t);
      if (budget)
        budget->observe(kind, kind == text::TokenKind::Text ? std::string_view(piece) : std::string_view());
      if (kind == text::TokenKind::Eog) {
        if (!opt_.ignore_eos) {
          st.stop = "eog";
          break;
        }
      } else if (kind == text::TokenKind::Text) {
        printer.show(parser.feed_token(kind, piece));
      } else {
        printer.show(parser.feed_token(kind));
        if (parser.turn_ended() && !opt_.ignore_eos) {
          st.stop = "eog";
          break;
        }
      }
      if (opt_.max_tokens >= 0 && st.n_generated >= opt_.max_tokens) {
        st.stop = "length";  // the last token need not go through the model
        break;
      }
      if (engine_.seq_pos(0) + 1 >= n_ctx) {
        st.stop = "context";
        break;
      }
      runtime::BatchToken b{t, 0, -1, true};
      logits = engine_.decode(std::span<const runtime::BatchToken>(&b, 1));
      held_.push_back(t);
    }
    printer.show(parser.finish(st.stop == "eog" ? text::StopReason::Eog : text::StopReason::Length));
    printer.end();
    st.gen_seconds = seconds_since(t1);

    const text::ParseResult& r = parser.result();
    Json m = Json::object();
    m["role"] = "assistant";
    m["content"] = r.content;
    if (!r.reasoning_content.empty()) m["reasoning_content"] = r.reasoning_content;
    if (!r.tool_calls.empty()) {
      Json calls = Json::array();
      for (const text::ToolCall& c : r.tool_calls)
        calls.push_back(Json{{"id", c.id},
                             {"type", "function"},
                             {"function", Json{{"name", c.name}, {"arguments", c.arguments}}}});
      m["tool_calls"] = std::move(calls);
    }
    messages.push_back(std::move(m));
    return st;
  }

  // Checks that `msgs` renders with this session's settings (throws k3::Error if not).
  void check_renders(const Json& msgs) const {
    text::ChatTemplateInput in = input(true);
    in.messages = msgs;
    text::render_chat_segments(in);
  }

  int64_t context_used() const { return engine_.seq_pos(0); }
  int64_t n_ctx() const { return engine_.n_ctx(); }

 private:
  text::ChatTemplateInput input(bool generation_prompt) const {
    text::ChatTemplateInput in;
    in.messages = messages;
    in.tools = opt_.tools;
    in.vars = opt_.vars;
    in.vars["add_generation_prompt"] = generation_prompt;
    return in;
  }

  // The prompt's tokens, the end of its history part (0: none) and whether the generation
  // prompt opened the think channel — the same split and test as the server's.
  void render(std::vector<int32_t>& prompt, size_t& snapshot_at, bool& thinking) const {
    std::vector<text::ChatSegment> segs = text::render_chat_segments(input(true));
    std::vector<text::ChatSegment> hist = text::render_chat_segments(input(false));
    size_t split = 0;
    if (hist.size() < segs.size() && std::equal(hist.begin(), hist.end(), segs.begin())) split = hist.size();
    // Segments tokenize independently, so the history's tokens are the prompt's first ones.
    prompt =
        server::tokenize_segments(tok_, {segs.begin(), segs.begin() + static_cast<std::ptrdiff_t>(split)});
    snapshot_at = split ? prompt.size() : 0;
    std::vector<int32_t> rest =
        server::tokenize_segments(tok_, {segs.begin() + static_cast<std::ptrdiff_t>(split), segs.end()});
    prompt.insert(prompt.end(), rest.begin(), rest.end());
    size_t n = segs.size();
    thinking = n >= 3 && segs[n - 1].special && segs[n - 1].text == "<|sep|>" && !segs[n - 2].special &&
               segs[n - 2].text == "think" && segs[n - 3].special && segs[n - 3].text == "<|open|>";
  }

  // K3's recurrent state cannot be rolled back, so a prefix is reusable only if some
  // sequence holds exactly it: sequence 0 (the last prompt and the answer's decoded
  // tokens — reusable when the answer re-renders token for token) or the snapshot in
  // sequence 1 (the last prompt's history, before its generation prompt). The longer wins;
  // a proper prefix only, since the last prompt token must be decoded for its logits.
  size_t reuse(const std::vector<int32_t>& prompt) {
    auto prefix_of = [&](const std::vector<int32_t>& held) {
      return !held.empty() && held.size() < prompt.size() &&
             std::equal(held.begin(), held.end(), prompt.begin());
    };
    // Defensive: the bookkeeping must match the engine, else nothing is trusted.
    if (engine_.seq_pos(0) != static_cast<int64_t>(held_.size())) {
      engine_.seq_clear(0);
      held_.clear();
    }
    if (opt_.prompt_cache && engine_.seq_pos(1) != static_cast<int64_t>(snap_.size())) snap_.clear();
    bool live = prefix_of(held_);
    bool snap = opt_.prompt_cache && prefix_of(snap_);
    if (live && (!snap || held_.size() >= snap_.size())) return held_.size();
    if (snap) {
      engine_.seq_copy(1, 0);
      held_ = snap_;
      return held_.size();
    }
    engine_.seq_clear(0);
    held_.clear();
    return 0;
  }

  runtime::Engine& engine_;
  const text::Tokenizer& tok_;
  server::VocabRoles roles_;
  ChatOptions opt_;
  std::vector<int32_t> held_;  // the tokens whose state sequence 0 holds
  std::vector<int32_t> snap_;  // the tokens whose state sequence 1 holds
  uint64_t n_answers_ = 0;
  std::shared_ptr<const grammar::TokenVocab> gvocab_;  // built at the first constrained answer
};

const char* kCommandHelp =
    "commands:\n"
    "  /help          this list\n"
    "  /reset         forget the conversation (the system prompt stays)\n"
    "  /save FILE     write the conversation as a JSON array of messages (OpenAI shape)\n"
    "  /load FILE     replace the conversation with one saved by /save\n"
    "  /regen         drop the last answer and generate it again\n"
    "  /exit          leave (also /quit, Ctrl-D, or Ctrl-C at an empty prompt)\n"
    "input: a line ending in \\ continues on the next; \"\"\" on a line starts and ends a block;\n"
    "a message that starts with / is written //…; Ctrl-C stops an answer, twice leaves.\n";

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

bool is_system(const Json& m) {
  auto it = m.find("role");
  return it != m.end() && it->is_string() && (*it == "system" || *it == "developer");
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  CLI::App app{
      "Talk to a model in the terminal: the conversation goes through the K3 chat template and\n"
      "each answer is streamed as it is generated (reasoning dimmed, then the response).\n\n"
      "examples:\n"
      "  k3 chat                                   talk to the embedded k3-tiny\n"
      "  k3 chat -m model.gguf --system \"Be brief.\" --temp 0.6\n"
      "  k3 chat --no-think -n 256                 no reasoning, at most 256 tokens per answer\n"
      "  k3 chat --reasoning-budget 200            at most 200 think tokens, then the answer\n"
      "  printf 'hi\\nand then?\\n' | k3 chat --temp 0 --seed 1   (one message per line)\n\n"
      "Inside the chat: /help, /reset, /save FILE, /load FILE, /regen, /exit. Ctrl-C stops an\n"
      "answer; Ctrl-C again (or at an empty prompt) leaves. See docs/chat.md.",
      "k3 chat"};
  std::string model_path, system_prompt, effort, tools_path, cache_type = "f32";
  int32_t threads = 0;
  int64_t n_ctx = 4096;
  std::optional<uint64_t> seed;
  ChatOptions co;
  runtime::SamplerParams& sp = co.sampler;
  bool no_think = false, no_color = false, no_prompt_cache = false;

  app.add_option("-m,--model", model_path, "GGUF model (first shard); default: the embedded k3-tiny");
  app.add_option("--system", system_prompt, "system prompt, the first message of the conversation");
  app.add_option("--reasoning-effort", effort,
                 "none|minimal|low|medium|high|xhigh|max (the template's low/high/max; none = --no-think)");
  app.add_flag("--no-think", no_think, "thinking off: the answer opens the response channel directly");
  app.add_option("--reasoning-budget", co.reasoning_budget,
                 "think tokens per answer before the reasoning is closed for it (default -1: unlimited)");
  app.add_option("--reasoning-budget-message", co.reasoning_budget_message,
                 "text written into the reasoning before a forced close (default none)");
  app.add_option("--tools", tools_path,
                 "OpenAI tools array JSON the model may call (calls are shown, not run)");
  app.add_option("-n,--max-tokens,--n-predict", co.max_tokens,
                 "tokens per answer (default 1024; -1: until the end of the turn or a full context)");
  add_sampling_flags(app, sp);
  app.add_option("--seed", seed,
                 "sampling seed of the first answer, the next ones use seed+1, … "
                 "(default: random, printed)");
  app.add_option("-t,--threads", threads, "threads (default: the machine's default)");
  app.add_option("-c,--ctx-size,--ctx", n_ctx,
                 "context size in tokens, the whole conversation (default 4096; 0: the model's)");
  app.add_option("-u,--ubatch", co.n_ubatch, "prompt tokens per forward micro-batch (default 512)");
  app.add_option("--cache-type", cache_type, "MLA cache precision: f32 or f16 (default f32)");
  app.add_flag("--no-prompt-cache", no_prompt_cache,
               "keep one engine sequence instead of two (less memory; more of each prompt is re-read)");
  app.add_flag("--ignore-eos", co.ignore_eos, "do not stop at the end of the turn (tests, benchmarks)");
  app.add_flag("--no-color", no_color, "plain [think] markers, no ANSI colours (also NO_COLOR=1)");
  GrammarFlags grammar_flags;
  add_grammar_flags(app, grammar_flags);
  MemoryFlags mem_flags;
  add_memory_flags(app, mem_flags);
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (std::string err = load_grammar_flags(grammar_flags, co.constraint); !err.empty())
    return usage_error(err);
  if (cache_type != "f32" && cache_type != "f16") return usage_error("--cache-type must be f32 or f16");
  if (threads < 0) return usage_error("--threads must be >= 0");
  if (n_ctx < 0) return usage_error("--ctx-size must be >= 0");
  if (co.n_ubatch < 1) return usage_error("--ubatch must be >= 1");
  if (co.max_tokens == 0 || co.max_tokens < -1)
    return usage_error("--max-tokens must be >= 1 (or -1: no limit)");
  store::MemoryOptions mem;
  if (std::string err = to_memory_options(mem_flags, mem); !err.empty()) return usage_error(err);
  bool thinking = !no_think;
  if (!effort.empty()) {
    text::ThinkingSetting s;
    try {
      s = text::map_reasoning_effort(effort);
    } catch (const Error& e) { return usage_error(fmt::format("--reasoning-effort: {}", e.what())); }
    thinking = thinking && s.thinking;
    if (thinking) co.vars["thinking_effort"] = s.effort;
  }
  if (!thinking) co.vars["thinking"] = false;
  if (!tools_path.empty()) {
    Json t = text::parse_json_exact(read_file(tools_path, 16u << 20), tools_path);
    if (t.is_object() && t.contains("tools")) t = t["tools"];
    if (!t.is_array()) fail("{}: expected an array of tools", tools_path);
    co.tools = t;
  }
  if (!seed) seed = std::random_device{}();
  sp.seed = *seed;
  try {
    runtime::Sampler check(sp);
  } catch (const Error& e) { return usage_error(e.what()); }
  co.prompt_cache = !no_prompt_cache;

  const bool in_tty = ::isatty(0) == 1;
  const bool out_tty = ::isatty(1) == 1;
  const char* no_color_env = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  // Colour only for a person at a terminal: a script's input means a script reads the output.
  const bool color = in_tty && out_tty && !no_color && !(no_color_env && *no_color_env) &&
                     !(term && std::string_view(term) == "dumb");

  std::shared_ptr<model::Model> model;
  std::string shown_name = model_path;
  if (model_path.empty()) {
    model = load_embedded_model();
    shown_name = std::string("(embedded ") + kEmbeddedModelName + ")";
  } else {
    model = model::Model::load(model_path);
  }
  const gguf::GgufFile& file = model->gguf();
  if (!file.find("tokenizer.ggml.tokens") || file.get_string("tokenizer.ggml.model", "") == "no_vocab")
    fail("{} has no vocabulary: k3 chat needs one", shown_name);
  std::optional<std::string> tpl;
  if (const gguf::Value* v = file.find("tokenizer.chat_template")) tpl = v->as_string();
  text::TemplateCheck tc = text::check_chat_template(tpl);
  if (tc.kind == text::TemplateKind::Unsupported) fail("{}", tc.message);
  if (tc.kind == text::TemplateKind::K3Variant) log::warn("{}", tc.message);
  auto tok = text::Tokenizer::from_gguf(file);
  {  // a grammar, schema or strict tool that cannot be honoured is refused before the chat starts
    Json req = co.constraint;
    if (!co.tools.is_null()) req["tools"] = co.tools;
    try {
      server::chat_constraint(req, thinking, *tok);
    } catch (const server::ApiError& e) { fail("{}", e.what()); }
  }

  // The engine's and the expert store's threads are started with SIGINT blocked, so the
  // signal is delivered to this thread; until the handler is in place, Ctrl-C kills as usual.
  sigset_t sigint_set;
  sigemptyset(&sigint_set);
  sigaddset(&sigint_set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigint_set, nullptr);

  runtime::EngineOptions eo;
  eo.n_threads = threads;
  eo.n_ctx = n_ctx;
  eo.n_ubatch = co.n_ubatch;
  eo.n_seq_max = co.prompt_cache ? 2 : 1;
  eo.cache_type = cache_type == "f16" ? model::CacheType::F16 : model::CacheType::F32;
  store::install_store(*model, mem, store::shape_of(*model, eo));
  runtime::Engine engine(model, eo);

  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call in this thread returns EINTR
  sigaction(SIGINT, &sa, nullptr);
  pthread_sigmask(SIG_UNBLOCK, &sigint_set, nullptr);

  ChatSession chat(engine, *tok, co);
  if (!system_prompt.empty()) chat.messages.push_back(Json{{"role", "system"}, {"content", system_prompt}});
  // Checked once before the first message, so a template error shows at start.
  try {
    chat.check_renders(chat.messages);
  } catch (const Error& e) { fail("the chat template rejects these settings: {}", e.what()); }

  fmt::print(stderr, "k3 chat: {} | context {} | seed {} | {} threads | thinking {}\n", shown_name,
             engine.n_ctx(), *seed, engine.pool().size(), thinking ? "on" : "off");
  if (in_tty)
    fmt::print(stderr,
               "type a message and Enter; /help for commands; Ctrl-C stops an answer, Ctrl-D leaves\n");
  std::fflush(stderr);

  // The prompt goes where the user looks: the terminal, even when the answers are piped.
  FILE* prompt_out = out_tty ? stdout : stderr;
  const char* dim = color ? "\x1b[2m" : "";
  const char* undim = color ? "\x1b[22m" : "";
  auto note = [&](const std::string& s) {
    std::fflush(stdout);
    fmt::print(stderr, "{}{}{}\n", dim, s, undim);
    std::fflush(stderr);
  };
  auto error = [&](const std::string& s) {
    std::fflush(stdout);
    fmt::print(stderr, "error: {}\n", s);
    std::fflush(stderr);
  };

  int sig_seen = g_sigints.load();
  LineReader reader(0, [&] { return g_sigints.load() != sig_seen; });
  MultiLine ml;
  Clock::time_point last_stop{};  // when Ctrl-C last stopped an answer (or discarded input)
  int64_t last_stop_sig = 0;      // the time of the signal that stopped the last answer

  // Runs one answer; false when the session should end (a second Ctrl-C).
  auto run_answer = [&]() -> bool {
    sig_seen = g_sigints.load();
    const int base = sig_seen;
    AnswerPrinter printer(color, out_tty);
    std::string err;
    std::optional<TurnStats> st = chat.answer(
        printer, [&] { return g_sigints.load() != base; }, err);
    if (!st) {
      error(err);
      return true;
    }
    int extra = g_sigints.load() - base;
    if (st->stop == "interrupted" && st->n_generated == 0 &&
        chat.messages.back().value("role", "") != "assistant") {
      note("[stopped before the answer began]");
    } else if (st->stop == "interrupted") {
      note("[answer stopped by Ctrl-C: what was generated is kept; Ctrl-C again to leave]");
    }
    double ptime = st->prompt_seconds;
    int64_t n_decoded = st->n_prompt - st->n_cached;
    note(
        fmt::format("[prompt {} tokens ({} cached), {:.1f} tok/s | answer {} tokens, {:.1f} tok/s | "
                    "context {}/{} | stop: {}]",
                    st->n_prompt, st->n_cached, ptime > 0 ? n_decoded / ptime : 0.0, st->n_generated,
                    st->gen_seconds > 0 ? st->n_generated / st->gen_seconds : 0.0, chat.context_used(),
                    chat.n_ctx(), st->stop));
    sig_seen = g_sigints.load();
    if (st->stop == "interrupted") {
      // A second Ctrl-C leaves: two before the answer noticed the first, or one within a
      // second of the last stop (a script's next line may already be being answered).
      // Compared at the signals' own times: the answer notices a signal only between tokens
      // or prompt chunks.
      int64_t t_sig = g_sigint_ns.load();
      bool soon = last_stop_sig != 0 && t_sig - last_stop_sig < 1000000000;
      if (extra >= 2 || soon) return false;
      last_stop_sig = t_sig;
      last_stop = Clock::now();
    }
    return true;
  };

  for (;;) {
    if (in_tty) {
      fmt::print(prompt_out, "{}", ml.pending() ? "... " : "> ");
      std::fflush(prompt_out);
    }
    std::string line;
    LineReader::Status rs = reader.read_line(line);
    if (rs == LineReader::Status::Interrupted) {
      sig_seen = g_sigints.load();
      bool soon = last_stop != Clock::time_point{} && seconds_since(last_stop) < 1.0;
      if (ml.pending() && !soon) {
        ml.clear();
        fmt::print(prompt_out, "\n");
        note("[input discarded; Ctrl-C again to leave]");
        last_stop = Clock::now();
        continue;
      }
      if (in_tty) fmt::print(prompt_out, "\n");
      break;
    }
    if (rs == LineReader::Status::Eof) {
      if (in_tty) fmt::print(prompt_out, "\n");
      break;
    }
    std::optional<std::string> input;
    if (in_tty) {
      input = ml.feed(line);
      if (!input) continue;
    } else {
      input = std::move(line);  // scripts: one line, one message
    }
    std::string& text = *input;
    if (text.empty()) continue;

    if (text[0] == '/' && !text.starts_with("//")) {
      std::string cmd = text.substr(0, text.find_first_of(" \t"));
      std::string arg;
      if (size_t sp_at = text.find_first_of(" \t"); sp_at != std::string::npos) {
        arg = text.substr(sp_at + 1);
        size_t b = arg.find_first_not_of(" \t"), e = arg.find_last_not_of(" \t");
        arg = b == std::string::npos ? "" : arg.substr(b, e - b + 1);
      }
      if (cmd == "/exit" || cmd == "/quit") break;
      if (cmd == "/help") {
        std::fflush(stdout);
        fmt::print(stderr, "{}", kCommandHelp);
      } else if (cmd == "/reset") {
        Json kept = Json::array();
        for (const Json& m : chat.messages) {
          if (!is_system(m)) break;
          kept.push_back(m);
        }
        chat.messages = std::move(kept);
        note("[conversation cleared]");
      } else if (cmd == "/save") {
        if (arg.empty()) {
          error("/save needs a file name: /save FILE");
          continue;
        }
        try {
          save_messages(chat.messages, arg);
          note(fmt::format("[saved {} messages to {}]", chat.messages.size(), arg));
        } catch (const Error& e) { error(e.what()); }
      } else if (cmd == "/load") {
        if (arg.empty()) {
          error("/load needs a file name: /load FILE");
          continue;
        }
        try {
          Json msgs = load_messages(arg);
          try {
            chat.check_renders(msgs);
          } catch (const Error& e) {
            fail("{}: the chat template rejects it: {}", arg, e.what());
          } catch (const nlohmann::json::exception& e) {
            fail("{}: the chat template rejects it: {}", arg, e.what());
          }
          chat.messages = std::move(msgs);
          note(fmt::format("[loaded {} messages from {}]", chat.messages.size(), arg));
        } catch (const Error& e) { error(fmt::format("{} (the conversation is unchanged)", e.what())); }
      } else if (cmd == "/regen") {
        Json& msgs = chat.messages;
        Json dropped;
        if (!msgs.empty() && msgs.back().value("role", "") == "assistant") {
          dropped = msgs.back();
          msgs.erase(msgs.size() - 1);
        }
        if (msgs.empty() || is_system(msgs.back())) {
          if (!dropped.is_null()) msgs.push_back(dropped);
          error("/regen: there is no message to answer yet");
          continue;
        }
        size_t before = msgs.size();
        if (!run_answer()) break;
        if (msgs.size() == before && !dropped.is_null()) msgs.push_back(dropped);  // no new answer
      } else {
        error(fmt::format("unknown command {} (/help lists them)", cmd));
      }
      continue;
    }
    if (text.starts_with("//")) text.erase(0, 1);

    chat.messages.push_back(Json{{"role", "user"}, {"content", text}});
    size_t before = chat.messages.size();
    if (!run_answer()) break;
    // No answer (the prompt did not fit or was stopped before the answer): the message goes.
    if (chat.messages.size() == before) chat.messages.erase(before - 1);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace k3::cli
