// cli/cmd_chat: `k3 chat [-m MODEL] [flags]` — an interactive conversation in the terminal.
// The conversation and its answers are a ChatSession (cli/chat_session.h): a one-slot client
// of the scheduler k3 serve runs, so the prompt cache, the sampler, the reasoning budget and
// constraints behave as for a server request. This file is the terminal: flags, the line
// reader, slash commands, Ctrl-C. See docs/chat.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include "chat/api_error.h"
#include "cli/chat_loop.h"
#include "cli/chat_session.h"
#include "cli/commands.h"
#include "cli/grammar_flags.h"
#include "cli/image_input.h"
#include "cli/open_model.h"
#include "cli/parse_args.h"
#include "cli/prompt_cache_flags.h"
#include "cli/sampling_flags.h"
#include "core/error.h"
#include "core/read_file.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "server/scheduler.h"
#include "store/engine_shape.h"
#include "store/install.h"
#include "text/chat_template.h"
#include "text/json_py.h"

namespace k3::cli {

using text::Json;

namespace {

bool is_system(const Json& m) {
  const std::string role = m.is_object() ? m.value("role", "") : "";
  return role == "system" || role == "developer";
}

// With --prompt-cache-dir the conversation is kept as DIR/chat-last.json after every change,
// and a new session with the same system prompt takes it up: its first prompt then extends
// the last snapshot on disk, so only the last exchange and the new message are decoded.
void resume_last_chat(ChatSession& chat, const std::string& dir) {
  if (dir.empty()) return;
  chat.autosave_path = dir + "/chat-last.json";
  if (::access(chat.autosave_path.c_str(), F_OK) != 0) return;
  try {
    Json msgs = load_messages(chat.autosave_path);
    size_t n_sys = 0;
    while (n_sys < chat.messages.size() && is_system(chat.messages[n_sys])) ++n_sys;
    const bool same = msgs.size() > n_sys && !is_system(msgs[n_sys]) &&
                      std::equal(chat.messages.begin(), chat.messages.begin() + n_sys, msgs.begin());
    if (!same) {
      fmt::print(stderr, "[the last chat in {} had another system prompt: starting afresh]\n", dir);
      return;
    }
    chat.check_renders(msgs);
    chat.messages = std::move(msgs);
    fmt::print(stderr, "[resumed the last chat in {} ({} messages); /reset starts afresh]\n", dir,
               chat.messages.size());
  } catch (const std::exception& e) {
    fmt::print(stderr, "[the last chat in {} was not resumed: {}]\n", dir, e.what());
  }
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
  std::string model_path, system_prompt, effort, tools_path, mmproj;
  std::optional<uint64_t> seed;
  ChatOptions co;
  server::GenParams& gp = co.params;
  runtime::SamplerParams& sp = gp.sampler;
  gp.max_tokens = 1024;
  int64_t n_ubatch = 512;
  bool no_think = false, no_color = false, no_prompt_cache = false, no_mmproj = false;

  app.add_option("-m,--model", model_path, "GGUF model (first shard); default: the embedded k3-tiny");
  app.add_option("--system", system_prompt, "system prompt, the first message of the conversation");
  app.add_option(
      "--mmproj", mmproj,
      "vision tower (kimik3 mmproj GGUF): /image PATH, or an image path in a message, sends a picture");
  app.add_flag("--no-mmproj", no_mmproj,
               "text only: without -m, do not load the embedded model's vision tower");
  app.add_option("--reasoning-effort", effort,
                 "none|minimal|low|medium|high|xhigh|max (the template's low/high/max; none = --no-think)");
  app.add_flag("--no-think", no_think, "thinking off: the answer opens the response channel directly");
  app.add_option("--reasoning-budget", gp.reasoning_budget,
                 "think tokens per answer before the reasoning is closed for it (default -1: unlimited)");
  app.add_option("--reasoning-budget-message", gp.reasoning_budget_message,
                 "text written into the reasoning before a forced close (default none)");
  app.add_option("--tools", tools_path,
                 "OpenAI tools array JSON the model may call (calls are shown, not run)");
  app.add_option("-n,--max-tokens,--n-predict", gp.max_tokens,
                 "tokens per answer (default 1024; -1: until the end of the turn or a full context)");
  add_sampling_flags(app, sp);
  app.add_option("--seed", seed,
                 "sampling seed of the first answer, the next ones use seed+1, … (default: random, printed)");
  EngineFlags ef;
  add_engine_flags(app, ef, "context size in tokens, the whole conversation");
  app.add_option("-u,--ubatch", n_ubatch, "prompt tokens per forward micro-batch (default 512)");
  app.add_flag("--no-prompt-cache", no_prompt_cache,
               "keep one engine sequence instead of two (less memory; more of each prompt is re-read)");
  app.add_flag("--ignore-eos", gp.ignore_eos, "do not stop at the end of the turn (tests, benchmarks)");
  app.add_flag("--no-color", no_color, "plain [think] markers, no ANSI colours (also NO_COLOR=1)");
  GrammarFlags grammar_flags;
  add_grammar_flags(app, grammar_flags);
  PromptCacheFlags pc;
  add_prompt_cache_flags(app, pc);
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (std::string err = load_grammar_flags(grammar_flags, co.constraint); !err.empty())
    return usage_error(err);
  server::SchedulerOptions so;
  store::MemoryOptions mem;
  if (std::string err = apply(ef, so, mem); !err.empty()) return usage_error(err);
  if (n_ubatch < 1) return usage_error("--ubatch must be >= 1");
  if (gp.max_tokens == 0 || gp.max_tokens < -1)
    return usage_error("--max-tokens must be >= 1 (or -1: no limit)");
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

  const bool in_tty = ::isatty(0) == 1;
  const bool out_tty = ::isatty(1) == 1;
  const char* no_color_env = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  // Colour only for a person at a terminal: a script's input means a script reads the output.
  const ChatTerminal terminal{in_tty && out_tty && !no_color && !(no_color_env && *no_color_env) &&
                                  !(term && std::string_view(term) == "dumb"),
                              in_tty, out_tty};

  OpenedModel m = open_model(model_path, VocabNeed::Chat, "chat");
  co.vision = choose_vision({mmproj, no_mmproj, m.embedded}, m.model->hparams().n_embd, m.tok.get(),
                            256u << 20, ef.threads);
  // The engine's, the scheduler's and the expert store's threads are started with SIGINT
  // blocked, so the signal is delivered to this thread; until the handler is in place, Ctrl-C
  // kills as usual.
  sigset_t sigint_set;
  sigemptyset(&sigint_set);
  sigaddset(&sigint_set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigint_set, nullptr);
  so.n_slots = 1;
  so.prompt_cache = !no_prompt_cache;
  if (std::string err = apply_prompt_cache_flags(pc, so); !err.empty()) return usage_error(err);
  so.n_batch = n_ubatch;
  so.n_ubatch = n_ubatch;
  store::EngineShape shape = store::shape_of(*m.model, so.engine_options());
  disk_plan_row(so, shape);
  store::install_store(*m.model, mem, shape);
  server::Scheduler sched(m.model, m.tok, so);
  ChatSession chat(sched, *m.tok, co);
  try {  // a grammar, schema or strict tool that cannot be honoured is refused before the chat starts
    chat.check_constraint();
  } catch (const chat::ApiError& e) { fail("{}", e.what()); }

  install_sigint();
  pthread_sigmask(SIG_UNBLOCK, &sigint_set, nullptr);

  if (!system_prompt.empty()) chat.messages.push_back(Json{{"role", "system"}, {"content", system_prompt}});
  // Checked once before the first message, so a template error shows at start.
  try {
    chat.check_renders(chat.messages);
  } catch (const Error& e) { fail("the chat template rejects these settings: {}", e.what()); }
  resume_last_chat(chat, so.disk_dir);

  fmt::print(stderr, "k3 chat: {} | context {} | seed {} | {} threads | thinking {}\n", m.name, sched.n_ctx(),
             *seed, sched.n_threads(), thinking ? "on" : "off");
  if (in_tty)
    fmt::print(stderr,
               "type a message and Enter; /help for commands; Ctrl-C stops an answer, Ctrl-D leaves\n");
  std::fflush(stderr);
  run_chat_loop(chat, terminal);
  std::fflush(stdout);
  return 0;
}

}  // namespace k3::cli
