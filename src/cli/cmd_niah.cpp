// cli/cmd_niah: `k3 niah`, needle-in-a-haystack retrieval, the model cards' protocol
// (docs/niah.md). For every length × depth × trial a random five-digit pass key sentence is
// put at that depth of filler text, the chat template asks for the key (thinking off unless
// --think), the model answers greedily, and the cell passes when the answer's content is
// exactly the key. Prints the grid (and --json), exits 0 whatever the score.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "cli/open_model.h"
#include "cli/memory_flags.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/read_file.h"
#include "gguf/file.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "server/local_job.h"
#include "server/scheduler.h"
#include "chat/vocab_roles.h"
#include "store/engine_shape.h"
#include "store/install.h"
#include "text/chat_template.h"
#include "text/output_parser.h"
#include "text/tokenizer.h"

namespace k3::cli {

namespace {

// The built-in haystack: plain expository prose written for this command (no source text),
// cycled as often as a length needs. Sentences end in ". " so the needle lands between two.
constexpr const char* kFiller =
    "A program is a list of instructions that a computer follows one after another. "
    "Each instruction is small, but together they can describe almost any task. "
    "The interpreter reads the source file, checks that it is well formed, and then runs it. "
    "When a line cannot be understood, it stops and reports where the problem is. "
    "Variables give names to values, so that a later line can use a result computed earlier. "
    "A function collects a few lines under one name and can be called from many places. "
    "Its arguments are the values it receives, and its return value is what it hands back. "
    "Good names make a program easier to read than any comment can. "
    "A loop repeats a block of lines while a condition holds, or once for every item of a list. "
    "Lists keep their items in order, and each item can be reached by its position. "
    "Dictionaries map keys to values, which makes looking something up fast. "
    "Strings hold text, and most of the work on text is splitting, joining and searching. "
    "Files keep data after the program ends; they are opened, read or written, and closed. "
    "An error that the program expects can be caught and handled instead of ending the run. "
    "Modules group related functions, and a large program is built from many of them. "
    "The standard library offers modules for dates, numbers, files, networks and much more. "
    "Tests run small parts of a program and compare what they return with what was expected. "
    "When a test fails, the message tells which value was wrong and what it should have been. "
    "Most bugs are found by reading the failing case slowly, one line at a time. "
    "Documentation explains what a function does, which arguments it takes and what it returns. "
    "A short example is often worth more than a long description. "
    "Old habits are hard to change, but a clear rule written down helps a team keep to it. "
    "The weather was mild that week, and the library stayed open late on most evenings. "
    "People came to read, to write letters, or simply to sit by the window for an hour. ";

constexpr const char* kQuestion = "\n\nWhat is the pass key?";

std::vector<std::string> split_sentences(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if ((text[i] == '.' || text[i] == '!' || text[i] == '?') && (text[i + 1] == ' ' || text[i + 1] == '\n')) {
      out.push_back(text.substr(start, i + 2 - start));
      start = i + 2;
    }
  }
  if (start < text.size()) out.push_back(text.substr(start));
  std::erase_if(out, [](const std::string& s) { return s.find_first_not_of(" \n\t") == std::string::npos; });
  return out;
}

// "512", "2k", "8K" -> tokens (k = 1024, as the model cards count).
int64_t parse_length(const std::string& s) {
  if (s.empty()) fail("--lengths: empty entry");
  int64_t mul = 1;
  std::string num = s;
  if (num.back() == 'k' || num.back() == 'K') {
    mul = 1024;
    num.pop_back();
  }
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(num, &used);
  } catch (...) { used = std::string::npos; }
  if (used != num.size() || v <= 0 || v > (1LL << 22))
    fail("--lengths: '{}' is not a length like 512 or 4k", s);
  return v * mul;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Cell {
  int64_t length = 0;
  double depth = 0;
  int trial = 0;
  std::string key, answer;
  int64_t prompt_tokens = 0;
  double seconds = 0;
  bool pass = false;
};

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  s.erase(s.find_last_not_of(ws) + 1);
  return s;
}

// The filler and the prompts built from it.
struct Haystack {
  const text::Tokenizer& tok;
  std::vector<std::string> sentences;
  bool think = false;
  std::vector<int64_t> cost;  // tokens of each sentence (text segments encode on their own)
  int64_t overhead = 0;       // tokens of the template, the needle and the question

