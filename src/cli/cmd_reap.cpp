// cli/cmd_reap: `k3 reap` — prune routed experts (REAP, frequency or random) by running a
// calibration set through the engine and slicing the GGUF byte-exactly (docs/reap.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/open_model.h"
#include "cli/memory_flags.h"
#include "cli/parse_args.h"
#include "cli/token_input.h"
#include "core/error.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "store/engine_shape.h"
#include "store/install.h"
#include "text/tokenizer.h"
#include "core/progress.h"
#include "tools/reap/reap.h"
#include "tools/reap/reap_saliency.h"
#include "tools/imatrix/chat_corpus.h"
#include "tools/split/split.h"

namespace k3::cli {

int cmd_reap(int argc, char** argv) {
  CLI::App app{
      "Prune routed experts: score every expert on calibration text with the engine's own\n"
      "routing (REAP: mean router weight x ||expert output|| over the tokens routed to it),\n"
      "keep the best N per MoE layer and write a GGUF whose kept experts are byte-exact\n"
      "copies. Example: k3 reap -m k3.gguf --calib calib.txt --keep 400 -o k3-reap400.gguf",
      "k3 reap"};
  std::string model_path, calib, calib_tokens, method = "reap", split_size;
  bool chat = false, no_progress = false;
  tools::ReapOptions opt;
  int64_t keep = -1;
  double ratio = -1.0;
  app.add_option("-m,--model", model_path, "GGUF model to prune (first shard of a split model)")->required();
  auto* c_opt = app.add_option("--calib", calib,
                               "calibration text (tokenized with the model's vocabulary), "
                               "or JSONL chats with --chat");
  auto* ct_opt =
      app.add_option("--calib-tokens", calib_tokens, "calibration as token ids (commas/whitespace)");
  c_opt->excludes(ct_opt);
  app.add_flag("--chat", chat,
               "--calib is JSONL: one conversation per line (array of messages or a "
               "chat-completions request), rendered with K3's chat template");
  auto* k_opt = app.add_option("--keep", keep, "experts to keep in every MoE layer (>= expert_used_count)");
  auto* r_opt = app.add_option("--prune-ratio", ratio,
                               "fraction of experts to remove, 0 < R < 1 "
                               "(keep = n_expert - round(R * n_expert))");
  k_opt->excludes(r_opt);
  app.add_option("-o,--output", opt.output, "pruned GGUF to write (shards: OUT-0000i-of-0000N.gguf)")
      ->required();
  app.add_option("--method", method,
                 "reap (default): REAP saliency; freq: tokens routed; random: seeded "
                 "random subset (a baseline)")
      ->check(CLI::IsMember({"reap", "freq", "random"}));
  app.add_option("--seed", opt.seed, "seed of --method random")->capture_default_str();
  app.add_option("--scores-out", opt.scores_out, "write per-layer counts, scores and kept experts as JSON");
  app.add_option("--max-tokens", opt.calib.max_tokens,
                 "use at most this many calibration tokens (default: all)");
  app.add_option("-c,--ctx-size", opt.calib.n_ctx,
                 "tokens per calibration sequence (text is cut into chunks "
                 "of this size; chats longer than this are cut)")
      ->capture_default_str();
  app.add_option("-t,--threads", opt.calib.n_threads, "worker threads (0: machine default)");
  app.add_option("--split-max-size", split_size,
                 "start a new output shard before this size (e.g. 45G, 500M)");
  app.add_flag("--no-progress", no_progress, "no progress lines");
  MemoryFlags mem_flags;
  add_memory_flags(app, mem_flags);  // --ram-budget: calibrate a model larger than RAM
  app.footer(
      "Kept experts are stored in ascending original order; ffn_gate_inp rows, exp_probs_b entries and\n"
      "expert_count follow; everything else is copied byte for byte. Chat calibration (--chat) renders\n"
      "each JSONL line with K3's template, assistant turns included. Check the report's never_routed and\n"
      "kept_token_share; on random-weight test models freq beats reap (measurements: docs/reap.md).");
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (calib.empty() == calib_tokens.empty()) {
    return usage_error("give exactly one of --calib or --calib-tokens");
  }
  if (k_opt->count() == 0 && r_opt->count() == 0) {
    return usage_error("give one of --keep N or --prune-ratio R");
  }
  store::MemoryOptions mem;
  if (std::string err = to_memory_options(mem_flags, mem); !err.empty()) { return usage_error("{}", err); }
  if (chat && calib.empty()) {
    return usage_error("--chat applies to --calib (a JSONL file), not to --calib-tokens");
  }
  if (k_opt->count()) {
    if (keep < 1) fail("reap: --keep must be at least 1, not {}", keep);
    opt.n_keep = keep;
  } else {
    if (!(ratio > 0.0 && ratio < 1.0))
      fail("reap: --prune-ratio must be between 0 and 1 (the fraction of experts removed), not {}", ratio);
    opt.ratio = ratio;
  }
  opt.method = tools::parse_reap_method(method);
  if (!split_size.empty()) opt.write.split.max_bytes = tools::parse_size(split_size);
  opt.progress = !no_progress;

  // Cheap checks first: a missing file or directory must not cost a model load.
  const std::string& calib_file = calib.empty() ? calib_tokens : calib;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(calib_file, ec))
    fail("reap: calibration file '{}' does not exist or is not a file", calib_file);
  tools::check_output_location(opt.output, "-o");
  if (!opt.scores_out.empty()) tools::check_output_location(opt.scores_out, "--scores-out");

