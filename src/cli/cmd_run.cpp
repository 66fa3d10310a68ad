// cli/cmd_run: `k3 run [-m MODEL] [-p PROMPT] [-n N] [sampling flags]` — generates text and
// streams it to stdout as it is produced; speed goes to stderr. Without -m it runs the tiny
// model embedded in the binary (cli/embedded_model.h). See docs/run.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/embedded_model.h"
#include "cli/grammar_flags.h"
#include "cli/dist_flags.h"
#include "cli/memory_flags.h"
#include "cli/parse_args.h"
#include "cli/sampling_flags.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/file.h"
#include "grammar/matcher.h"
#include "model/collective.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "server/api_error.h"
#include "server/request_constraint.h"
#include "store/engine_shape.h"
#include "store/install.h"
#include "text/tokenizer.h"

namespace k3::cli {

namespace {

bool has_vocab(const gguf::GgufFile& f) {
  return f.find("tokenizer.ggml.tokens") != nullptr && f.get_string("tokenizer.ggml.model", "") != "no_vocab";
}

}  // namespace

int cmd_run(int argc, char** argv) {
  CLI::App app{"Generate text from a prompt (default: k3-tiny, the trained model embedded in k3)", "k3 run"};
  std::string model_path, prompt = "Once upon a time", tokens_text, cache_type = "f32";
  int32_t n_predict = 64, threads = 0;
  int64_t n_ctx = 4096, n_ubatch = 512;
  std::optional<uint64_t> seed;
  runtime::SamplerParams sp;
  bool ignore_eos = false, echo = false, no_special = false;

  app.add_option("-m,--model", model_path,
                 "GGUF model (first shard); default: the embedded k3-tiny (models/k3-tiny)");
  app.add_option("-p,--prompt", prompt, "prompt text (default \"Once upon a time\")");
  app.add_option("--tokens", tokens_text,
                 "prompt as token ids (\"1,2,3\"), instead of -p; needed for models without a vocabulary");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate (default 64; -1: until end of generation)");
  add_sampling_flags(app, sp);
  app.add_option("--seed", seed, "sampling seed (default: random, printed to stderr)");
  app.add_option("-t,--threads", threads, "threads (default: the machine's default)");
  app.add_option("-c,--ctx", n_ctx, "context size in tokens (default 4096; 0: the model's)");
  app.add_option("-u,--ubatch", n_ubatch, "prompt tokens per forward micro-batch (default 512)");
  app.add_option("--cache-type", cache_type, "MLA cache precision: f32 or f16 (default f32)");
  app.add_flag("--ignore-eos", ignore_eos, "do not stop at end-of-generation tokens");
  app.add_flag("--echo", echo, "print the prompt before the generated text");
  app.add_flag("--no-special", no_special, "do not print control tokens (<|open|>, ...) in the output");
  GrammarFlags grammar_flags;
  add_grammar_flags(app, grammar_flags);
  MemoryFlags mem_flags;
  add_memory_flags(app, mem_flags);
  DistFlags dist_flags;
  add_dist_flags(app, dist_flags);
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (cache_type != "f32" && cache_type != "f16") return usage_error("--cache-type must be f32 or f16");
  if (threads < 0) return usage_error("--threads must be >= 0");
  if (n_ctx < 0) return usage_error("--ctx must be >= 0");
  if (n_ubatch < 1) return usage_error("--ubatch must be >= 1");
  store::MemoryOptions mem;
  if (std::string err = to_memory_options(mem_flags, mem); !err.empty()) return usage_error(err);
  text::Json constraint_req = text::Json::object();
  if (std::string err = load_grammar_flags(grammar_flags, constraint_req); !err.empty())
    return usage_error(err);
  if (!seed) seed = std::random_device{}();
  sp.seed = *seed;
  std::unique_ptr<runtime::Sampler> sampler;
  try {
    sampler = std::make_unique<runtime::Sampler>(sp);
  } catch (const Error& e) { return usage_error(e.what()); }

  std::shared_ptr<model::Model> model;
  std::string shown_name = model_path;
  if (model_path.empty()) {
    model = load_embedded_model();
    shown_name = std::string("(embedded ") + kEmbeddedModelName + ")";
  } else {
    model = model::Model::load(model_path);
  }
  const gguf::GgufFile& file = model->gguf();

  std::shared_ptr<const text::Tokenizer> tok;
  if (has_vocab(file)) tok = text::Tokenizer::from_gguf(file);
  std::vector<int32_t> prompt_ids;
  if (!tokens_text.empty()) {
    prompt_ids = runtime::parse_token_list(tokens_text, "--tokens");
  } else {
    if (!tok) fail("{} has no vocabulary: give the prompt as token ids with --tokens", shown_name);
    prompt_ids = tok->encode(prompt, /*parse_special=*/true, /*add_special=*/true);
  }
  if (prompt_ids.empty()) return usage_error("the prompt is empty");

  runtime::EngineOptions eo;
  eo.n_threads = threads;
  eo.n_ctx = n_ctx;
  eo.n_ubatch = n_ubatch;
  eo.cache_type = cache_type == "f16" ? model::CacheType::F16 : model::CacheType::F32;
  eo.hooks.collective = start_dist(dist_flags);
  if (eo.hooks.collective) mem.for_distributed_rank();
  store::ExpertStore* xstore = store::install_store(*model, mem, store::shape_of(*model, eo));
  runtime::Engine engine(model, eo);
  if (follow_if_follower(engine)) return 0;

  runtime::GenerateOptions go;
  go.n_predict = n_predict;
  go.ignore_eog = ignore_eos;
  if (tok) {
    go.is_eog = [&](int32_t id) { return tok->is_eog(id); };
  } else if (const gguf::Value* eos = file.find("tokenizer.ggml.eos_token_id")) {
    int64_t e = eos->as_int();
    go.is_eog = [e](int32_t id) { return id == e; };
  }

  // --grammar / --json-schema: the same constraint a /completion request with those fields gets.
  std::unique_ptr<grammar::GrammarMatcher> matcher;
  runtime::TokenConstraint constraint;
  if (!constraint_req.empty()) {
    if (!tok) return usage_error("--grammar and --json-schema need a model with a vocabulary");
    std::shared_ptr<const grammar::Grammar> g;
    try {
      g = server::completion_constraint(constraint_req, *tok);
    } catch (const server::ApiError& e) { fail("{}", e.what()); }
    matcher = std::make_unique<grammar::GrammarMatcher>(g, grammar::TokenVocab::from_tokenizer(*tok));
    constraint.allowed = [&] { return matcher->allowed(); };
    constraint.accept = [&](int32_t t) { matcher->accept(t); };
    constraint.must_end = [&] { return matcher->must_end(); };
    go.constraint = &constraint;
  }

  const int ranks = eo.hooks.collective ? eo.hooks.collective->size() : 1;
  fmt::print(stderr, "k3 run: {} | {} prompt tokens | seed {} | {} threads{}\n", shown_name,
             prompt_ids.size(), *seed, engine.pool().size(),
             ranks > 1 ? fmt::format(" × {} ranks", ranks) : "");
  std::optional<text::StreamingDetokenizer> detok;
  if (tok) detok.emplace(*tok, !no_special);
  if (echo) {
    if (tok) fmt::print("{}", tok->decode(prompt_ids, !no_special));
    else
      for (int32_t id : prompt_ids) fmt::print("{} ", id);
  }
  std::fflush(stdout);
  auto on_token = [&](int32_t id) {
    if (detok) fmt::print("{}", detok->push(id));
    else fmt::print("{} ", id);
    std::fflush(stdout);
  };
  runtime::GenerateStats st = runtime::generate(engine, *sampler, prompt_ids, go, on_token);
  if (detok) fmt::print("{}", detok->flush());
  fmt::print("\n");
  std::fflush(stdout);

  fmt::print(stderr,
             "prompt: {} tokens in {:.3f} s ({:.2f} tok/s) | generation: {} tokens in {:.3f} s "
             "({:.2f} tok/s) | stop: {}\n",
             st.n_prompt, st.prompt_seconds, st.prompt_tps(), st.n_generated, st.gen_seconds, st.gen_tps(),
             st.stop);
  if (xstore)
    fmt::print(stderr, "{}\n",
               store::summary_line(xstore->stats(), static_cast<double>(st.n_prompt + st.n_gen_decoded),
                                   st.prompt_seconds + st.gen_seconds));
  return 0;
}

}  // namespace k3::cli
