// cli/cmd_perplexity: `k3 perplexity` — perplexity of a text as llama-perplexity computes it,
// and KL divergence against a saved base model (docs/perplexity.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/memory_flags.h"
#include "cli/open_model.h"
#include "model/gpu_placement.h"
#include "cli/dist_flags.h"
#include "cli/parse_args.h"
#include "cli/token_input.h"
#include "core/error.h"
#include "core/progress.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
#include "text/tokenizer.h"
#include "tools/eval/perplexity.h"
#include "tools/eval/perplexity_kl.h"

namespace k3::cli {
int cmd_perplexity(int argc, char** argv) {
  CLI::App app{"Perplexity of a text (llama-perplexity's method) and KL divergence against a base model",
               "k3 perplexity"};
  std::string model_path, text_file, tokens_file, kl_out, kl_in;
  tools::PerplexityOptions po;
  int64_t n_batch = 0;
  int threads = 0;
  uint32_t top_k = 128;
  app.add_option("-m,--model", model_path, "GGUF model file")->required();
  auto* f_opt = app.add_option("-f,--file", text_file, "text file to tokenize with the model's vocabulary");
  auto* t_opt = app.add_option("--tokens-file", tokens_file, "file of token ids (used as they are)");
  f_opt->excludes(t_opt);
  app.add_option("-c,--ctx-size", po.n_ctx, "tokens per chunk")->capture_default_str();
  app.add_option("--chunks", po.max_chunks, "evaluate at most this many chunks (default: all)");
  app.add_option("-b,--batch-size", n_batch, "tokens per forward micro-batch (default: min(c, 512))");
  app.add_option("-t,--threads", threads, "worker threads (0: machine default)");
  runtime::CacheType kv_type = runtime::CacheType::F32;
  add_cache_type_flag(app, kv_type, "--kv-type", "MLA latent cache type: f32 | f16 (default f32)");
  auto* ko = app.add_option("--kl-base-out", kl_out, "save this model's log-probabilities as a KL base file");
  auto* ki = app.add_option("--kl-base", kl_in, "compare this model against a KL base file");
  ko->excludes(ki);
  app.add_option("--kl-top-k", top_k, "log-probabilities kept per token in --kl-base-out (≥ n_vocab: all)")
      ->capture_default_str();
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "no progress bar on stderr");
  DistFlags dist_flags;
  add_dist_flags(app, dist_flags);
  MemoryFlags gpu_flags;
  add_gpu_flags(app, gpu_flags);
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  model::GpuPlacement gpu;
  if (const std::string bad = to_gpu_placement(gpu_flags, gpu); !bad.empty()) return usage_error(bad);
  if (text_file.empty() == tokens_file.empty()) {
    return usage_error("give exactly one of -f or --tokens-file");
  }

  auto model = open_model(model_path, VocabNeed::Optional, "perplexity").model;
  model::place_on_gpu(*model, gpu);
  CorpusTokens corpus = load_corpus_tokens(*model, text_file, tokens_file, "perplexity");
  std::vector<int32_t>& tokens = corpus.tokens;
  if (corpus.bos >= 0) po.bos_token = corpus.bos;

  std::unique_ptr<tools::KlBaseReader> base;
  if (!kl_in.empty()) {
    base = std::make_unique<tools::KlBaseReader>(kl_in);
    const auto& h = base->header();
    if (h.n_vocab != model->hparams().n_vocab)
      fail("KL base '{}' has n_vocab {}, the model {}", kl_in, h.n_vocab, model->hparams().n_vocab);
    if (po.max_chunks >= 0 && po.max_chunks != static_cast<int64_t>(h.n_chunks))
      fmt::print(stderr, "perplexity: using the KL base's {} chunks\n", h.n_chunks);
    po.n_ctx = h.n_ctx;
    po.max_chunks = h.n_chunks;
  }
  const int64_t n_chunks = tools::perplexity_n_chunks(static_cast<int64_t>(tokens.size()), po);
  const uint64_t hash = tools::tokens_hash(tools::perplexity_chunk_tokens(tokens, po, n_chunks));
  if (base) {
    if (n_chunks != static_cast<int64_t>(base->header().n_chunks))
      fail("KL base '{}' holds {} chunks, the input gives only {}", kl_in, base->header().n_chunks, n_chunks);
    if (hash != base->header().tokens_hash)
      fail("KL base '{}' was made from different tokens (text, vocabulary or -c differ)", kl_in);
  }

