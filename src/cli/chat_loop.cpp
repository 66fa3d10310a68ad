// cli/chat_loop: see chat_loop.h.
#include "cli/chat_loop.h"

#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <algorithm>
#include <optional>
#include <string>

#include "cli/answer_printer.h"
#include "cli/chat_images.h"
#include "cli/chat_input.h"
#include "cli/chat_session.h"
#include "core/error.h"
#include "image/image.h"
#include "text/json_py.h"

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

const char* kCommandHelp =
    "commands:\n"
    "  /help          this list\n"
    "  /reset         forget the conversation (the system prompt stays)\n"
    "  /save FILE     write the conversation as a JSON array of messages (OpenAI shape),\n"
    "                 and its state as FILE.k3state\n"
    "  /load FILE     replace the conversation with one saved by /save (and its state, when\n"
    "                 FILE.k3state is of this model: no prefill)\n"
    "  /regen         drop the last answer and generate it again\n"
    "  /image PATH    send a picture with the next message (--mmproj); image paths in a\n"
    "                 message (e.g. dragged into the terminal) are attached too\n"
    "  /exit          leave (also /quit, Ctrl-D, or Ctrl-C at an empty prompt)\n"
    "input: a line ending in \\ continues on the next; \"\"\" on a line starts and ends a block;\n"
    "a message that starts with / is written //…; Ctrl-C stops an answer, twice leaves.\n";

bool is_system(const Json& m) {
  auto it = m.find("role");
  return it != m.end() && it->is_string() && (*it == "system" || *it == "developer");
}

// Where notes and errors go: stderr, dimmed on a colour terminal, after stdout is flushed.
struct Notes {
  bool color = false;
  void note(const std::string& s) const {
    std::fflush(stdout);
    fmt::print(stderr, "{}{}{}\n", color ? "\x1b[2m" : "", s, color ? "\x1b[22m" : "");
    std::fflush(stderr);
  }
  void error(const std::string& s) const {
    std::fflush(stdout);
    fmt::print(stderr, "error: {}\n", s);
    std::fflush(stderr);
  }
};

// The terminal side of a chat: one answer at a time, Ctrl-C and the slash commands.
class ChatLoop {
 public:
  ChatLoop(ChatSession& chat, Notes notes, bool out_tty) : chat_(chat), notes_(notes), out_tty_(out_tty) {}

  // Runs one answer; false when the session should end (a second Ctrl-C).
  bool run_answer() {
    sig_seen_ = g_sigints.load();
    const int base = sig_seen_;
    AnswerPrinter printer(notes_.color, out_tty_);
    std::string err;
    std::optional<TurnStats> st = chat_.answer([&](const text::ParseDelta& d) { printer.show(d); },
                                               [&] { return g_sigints.load() != base; }, err);
    if (!st) {
      notes_.error(err);
      return true;
    }
    printer.end();
    chat_.autosave();
    const int extra = g_sigints.load() - base;
    const bool interrupted = st->stop == text::StopReason::Interrupted;
    if (interrupted && st->n_generated == 0) notes_.note("[stopped before the answer began]");
    else if (interrupted)
      notes_.note("[answer stopped by Ctrl-C: what was generated is kept; Ctrl-C again to leave]");
    const double ptime = st->prompt_seconds;
    const int64_t n_decoded = st->n_prompt - st->n_cached;
    notes_.note(
        fmt::format("[prompt {} tokens ({} cached), {:.1f} tok/s | answer {} tokens, {:.1f} tok/s | context "
                    "{}/{} | stop: {}]",
                    st->n_prompt, st->n_cached, ptime > 0 ? n_decoded / ptime : 0.0, st->n_generated,
                    st->gen_seconds > 0 ? st->n_generated / st->gen_seconds : 0.0, chat_.context_used(),
                    chat_.n_ctx(), text::stop_name(st->stop)));
    sig_seen_ = g_sigints.load();
    if (interrupted) {
      // A second Ctrl-C leaves: two before the answer noticed the first, or one within a
      // second of the last stop (a script's next line may already be being answered).
      // Compared at the signals' own times: the answer notices a signal only between tokens
      // or prompt chunks.
      const int64_t t_sig = g_sigint_ns.load();
      const bool soon = last_stop_sig_ != 0 && t_sig - last_stop_sig_ < 1000000000;
      if (extra >= 2 || soon) return false;
      last_stop_sig_ = t_sig;
      last_stop_ = Clock::now();
    }
    return true;
  }