  auto model = open_model(model_path, VocabNeed::Optional, "reap").model;
  const uint32_t n_keep = tools::check_reap_request(model->gguf(), opt);
  // Calibration reads experts through the model's expert source (the streaming store under
  // --ram-budget); slicing copies bytes straight from the file's mapping. Calibration is all
  // prefill, which reads the file's layout: no decode copy.
  mem.decode_copy = false;
  store::install_store(*model, mem, store::shape_of(*model, tools::reap_engine_options(opt.calib)),
                       no_progress);
  opt.calibration_name = std::filesystem::path(calib_file).filename().string();

  std::vector<std::vector<int32_t>> seqs;
  if (chat) {
    auto tok = text::Tokenizer::from_gguf(model->gguf());
    tools::ChatCalibration cc = tools::load_chat_calibration(*tok, calib, opt.calib.n_ctx);
    fmt::print(stderr, "reap: {} conversations, {} tokens ({} cut to -c {})\n", cc.sequences.size(),
               cc.n_tokens, cc.n_truncated, opt.calib.n_ctx);
    seqs = std::move(cc.sequences);
  } else {
    CorpusTokens corpus = load_corpus_tokens(*model, calib, calib_tokens, "reap");
    seqs = tools::chunk_calibration(corpus.tokens, opt.calib.n_ctx, corpus.bos);
  }
  std::unique_ptr<Progress> tp;
  opt.calib.progress = [&tp, &opt](int64_t done, int64_t total) {
    if (!tp)
      tp = std::make_unique<Progress>(static_cast<uint64_t>(total), "reap calibrate", opt.progress,
                                      ProgressUnit::tokens);
    tp->set(static_cast<uint64_t>(done));
    if (done >= total) tp->finish();
  };

  const auto t0 = std::chrono::steady_clock::now();
  const tools::ReapResult r = tools::run_reap(model, seqs, opt);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const model::HParams& hp = model->hparams();
  fmt::print(
      "reap: {} — kept {} of {} experts in each of {} MoE layers (method {}, {} calibration tokens in {} "
      "sequences)\n",
      model_path, n_keep, hp.n_expert, r.plan.layers.size(), tools::reap_method_name(opt.method),
      r.calib.n_tokens, r.calib.n_sequences);
  int64_t never = 0;
  for (const auto& l : r.calib.layers)
    for (int64_t c : l.count) never += c == 0;
  if (never > 0)
    fmt::print(
        "reap: warning: {} (layer, expert) pairs were never routed; a larger calibration set "
        "would rank them better\n",
        never);
  fmt::print("reap: {:.1f} MB of tensors → {:.1f} MB in {} file{} ({} tensors sliced), {:.1f} s\n",
             double(r.written.bytes_in) / 1e6, double(r.written.bytes_out) / 1e6, r.written.files.size(),
             r.written.files.size() == 1 ? "" : "s", r.written.n_sliced, secs);
  for (const std::string& f : r.written.files) fmt::print("  {}\n", f);
  if (!opt.scores_out.empty()) fmt::print("  {} (scores)\n", opt.scores_out);
  return 0;
}

}  // namespace k3::cli
