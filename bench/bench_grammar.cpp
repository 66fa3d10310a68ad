// bench_grammar: what constrained decoding costs per token, on a real vocabulary.
//
//   bench_grammar MODEL.gguf [SCHEMAS.json] [--tokens N] [--seed S]
//
// For each schema of the corpus (default tests/data/grammar/schemas.json), as a chat answer
// (thinking off: the response channel in the XTML frame) and as a raw completion, it
// samples N tokens from random logits at temperature 1 through the grammar's mask and times
// the mask (split into first computations and cache hits), the masked sampling and the
// advance. The model file supplies only the vocabulary (bench-m: 163,840 tokens). Results go
// to stdout as a table and one JSON line; docs/grammar.md records them.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/file.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"
#include "runtime/sampler.h"
#include "chat/constraint.h"
#include "chat/vocab_roles.h"
#include "text/json_py.h"
#include "text/tokenizer.h"

using namespace k3;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Totals {
  double mask_ms = 0, compute_ms = 0, sample_ms = 0, plain_ms = 0, accept_ms = 0;
  size_t tokens = 0, computes = 0, completed = 0, runs = 0;
  std::vector<double> per_token;
};

void run_one(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenVocab> gv,
             int32_t end_token, int n_tokens, uint64_t seed, const std::vector<std::vector<float>>& logits,
             Totals& t) {
  grammar::GrammarMatcher m(std::move(g), std::move(gv));
  runtime::SamplerParams sp;  // the defaults (top-k 40, top-p 0.95, min-p 0.05) at temperature 1
  sp.temperature = 1.0f;
  sp.seed = seed;
  runtime::Sampler sampler(sp), plain(sp);
  ++t.runs;
  for (int i = 0; i < n_tokens; ++i) {
    if (m.must_end()) {
      ++t.completed;
      return;
    }
    const size_t before = m.stats().mask_computes;
    auto t0 = Clock::now();
    auto mask = m.allowed();
    const double dm = ms_since(t0);
    t.mask_ms += dm;
    t.per_token.push_back(dm);
    if (m.stats().mask_computes > before) {
      t.compute_ms += dm;
      ++t.computes;
    }
    auto t1 = Clock::now();
    const int32_t tok = sampler.sample(logits[static_cast<size_t>(i) % logits.size()], mask);
    t.sample_ms += ms_since(t1);
    auto t3 = Clock::now();
    (void)plain.sample(logits[static_cast<size_t>(i) % logits.size()]);  // the same draw unconstrained
    t.plain_ms += ms_since(t3);
    auto t2 = Clock::now();
    m.accept(tok);
    t.accept_ms += ms_since(t2);
    ++t.tokens;
    if (tok == end_token) {
      ++t.completed;
      return;
    }
  }
}

void report(const char* what, Totals& t) {
  std::sort(t.per_token.begin(), t.per_token.end());
  auto pct = [&](double p) {
    return t.per_token.empty() ? 0.0 : t.per_token[static_cast<size_t>(p * (t.per_token.size() - 1))];
  };
  const double n = static_cast<double>(std::max<size_t>(t.tokens, 1));
  fmt::print(
      "{:<12} tokens {:>6}  mask/token {:.3f} ms (p50 {:.3f}, p99 {:.3f}, max {:.1f})  "
      "first-time masks {} at {:.2f} ms each  masked sample {:.3f} ms (unconstrained {:.3f})  advance {:.4f} "
      "ms  "
      "grammar overhead {:.3f} ms/token  runs finished {}/{}\n",
      what, t.tokens, t.mask_ms / n, pct(0.5), pct(0.99), t.per_token.empty() ? 0.0 : t.per_token.back(),
      t.computes, t.computes ? t.compute_ms / static_cast<double>(t.computes) : 0.0, t.sample_ms / n,
      t.plain_ms / n, t.accept_ms / n, (t.mask_ms + t.sample_ms - t.plain_ms + t.accept_ms) / n, t.completed,
      t.runs);
  fmt::print(
      "{{\"bench\":\"grammar\",\"mode\":\"{}\",\"tokens\":{},\"mask_ms_per_token\":{:.4f},\"mask_p99_ms\":{:."
      "4f},"
      "\"first_time_masks\":{},\"first_time_mask_ms\":{:.3f},\"sample_ms_per_token\":{:.4f},"
      "\"unconstrained_sample_ms_per_token\":{:.4f},\"advance_ms_per_token\":{:.4f},\"overhead_ms_per_"
      "token\":{:.4f}}}\n",
      what, t.tokens, t.mask_ms / n, pct(0.99), t.computes,
      t.computes ? t.compute_ms / static_cast<double>(t.computes) : 0.0, t.sample_ms / n, t.plain_ms / n,
      t.accept_ms / n, (t.mask_ms + t.sample_ms - t.plain_ms + t.accept_ms) / n);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> pos;
    int n_tokens = 256;
    uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--tokens" && i + 1 < argc) n_tokens = std::stoi(argv[++i]);
      else if (a == "--seed" && i + 1 < argc) seed = std::stoull(argv[++i]);
      else if (a == "-h" || a == "--help") {
        fmt::print("usage: bench_grammar MODEL.gguf [SCHEMAS.json] [--tokens N] [--seed S]\n");
        return 0;
      } else pos.push_back(a);
    }
    if (pos.empty()) fail("usage: bench_grammar MODEL.gguf [SCHEMAS.json] [--tokens N] [--seed S]");
    const std::string schemas_path = pos.size() > 1 ? pos[1] : "tests/data/grammar/schemas.json";
    auto tok = text::Tokenizer::from_gguf_path(pos[0]);
    // A vocabulary without the XTML markers (another model's) is measured as completions only.
    std::optional<chat::VocabRoles> roles = chat::VocabRoles::of(*tok);
    if (!roles->has_chat()) roles.reset();
    const int32_t end = roles ? roles->end_of_msg : (tok->eog_ids().empty() ? -1 : tok->eog_ids().front());

    auto t0 = Clock::now();
    auto gv = grammar::TokenVocab::from_tokenizer(
        *tok, roles ? std::vector<int32_t>{roles->end_of_msg} : std::vector<int32_t>{});
    fmt::print("vocabulary: {} tokens, trie {} nodes (built in {:.1f} ms)\n", gv->size(),
               gv->trie().byte.size(), ms_since(t0));

    std::ifstream in(schemas_path);
    std::stringstream ss;
    ss << in.rdbuf();
    text::Json corpus = text::parse_json_exact(ss.str(), schemas_path);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<std::vector<float>> logits(8, std::vector<float>(tok->n_vocab()));
    for (auto& row : logits)
      for (float& x : row) x = nd(rng);

    Totals chat, raw;
    double compile_ms = 0;
    for (const text::Json& item : corpus) {
      text::Json req = {{"json_schema", item["schema"]}};
      auto tc = Clock::now();
      auto g_chat = roles ? chat::chat_constraint(req, false, *tok) : nullptr;
      auto g_raw = chat::completion_constraint(req, *tok);
      compile_ms += ms_since(tc);
      if (g_chat) run_one(g_chat, gv, end, n_tokens, seed, logits, chat);
      run_one(g_raw, gv, end, n_tokens, seed, logits, raw);
    }
    fmt::print("{} schemas, compile (chat + raw) {:.2f} ms per schema\n", corpus.size(),
               compile_ms / static_cast<double>(corpus.size()));
    if (roles) report("chat", chat);
    report("completion", raw);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
