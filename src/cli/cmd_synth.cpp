// cli/cmd_synth: `k3 synth -o OUT.gguf --preset P [overrides]` — writes a random but valid
// Kimi-K3 GGUF (tools/synth/synth.h). Every dimension, the layer map, the expert counts and the
// per-tensor types can be overridden; see docs/synth.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "quant/types.h"
#include "tools/synth/synth.h"

namespace k3::cli {

namespace {

std::vector<uint32_t> parse_layer_list(const std::string& s) {
  std::vector<uint32_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    try {
      size_t used = 0;
      long v = std::stol(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      out.push_back(static_cast<uint32_t>(v));
    } catch (const std::exception&) { fail("--mla-layers: '{}' is not a layer index", item); }
  }
  if (out.empty()) fail("--mla-layers: no layer indices in '{}'", s);
  return out;
}

}  // namespace

int cmd_synth(int argc, char** argv) {
  CLI::App app{
      "Write a random but valid Kimi-K3 GGUF of any shape and quant mix (no real "
      "weights, nothing quantized)",
      "k3 synth"};
  std::string out, preset = "tiny", trunk_type, mla_layers;
  std::vector<std::string> rules;
  std::optional<uint32_t> n_embd, n_layer, n_head, head_dim, n_expert, n_expert_used, n_ff, n_ff_exp,
      n_latent, n_shared, vocab, ctx, q_lora, kv_lora, rope_dim, nope_dim, v_head_dim, attn_res_block,
      mla_every, dense_layers, shards;
  std::optional<uint64_t> seed;
  bool sparse = false, no_sparse = false, mla_last = false, no_mla_last = false, softplus = false,
       list_presets = false, quiet = false, no_progress = false;

  app.add_option("-o,--output", out, "output file (shards: OUT-0000i-of-0000N.gguf)");
  app.add_option("--preset", preset,
                 "tiny | bench-m | bench-m-896 | kimi-k3 | kimi-k3-reap55 (default tiny; --list-presets)");
  app.add_flag("--list-presets", list_presets, "print the presets and exit");
  app.add_option("--n-embd", n_embd, "hidden size (embedding_length)");
  app.add_option("--n-layer", n_layer, "number of layers (block_count)");
  app.add_option("--n-head", n_head, "attention heads (MLA and KDA)");
  app.add_option("--head-dim", head_dim, "KDA head dimension (kda.head_dim)");
  app.add_option("--n-expert", n_expert, "routed experts per MoE layer (expert_count)");
  app.add_option("--n-expert-used", n_expert_used, "experts per token (expert_used_count)");
  app.add_option("--n-ff", n_ff, "dense FFN width (feed_forward_length)");
  app.add_option("--n-ff-exp", n_ff_exp, "expert FFN width (expert_feed_forward_length)");
  app.add_option("--n-latent", n_latent, "expert latent width (expert_latent_length; 0 = n_embd)");
  app.add_option("--n-shared", n_shared, "shared experts (expert_shared_count; 0 = none)");
  app.add_option("--vocab", vocab, "vocabulary size (>= 272: byte-level vocabulary; less: no_vocab)");
  app.add_option("--ctx", ctx, "training context length (context_length)");
  app.add_option("--q-lora-rank", q_lora, "MLA q LoRA rank (0 = plain attn_q)");
  app.add_option("--kv-lora-rank", kv_lora, "MLA latent width C (kv_lora_rank)");
  app.add_option("--rope-dim", rope_dim, "MLA un-rotated pe dims R (rope.dimension_count)");
  app.add_option("--nope-dim", nope_dim, "MLA per-head nope dims N");
  app.add_option("--v-head-dim", v_head_dim, "MLA per-head value dims (value_length_mla)");
  app.add_option("--attn-res-block", attn_res_block, "AttnRes block size (0 disables AttnRes)");
  app.add_option("--mla-every", mla_every, "MLA when (layer+1) is a multiple of this (0 = none)");
  app.add_flag("--mla-last", mla_last, "make the last layer MLA too (K3 does)");
  app.add_flag("--no-mla-last", no_mla_last, "do not force the last layer to MLA");
  app.add_option("--mla-layers", mla_layers,
                 "explicit 0-indexed MLA layers, e.g. 3,7,11 (overrides --mla-every)");
  app.add_option("--dense-layers", dense_layers, "leading dense-FFN layers (leading_dense_block_count)");
  app.add_flag("--softplus-gate", softplus, "omit kda.gate_lower_bound (kimi-linear softplus gate)");
  app.add_option("--trunk-type", trunk_type, "type of every matrix no rule names (default Q8_0)");
  app.add_option("--type-rule", rules,
                 "REGEX=TYPE, repeatable; the first matching rule wins, before the preset's rules");
  app.add_option("--shards", shards, "number of shard files (default: preset's, 1 or 8)");
  app.add_option("--seed", seed, "random seed (default 1); same seed, same bytes");
  app.add_flag("--sparse", sparse, "leave every matrix as a hole (all-zero weights, no disk used)");
  app.add_flag("--no-sparse", no_sparse, "write real random data for every tensor");
  app.add_flag("-q,--quiet", quiet, "print nothing on success");
  app.add_flag("--no-progress", no_progress, "no progress bar on stderr");
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (list_presets) {
    for (const std::string& p : tools::synth_preset_names()) fmt::print("{}\n", p);
    return 0;
  }
  if (out.empty()) { return usage_error("give an output file with -o OUT.gguf (see k3 synth --help)"); }
  if (sparse && no_sparse) { return usage_error("--sparse and --no-sparse contradict each other"); }
  if (mla_last && no_mla_last) { return usage_error("--mla-last and --no-mla-last contradict each other"); }
  tools::SynthConfig cfg;
  try {
    cfg = tools::synth_preset(preset);
  } catch (const Error& e) { return usage_error("{}", e.what()); }
  auto set = [](auto& dst, const auto& src) {
    if (src) dst = *src;
  };
  set(cfg.n_embd, n_embd);
  set(cfg.n_layer, n_layer);
  set(cfg.n_head, n_head);
  set(cfg.kda_head_dim, head_dim);
  set(cfg.n_expert, n_expert);
  set(cfg.n_expert_used, n_expert_used);
  set(cfg.n_ff, n_ff);
  set(cfg.n_ff_exp, n_ff_exp);
  set(cfg.n_embd_exp_latent, n_latent);
  set(cfg.n_expert_shared, n_shared);
  set(cfg.n_vocab, vocab);
  set(cfg.n_ctx_train, ctx);
  set(cfg.q_lora_rank, q_lora);
  set(cfg.kv_lora_rank, kv_lora);
  set(cfg.n_rot, rope_dim);
  set(cfg.qk_nope, nope_dim);
  set(cfg.n_embd_head_v_mla, v_head_dim);
  set(cfg.attn_res_block_size, attn_res_block);
  set(cfg.mla_every, mla_every);
  set(cfg.n_layer_dense_lead, dense_layers);
  set(cfg.shards, shards);
  set(cfg.seed, seed);
  if (mla_last) cfg.mla_last = true;
  if (no_mla_last) cfg.mla_last = false;
  if (!mla_layers.empty()) cfg.mla_layers = parse_layer_list(mla_layers);
  if (softplus) cfg.kda_gate_lower_bound.reset();
  if (sparse) cfg.sparse = true;
  if (no_sparse) cfg.sparse = false;
  if (!trunk_type.empty()) {
    auto t = quant::type_from_name(trunk_type);
    if (!t || !quant::type_info(*t).file_type) fail("--trunk-type: unknown tensor type '{}'", trunk_type);
    cfg.trunk_type = *t;
  }
  std::vector<tools::TypeRule> user;
  try {
    for (const std::string& r : rules) user.push_back(tools::parse_type_rule(r));
  } catch (const Error& e) { return usage_error("--type-rule: {}", e.what()); }
  cfg.rules.insert(cfg.rules.begin(), user.begin(), user.end());

  // A configuration that cannot make a valid model is a usage error (exit 2), like a bad flag.
  try {
    tools::synth_plan(cfg);
  } catch (const Error& e) { return usage_error("{}", e.what()); }
  tools::SynthResult res = tools::write_synth(out, cfg, !quiet && !no_progress);
  if (!quiet) {
    double gib = static_cast<double>(res.tensor_bytes) / (1ull << 30);
    fmt::print("wrote {} tensors, {:.3f} GiB of tensor data{}, in {:.2f} s ({:.0f} MiB/s)\n", res.n_tensors,
               gib, cfg.sparse ? " (sparse: matrices are holes)" : "", res.seconds,
               res.seconds > 0 ? static_cast<double>(res.tensor_bytes) / (1 << 20) / res.seconds : 0.0);
    for (const std::string& f : res.files) fmt::print("  {}\n", f);
  }
  return 0;
}

}  // namespace k3::cli