  runtime::EngineOptions eo;
  eo.n_threads = threads;
  eo.n_ctx = po.n_ctx;
  eo.n_ubatch = n_batch > 0 ? n_batch : std::min<int64_t>(po.n_ctx, 512);
  eo.cache_type = kv_type;
  eo.hooks.collective = start_dist(dist_flags);
  runtime::Engine engine(model, eo);
  if (follow_if_follower(engine)) return 0;
  const int64_t n_vocab = engine.n_vocab();

  std::unique_ptr<tools::KlBaseWriter> writer;
  if (!kl_out.empty()) {
    tools::KlBaseHeader h;
    h.n_vocab = static_cast<uint32_t>(n_vocab);
    h.n_ctx = static_cast<uint32_t>(po.n_ctx);
    h.n_chunks = static_cast<uint32_t>(n_chunks);
    h.n_scored = static_cast<uint32_t>(tools::perplexity_scored_per_chunk(po.n_ctx));
    h.top_k = std::min<uint32_t>(std::max<uint32_t>(top_k, 1), h.n_vocab);
    h.tokens_hash = hash;
    writer = std::make_unique<tools::KlBaseWriter>(kl_out, h);
  }
  tools::KlAccumulator acc;
  tools::KlRecord rec;
  auto on_row = [&](int64_t, int64_t, const float* logits, int32_t target) {
    if (writer) writer->add(logits, target);
    if (base) {
      base->next(rec);
      if (rec.target != target) fail("KL base '{}': target token mismatch", kl_in);
      acc.add(rec, logits, n_vocab);
    }
  };
  fmt::print(stderr, "perplexity: {} chunks of {} tokens, {} scored per chunk\n", n_chunks, po.n_ctx,
             tools::perplexity_scored_per_chunk(po.n_ctx));
  // The running PPL after each chunk goes to stdout as llama-perplexity prints it, except when
  // stdout and stderr are one terminal with the bar on it: then the bar shows it.
  Progress bar(static_cast<uint64_t>(n_chunks * po.n_ctx), "perplexity", !no_progress, ProgressUnit::tokens);
  const bool in_bar = !no_progress && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
  auto on_chunk = [&](int64_t c, double ppl) {
    if (!in_bar) {
      fmt::print("[{}]{:.4f},", c + 1, ppl);
      std::fflush(stdout);
    }
    bar.set(static_cast<uint64_t>((c + 1) * po.n_ctx), fmt::format("PPL {:.4f}", ppl));
  };
  const tools::PerplexityResult r = tools::perplexity(engine, tokens, po, on_row, on_chunk);
  bar.finish();
  fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", r.ppl, r.ppl_err);
  if (writer) {
    writer->commit();
    fmt::print(stderr, "perplexity: KL base ({} tokens, top-{}) written to {}\n", r.n_scored,
               std::min<uint32_t>(std::max<uint32_t>(top_k, 1), static_cast<uint32_t>(n_vocab)), kl_out);
  }
  if (base) {
    const tools::KlSummary s = acc.summary();
    fmt::print("\n====== KL divergence vs {} ({} tokens, top-{}) ======\n", kl_in, s.n, base->header().top_k);
    fmt::print("PPL(base)            : {:.4f}\n", s.ppl_base);
    fmt::print("PPL(model)           : {:.4f}\n", s.ppl);
    fmt::print("Delta PPL            : {:+.4f}\n", s.dppl());
    fmt::print("Mean KLD             : {:.6f} +/- {:.6f}\n", s.kld_mean, s.kld_err);
    fmt::print("Median KLD           : {:.6f}\n", s.kld_median);
    fmt::print("99.0% KLD            : {:.6f}\n", s.kld_p99);
    fmt::print("Maximum KLD          : {:.6f}\n", s.kld_max);
    fmt::print("Same top-1           : {:.3f} +/- {:.3f} %\n", 100 * s.top1, 100 * s.top1_err);
  }
  return 0;
}

}  // namespace k3::cli