  Haystack(const text::Tokenizer& t, std::vector<std::string> s, bool th)
      : tok(t), sentences(std::move(s)), think(th) {
    for (const auto& x : sentences) cost.push_back(static_cast<int64_t>(tok.encode(x).size()));
    overhead = static_cast<int64_t>(
        render(std::string("The pass key is 12345. Remember it. 12345 is the pass key. ") + kQuestion)
            .size());
  }
  std::vector<int32_t> render(const std::string& content) const {
    nlohmann::json req = {{"messages", nlohmann::json::array({{{"role", "user"}, {"content", content}}})},
                          {"chat_template_kwargs", {{"thinking", think}}}};
    return chat::tokenize_segments(tok, text::render_chat_segments(text::chat_input_from_request(req, true)));
  }
  // Sentences (cycled) until the prompt reaches `len` tokens.
  std::vector<size_t> pick(int64_t len) const {
    std::vector<size_t> picked;
    int64_t total = overhead;
    for (size_t i = 0; total < len; ++i) {
      const size_t k = i % sentences.size();
      if (total + cost[k] > len && !picked.empty()) break;
      picked.push_back(k);
      total += cost[k];
    }
    return picked;
  }
  // The needle with `key` at `depth` of the picked sentences, then the question.
  std::vector<int32_t> prompt(const std::vector<size_t>& picked, double depth, const std::string& key) const {
    const size_t at = static_cast<size_t>(std::llround(depth * static_cast<double>(picked.size())));
    std::string content;
    for (size_t i = 0; i <= picked.size(); ++i) {
      if (i == at) content += fmt::format("The pass key is {0}. Remember it. {0} is the pass key. ", key);
      if (i < picked.size()) content += sentences[picked[i]];
    }
    return render(trim(content) + kQuestion);
  }
};

// One cell's trial: the model answers greedily, as a chat turn.
void ask(server::Scheduler& sched, std::vector<int32_t> prompt, bool think, int max_answer, Cell& c) {
  auto job = std::make_shared<server::Job>();
  job->kind = server::JobKind::Chat;
  job->prompt = std::move(prompt);
  job->parser.thinking = think;
  job->params.sampler.temperature = 0;  // greedy
  job->params.max_tokens = max_answer;
  c.prompt_tokens = static_cast<int64_t>(job->prompt.size());
  const auto t0 = std::chrono::steady_clock::now();
  std::string answer;
  server::run_job(sched, job, [&](const server::Event& e) { answer += e.delta.content; });
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.answer = trim(answer);
  c.pass = c.answer == c.key;
}

struct Grid {
  const std::vector<int64_t>& lengths;
  const std::vector<double>& depths;
  const std::vector<Cell>& cells;
  // A cell of the grid passes when all its trials do.
  bool pass(int64_t len, double depth) const {
    bool ok = true;
    for (const Cell& c : cells)
      if (c.length == len && c.depth == depth) ok = ok && c.pass;
    return ok;
  }
  int passed() const {
    int n = 0;
    for (int64_t len : lengths)
      for (double d : depths) n += pass(len, d) ? 1 : 0;
    return n;
  }
  int total() const { return static_cast<int>(lengths.size() * depths.size()); }
};

void print_json(const Grid& g, const std::string& shown, bool think, int trials, uint64_t seed) {
  nlohmann::json out = {{"model", shown},
                        {"thinking", think},
                        {"trials", trials},
                        {"seed", seed},
                        {"passed", g.passed()},
                        {"cells_total", g.total()},
                        {"results", nlohmann::json::array()}};
  for (const Cell& c : g.cells)
    out["results"].push_back({{"length", c.length},
                              {"depth", c.depth},
                              {"trial", c.trial},
                              {"key", c.key},
                              {"answer", c.answer},
                              {"pass", c.pass},
                              {"prompt_tokens", c.prompt_tokens},
                              {"seconds", c.seconds}});
  fmt::print("{}\n", out.dump(1));
}

void print_grid(const Grid& g, int trials) {
  std::string head = fmt::format("{:>8}", "length");
  for (double d : g.depths) head += fmt::format(" {:>6.2f}", d);
  fmt::print("{}\n", head);
  for (int64_t len : g.lengths) {
    std::string row =
        len % 1024 == 0 ? fmt::format("{:>8}", fmt::format("{}k", len / 1024)) : fmt::format("{:>8}", len);
    for (double d : g.depths) row += fmt::format(" {:>6}", g.pass(len, d) ? "ok" : "FAIL");
    fmt::print("{}\n", row);
  }
  fmt::print("NIAH: {}/{} cells exact ({} trial{} per cell)\n", g.passed(), g.total(), trials,
             trials == 1 ? "" : "s");
}

}  // namespace