  // A user message: answered, or dropped again when no answer came; false: leave.
  bool message(std::string text) {
    if (text.starts_with("//")) text.erase(0, 1);
    std::vector<std::string> images = std::move(pending_images_);
    pending_images_.clear();
    if (chat_.sees())
      for (const std::string& p : image_paths_in(text))
        if (std::find(images.begin(), images.end(), p) == images.end()) images.push_back(p);
    if (!images.empty())
      notes_.note(fmt::format("[{} image{} attached]", images.size(), images.size() == 1 ? "" : "s"));
    chat_.messages.push_back(user_message(text, images));
    const size_t before = chat_.messages.size();
    const bool go_on = run_answer();
    if (chat_.messages.size() == before) chat_.messages.erase(before - 1);
    return go_on;
  }

  // A slash command; false: leave.
  bool command(const std::string& text) {
    const size_t sp_at = text.find_first_of(" \t");
    const std::string cmd = text.substr(0, sp_at);
    std::string arg;
    if (sp_at != std::string::npos) {
      arg = text.substr(sp_at + 1);
      size_t b = arg.find_first_not_of(" \t"), e = arg.find_last_not_of(" \t");
      arg = b == std::string::npos ? "" : arg.substr(b, e - b + 1);
    }
    if (cmd == "/exit" || cmd == "/quit") return false;
    if (cmd == "/help") {
      std::fflush(stdout);
      fmt::print(stderr, "{}", kCommandHelp);
    } else if (cmd == "/reset") {
      Json kept = Json::array();
      for (const Json& m : chat_.messages) {
        if (!is_system(m)) break;
        kept.push_back(m);
      }
      chat_.messages = std::move(kept);
      chat_.autosave();
      notes_.note("[conversation cleared]");
    } else if (cmd == "/save" || cmd == "/load") {
      if (arg.empty()) notes_.error(fmt::format("{} needs a file name: {} FILE", cmd, cmd));
      else if (cmd == "/save") save(arg);
      else load(arg);
    } else if (cmd == "/regen") {
      return regen();
    } else if (cmd == "/image") {
      attach(arg);
    } else {
      notes_.error(fmt::format("unknown command {} (/help lists them)", cmd));
    }
    return true;
  }

  // /image PATH: checked now (so a typo is reported before the message is written), sent with
  // the next message.
  void attach(const std::string& arg) {
    if (!chat_.sees()) {
      notes_.error("this model does not see images: start k3 chat with --mmproj FILE (its vision tower)");
      return;
    }
    const std::vector<std::string> found = image_paths_in(arg.empty() ? arg : "'" + arg + "'");
    if (found.empty()) {
      notes_.error(
          arg.empty()
              ? "/image needs a file: /image PATH"
              : fmt::format("/image {}: not an image file (.png, .jpg, .webp or .gif) that exists", arg));
      return;
    }
    try {
      image::decode_file(found.front());
    } catch (const Error& e) {
      notes_.error(e.what());
      return;
    }
    pending_images_.push_back(found.front());
    notes_.note(fmt::format("[{} will go with your next message]", found.front()));
  }

  // Whether a Ctrl-C at the prompt comes within a second of the last stop.
  bool stopped_just_now() const {
    return last_stop_ != Clock::time_point{} && seconds_since(last_stop_) < 1.0;
  }
  void mark_stop() { last_stop_ = Clock::now(); }
  int& sig_seen() { return sig_seen_; }

