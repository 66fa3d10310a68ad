// cli/cmd_run: `k3 run [-m MODEL] [-p PROMPT] [-n N] [sampling flags]` — generates text and
// streams it to stdout as it is produced; speed goes to stderr. Without -m it runs the tiny
// model embedded in the binary (cli/embedded_model.h). The generation is a one-slot job of
// the scheduler k3 serve runs (server/local_job.h), so run behaves as a /completion request
// with the same fields. See docs/run.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "chat/api_error.h"
#include "chat/constraint.h"
#include "cli/commands.h"
#include "cli/image_input.h"
#include "cli/dist_flags.h"
#include "cli/grammar_flags.h"
#include "cli/open_model.h"
#include "cli/parse_args.h"
#include "cli/sampling_flags.h"
#include "core/error.h"
#include "model/collective.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
#include "runtime/sampler.h"
#include "server/local_job.h"
#include "server/scheduler.h"
#include "store/engine_shape.h"
#include "store/install.h"
#include "text/tokenizer.h"
#include "vision/embedding_cache.h"

namespace k3::cli {

int cmd_run(int argc, char** argv) {
  CLI::App app{"Generate text from a prompt (default: k3-tiny, the trained model embedded in k3)", "k3 run"};
  std::string model_path, prompt = "Once upon a time", tokens_text, mmproj;
  std::vector<std::string> images;
  int32_t n_predict = 64;
  int64_t n_ubatch = 512;
  std::optional<uint64_t> seed;
  auto job = std::make_shared<server::Job>();
  job->kind = server::JobKind::Completion;
  server::GenParams& gp = job->params;
  bool echo = false, no_special = false;

  app.add_option("-m,--model", model_path,
                 "GGUF model (first shard); default: the embedded k3-tiny (models/k3-tiny)");
  app.add_option("-p,--prompt", prompt, "prompt text (default \"Once upon a time\")");
  app.add_option("--tokens", tokens_text,
                 "prompt as token ids (\"1,2,3\"), instead of -p; needed for models without a vocabulary");
  app.add_option("--mmproj", mmproj, "vision tower (kimik3 mmproj GGUF) for --image (docs/vision.md)");
  app.add_option(
      "--image", images,
      "picture for the prompt (repeatable): each <__media__> in -p becomes the next one; without a "
      "marker the images come first");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate (default 64; -1: until end of generation)");
  add_sampling_flags(app, gp.sampler);
  app.add_option("--seed", seed, "sampling seed (default: random, printed to stderr)");
  EngineFlags ef;
  add_engine_flags(app, ef, "context size in tokens");
  app.add_option("-u,--ubatch", n_ubatch, "prompt tokens per forward micro-batch (default 512)");
  app.add_flag("--ignore-eos", gp.ignore_eos, "do not stop at end-of-generation tokens");
  app.add_flag("--echo", echo, "print the prompt before the generated text");
  app.add_flag("--no-special", no_special, "do not print control tokens (<|open|>, ...) in the output");
  GrammarFlags grammar_flags;
  add_grammar_flags(app, grammar_flags);
  DistFlags dist_flags;
  add_dist_flags(app, dist_flags);
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  server::SchedulerOptions so;
  store::MemoryOptions mem;
  if (std::string err = apply(ef, so, mem); !err.empty()) return usage_error(err);
  if (n_ubatch < 1) return usage_error("--ubatch must be >= 1");
  text::Json constraint_req = text::Json::object();
  if (std::string err = load_grammar_flags(grammar_flags, constraint_req); !err.empty())
    return usage_error(err);
  if (!seed) seed = std::random_device{}();
  gp.sampler.seed = *seed;
  try {
    runtime::Sampler check(gp.sampler);
  } catch (const Error& e) { return usage_error(e.what()); }
  gp.max_tokens = n_predict;
  gp.show_special = !no_special;

  OpenedModel m = open_model(model_path, VocabNeed::Optional, "run");
  std::shared_ptr<vision::EmbeddingCache> vision;
  if (!images.empty()) {
    if (!tokens_text.empty()) return usage_error("--image goes with -p (prompt text), not --tokens");
    vision =
        choose_vision({mmproj, false, m.embedded}, m.model->hparams().n_embd, m.tok.get(), 0, ef.threads);
    if (!vision) return usage_error("--image needs --mmproj (the vision tower)");
    image_prompt(*job, *m.tok, *vision, prompt, images);
  } else if (!tokens_text.empty()) {
    job->prompt = runtime::parse_token_list(tokens_text, "--tokens");
  } else {
    if (!m.tok) fail("{} has no vocabulary: give the prompt as token ids with --tokens", m.name);
    job->prompt = m.tok->encode(prompt, /*parse_special=*/true, /*add_special=*/true);
  }
  if (job->prompt.empty()) return usage_error("the prompt is empty");
  // --grammar / --json-schema: the same constraint a /completion request with those fields gets.
  if (!constraint_req.empty()) {
    if (!m.tok) return usage_error("--grammar and --json-schema need a model with a vocabulary");
    try {
      job->grammar = chat::completion_constraint(constraint_req, *m.tok);
    } catch (const chat::ApiError& e) { fail("{}", e.what()); }
  }

  so.prompt_cache = false;  // one prompt: nothing to reuse
  so.n_batch = n_ubatch;    // the prompt goes through in micro-batches of -u tokens
  so.n_ubatch = n_ubatch;
  so.collective = start_dist(dist_flags);
  if (so.collective) mem.for_distributed_rank();
  store::ExpertStore* xstore =
      store::install_store(*m.model, mem, store::shape_of(*m.model, so.engine_options()));
  if (so.collective && so.collective->rank() != 0) {
    runtime::Engine engine(m.model, so.engine_options());
    follow_if_follower(engine);
    return 0;
  }
  server::Scheduler sched(m.model, m.tok, so);
  if (static_cast<int64_t>(job->prompt.size()) >= sched.n_ctx())
    fail("the prompt ({} tokens) does not fit the context ({} tokens)", job->prompt.size(), sched.n_ctx());

  const int ranks = so.collective ? so.collective->size() : 1;
  fmt::print(stderr, "k3 run: {} | {} prompt tokens | seed {} | {} threads{}\n", m.name, job->prompt.size(),
             *seed, sched.n_threads(), ranks > 1 ? fmt::format(" × {} ranks", ranks) : "");
  if (echo) {
    if (m.tok) {
      // An image's positions hold key tokens, not ids: shown as one [image] each.
      std::vector<int32_t> run;
      for (size_t i = 0; i <= job->prompt.size(); ++i) {
        if (i < job->prompt.size() && job->prompt[i] >= 0) {
          run.push_back(job->prompt[i]);
          continue;
        }
        fmt::print("{}", m.tok->decode(run, !no_special));
        run.clear();
        if (i < job->prompt.size() && (i == 0 || job->prompt[i - 1] >= 0)) fmt::print("[image]");
      }
    } else
      for (int32_t id : job->prompt) fmt::print("{} ", id);
  }
  std::fflush(stdout);
  server::Event done = server::run_job(sched, job, [&](const server::Event& e) {
    if (m.tok) fmt::print("{}", e.text);
    else
      for (int32_t id : e.tokens) fmt::print("{} ", id);
    std::fflush(stdout);
  });
  fmt::print("\n");
  std::fflush(stdout);

  const server::Usage& u = done.usage;
  const double ps = u.prompt_ms / 1000, gs = u.predicted_ms / 1000;
  fmt::print(stderr,
             "prompt: {} tokens in {:.3f} s ({:.2f} tok/s) | generation: {} tokens in {:.3f} s "
             "({:.2f} tok/s) | stop: {}\n",
             u.prompt_tokens, ps, ps > 0 ? u.prompt_tokens / ps : 0.0, u.completion_tokens, gs,
             gs > 0 ? u.completion_tokens / gs : 0.0, text::stop_name(done.stop));
  if (xstore)
    fmt::print(stderr, "{}\n",
               store::summary_line(xstore->stats(),
                                   static_cast<double>(u.prompt_tokens + u.completion_tokens), ps + gs));
  return 0;
}

}  // namespace k3::cli