int cmd_niah(int argc, char** argv) {
  CLI::App app{"Needle in a haystack: can the model find a pass key at every length and depth?", "k3 niah"};
  app.footer(
      "Protocol (docs/niah.md): the sentence \"The pass key is NNNNN. Remember it. NNNNN is the\n"
      "pass key.\" with a random five-digit key is put at each depth of filler text, the chat\n"
      "template asks \"What is the pass key?\", the model answers greedily; a cell passes when the\n"
      "answer is exactly the key. Lengths count the whole prompt in tokens (k = 1024).\n\n"
      "Examples:\n"
      "  k3 niah                                         # embedded k3-tiny, 512..8k x 0.15/0.5/0.85\n"
      "  k3 niah -m model.gguf --lengths 4k,16k,64k --depths 0.15,0.5,0.85 -t 8\n"
      "  k3 niah --trials 5 --json > niah.json           # 5 keys per cell, machine-readable\n"
      "  k3 niah --haystack essays.txt --think           # own filler; let the model think first");
  std::string model_path, lengths_arg = "512,1k,2k,4k,8k", depths_arg = "0.15,0.5,0.85", haystack_path;
  int trials = 1, threads = 0, max_answer = 0;
  uint64_t seed = 1234;
  bool json = false, think = false;
  MemoryFlags mem_flags;
  app.add_option("-m,--model", model_path, "GGUF model; default: the embedded k3-tiny");
  app.add_option("--lengths", lengths_arg, "prompt lengths in tokens, comma separated (k = 1024)")
      ->capture_default_str();
  app.add_option("--depths", depths_arg, "needle depths in [0, 1], comma separated")->capture_default_str();
  app.add_option("--trials", trials, "keys per cell (a cell passes only if every trial does)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--haystack", haystack_path, "filler text file (default: built-in prose)");
  app.add_option("--seed", seed, "seed of the pass keys")->capture_default_str();
  app.add_flag("--think", think, "thinking on: the model reasons before answering (default off)");
  app.add_option("-n,--max-answer", max_answer, "answer tokens at most (default 16, 128 with --think)")
      ->check(CLI::Range(1, 4096));
  app.add_option("-t,--threads", threads, "worker threads (0: machine default)")->check(CLI::Range(0, 1024));
  app.add_flag("--json", json, "print the cells as JSON instead of the grid");
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "no progress bar on stderr (the per-cell lines stay)");
  add_memory_flags(app, mem_flags);
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (max_answer == 0) max_answer = think ? 128 : 16;

  std::vector<int64_t> lengths;
  std::vector<double> depths;
  store::MemoryOptions mem;
  std::vector<std::string> sentences;
  try {  // argument errors are usage errors (exit 2)
    for (const auto& s : split_list(lengths_arg)) lengths.push_back(parse_length(s));
    for (const auto& s : split_list(depths_arg)) {
      size_t used = 0;
      double d = -1;
      try {
        d = std::stod(s, &used);
      } catch (...) { used = std::string::npos; }
      if (used != s.size() || !(d >= 0 && d <= 1)) fail("--depths: '{}' is not a number in [0, 1]", s);
      depths.push_back(d);
    }
    if (lengths.empty() || depths.empty()) fail("--lengths and --depths need at least one value each");
    if (std::string err = to_memory_options(mem_flags, mem); !err.empty()) fail("{}", err);
    std::string filler = kFiller;
    if (!haystack_path.empty()) { filler = read_file(haystack_path, kNoReadLimit, "--haystack"); }
    sentences = split_sentences(filler);
    if (sentences.empty()) fail("--haystack: {} has no text", haystack_path);
  } catch (const Error& e) { return usage_error("{}", e.what()); }

  OpenedModel m = open_model(model_path, VocabNeed::Chat, "niah");
  const int64_t max_len = *std::max_element(lengths.begin(), lengths.end());
  server::SchedulerOptions so;
  so.n_slots = 1;
  so.n_threads = threads;
  so.n_ctx = max_len + max_answer + 64;
  so.prompt_cache = false;  // every prompt is new
  mem.decode_copy = false;  // long prompts, answers of a few tokens: the load would cost more than it saves
  store::install_store(*m.model, mem, store::shape_of(*m.model, so.engine_options()));
  server::Scheduler sched(m.model, m.tok, so);

  Haystack hay{*m.tok, std::move(sentences), think};
  std::mt19937_64 rng(seed);
  std::vector<Cell> cells;
  int64_t all_tokens = 0;
  for (int64_t len : lengths) all_tokens += len * static_cast<int64_t>(depths.size()) * trials;
  Progress bar(static_cast<uint64_t>(all_tokens), "niah", !no_progress, ProgressUnit::tokens);
  fmt::print(stderr, "k3 niah: {} | lengths {} | depths {} | {} trial(s) | thinking {}\n", m.name,
             lengths_arg, depths_arg, trials, think ? "on" : "off");
  for (int64_t len : lengths) {
    const std::vector<size_t> picked = hay.pick(len);
    for (double depth : depths)
      for (int trial = 0; trial < trials; ++trial) {
        Cell c;
        c.length = len;
        c.depth = depth;
        c.trial = trial;
        c.key = std::to_string(10000 + static_cast<int>(rng() % 90000));
        ask(sched, hay.prompt(picked, depth, c.key), think, max_answer, c);
        bar.println(fmt::format(
            "  length {:>6} depth {:.2f} trial {}: {} tokens, key {} -> '{}' {} ({:.1f} s)", len, depth,
            trial, c.prompt_tokens, c.key, c.answer.substr(0, 40), c.pass ? "ok" : "FAIL", c.seconds));
        bar.advance(static_cast<uint64_t>(len));
        cells.push_back(std::move(c));
      }
  }
  bar.finish();
  const Grid grid{lengths, depths, cells};
  if (json) print_json(grid, m.name, think, trials, seed);
  else print_grid(grid, trials);
  return 0;
}

}  // namespace k3::cli