 private:
  // The state goes beside the JSON (FILE.k3state), so /load can skip the prefill; a state
  // that cannot be saved costs only that.
  void save(const std::string& path) {
    try {
      save_messages(chat_.messages, path);
    } catch (const Error& e) {
      notes_.error(e.what());
      return;
    }
    std::string state;
    try {
      state = fmt::format("; its state ({} tokens) to {}.k3state", chat_.save_state(path + ".k3state"), path);
    } catch (const std::exception& e) { state = fmt::format("; its state was not saved: {}", e.what()); }
    notes_.note(fmt::format("[saved {} messages to {}{}]", chat_.messages.size(), path, state));
  }
  void load(const std::string& path) {
    try {
      Json msgs = load_messages(path);
      try {
        chat_.check_renders(msgs);
      } catch (const std::exception& e) { fail("{}: the chat template rejects it: {}", path, e.what()); }
      chat_.messages = std::move(msgs);
    } catch (const Error& e) {
      notes_.error(fmt::format("{} (the conversation is unchanged)", e.what()));
      return;
    }
    chat_.autosave();
    std::string state;
    try {
      state = fmt::format("; state of {} tokens restored: the next answer decodes only what is new",
                          chat_.load_state(path + ".k3state"));
    } catch (const std::exception& e) {
      state = fmt::format("; the next answer reads them again ({})", e.what());
    }
    notes_.note(fmt::format("[loaded {} messages from {}{}]", chat_.messages.size(), path, state));
  }
  bool regen() {
    Json& msgs = chat_.messages;
    Json dropped;
    if (!msgs.empty() && msgs.back().value("role", "") == "assistant") {
      dropped = msgs.back();
      msgs.erase(msgs.size() - 1);
    }
    if (msgs.empty() || is_system(msgs.back())) {
      if (!dropped.is_null()) msgs.push_back(dropped);
      notes_.error("/regen: there is no message to answer yet");
      return true;
    }
    const size_t before = msgs.size();
    const bool go_on = run_answer();
    if (msgs.size() == before && !dropped.is_null()) msgs.push_back(dropped);  // no new answer
    return go_on;
  }

  ChatSession& chat_;
  Notes notes_;
  bool out_tty_;
  int sig_seen_ = 0;
  std::vector<std::string> pending_images_;  // /image files for the next message
  Clock::time_point last_stop_{};            // when Ctrl-C last stopped an answer (or discarded input)
  int64_t last_stop_sig_ = 0;                // the time of the signal that stopped the last answer
};

// Reads lines until the end of input, /exit or a second Ctrl-C.
void repl(ChatLoop& loop, const Notes& notes, bool in_tty, bool out_tty) {
  // The prompt goes where the user looks: the terminal, even when the answers are piped.
  FILE* prompt_out = out_tty ? stdout : stderr;
  loop.sig_seen() = g_sigints.load();
  LineReader reader(0, [&] { return g_sigints.load() != loop.sig_seen(); });
  MultiLine ml;
  for (;;) {
    if (in_tty) {
      fmt::print(prompt_out, "{}", ml.pending() ? "... " : "> ");
      std::fflush(prompt_out);
    }
    std::string line;
    LineReader::Status rs = reader.read_line(line);
    if (rs == LineReader::Status::Interrupted) {
      loop.sig_seen() = g_sigints.load();
      if (ml.pending() && !loop.stopped_just_now()) {
        ml.clear();
        fmt::print(prompt_out, "\n");
        notes.note("[input discarded; Ctrl-C again to leave]");
        loop.mark_stop();
        continue;
      }
      if (in_tty) fmt::print(prompt_out, "\n");
      return;
    }
    if (rs == LineReader::Status::Eof) {
      if (in_tty) fmt::print(prompt_out, "\n");
      return;
    }
    std::string text;
    if (in_tty) {
      std::optional<std::string> whole = ml.feed(line);
      if (!whole) continue;
      text = std::move(*whole);
    } else {
      text = std::move(line);  // scripts: one line, one message
    }
    if (text.empty()) continue;
    const bool is_command = text[0] == '/' && !text.starts_with("//");
    if (!(is_command ? loop.command(text) : loop.message(std::move(text)))) return;
  }
}

}  // namespace

void install_sigint() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call in this thread returns EINTR
  sigaction(SIGINT, &sa, nullptr);
}

void run_chat_loop(ChatSession& chat, const ChatTerminal& term) {
  Notes notes{term.color};
  ChatLoop loop(chat, notes, term.out_tty);
  repl(loop, notes, term.in_tty, term.out_tty);
}

}  // namespace k3::cli
