// tools/synth: K3 tensor plan, metadata and writing (see synth.h). Tensor names and shapes, and
// the keys with their GGUF types (u32 keys as UINT32, f32 as FLOAT32, bool as BOOL,
// head_count_kv as an INT32 array), come from model/schema.h (docs/MODEL.md's lists).
#include "tools/synth/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <regex>

#include "core/error.h"
#include "core/progress.h"
#include "core/log.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "model/hparams_of.h"
#include "model/schema.h"
#include "tools/synth/synth_blocks.h"
#include "tools/synth/synth_vocab.h"

namespace k3::tools {

using quant::Type;

TypeRule parse_type_rule(std::string_view text) {
  size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    fail("type rule '{}': expected REGEX=TYPE (for example 'ffn_.*_exps=iq1_m')", text);
  TypeRule r;
  r.pattern = std::string(text.substr(0, eq));
  auto t = quant::type_from_name(text.substr(eq + 1));
  if (!t || !quant::type_info(*t).file_type)
    fail("type rule '{}': unknown or non-file tensor type '{}'", text, text.substr(eq + 1));
  r.type = *t;
  try {
    std::regex check(r.pattern);
  } catch (const std::regex_error& e) { fail("type rule '{}': bad regular expression: {}", text, e.what()); }
  return r;
}

std::vector<std::string> synth_preset_names() {
  return {"tiny", "bench-m", "bench-m-896", "kimi-k3", "kimi-k3-reap55"};
}

namespace {

// The quant recipe of the Kimi-K3 REAP55 release (the seed model card): gate/up experts IQ1_M,
// down experts IQ2_XXS, the rest Q8_0, small tensors F32.
std::vector<TypeRule> k3_recipe() {
  return {{"ffn_(gate|up)_exps", Type::IQ1_M}, {"ffn_down_exps", Type::IQ2_XXS}};
}

SynthConfig full_k3() {
  SynthConfig c;
  c.n_vocab = 163840;
  c.n_ctx_train = 1048576;
  c.n_embd = 7168;
  c.n_layer = 93;
  c.n_head = 96;
  c.kda_head_dim = 128;
  c.q_lora_rank = 1536;
  c.kv_lora_rank = 512;
  c.n_rot = 64;
  c.qk_nope = 128;
  c.n_embd_head_v_mla = 128;
  c.n_ff = 33792;
  c.n_expert = 896;
  c.n_expert_used = 16;
  c.n_ff_exp = 3072;
  c.n_expert_shared = 2;
  c.n_embd_exp_latent = 3584;
  c.attn_res_block_size = 12;
  c.mla_every = 4;
  c.mla_last = true;
  c.rules = k3_recipe();
  c.shards = 8;
  c.sparse = true;
  return c;
}

}  // namespace

SynthConfig synth_preset(std::string_view name) {
  if (name == "tiny") {
    SynthConfig c;  // the defaults are the tiny model
    c.name = "tiny";
    c.rules = k3_recipe();
    return c;
  }
  if (name == "bench-m") {
    // K3's proportions scaled to about 4 GB: MLA every 4th layer, 16 heads of 128, 256
    // experts top-8 in a 1024-wide latent, AttnRes blocks of 12 (the released model's block size).
    SynthConfig c;
    c.name = "bench-m";
    c.n_vocab = 32000;
    c.n_ctx_train = 131072;
    c.n_embd = 2048;
    c.n_layer = 24;
    c.n_head = 16;
    c.kda_head_dim = 128;
    c.q_lora_rank = 512;
    c.kv_lora_rank = 512;
    c.n_rot = 64;
    c.qk_nope = 128;
    c.n_embd_head_v_mla = 128;
    c.n_ff = 8192;
    c.n_expert = 256;
    c.n_expert_used = 8;
    c.n_ff_exp = 768;
    c.n_expert_shared = 2;
    c.n_embd_exp_latent = 1024;
    c.attn_res_block_size = 12;
    c.mla_every = 4;
    c.mla_last = false;
    c.rules = k3_recipe();
    return c;
  }
  if (name == "bench-m-896") {
    // The larger-than-RAM test model of the expert store (docs/expert-store.md): bench-m's
    // trunk with K3's 896 experts, expert FFN 1024 and 26 layers, about 17 GB (16 GiB), so
    // it is over 3x a 5 GiB memory limit. The routed experts are ~94% of the file.
    SynthConfig c = synth_preset("bench-m");
    c.name = "bench-m-896";
    c.n_expert = 896;
    c.n_ff_exp = 1024;
    c.n_layer = 26;
    return c;
  }
  if (name == "kimi-k3") {
    SynthConfig c = full_k3();
    c.name = "kimi-k3";
    return c;
  }
  if (name == "kimi-k3-reap55") {
    SynthConfig c = full_k3();
    c.name = "kimi-k3-reap55";
    c.n_expert = 400;  // REAP: 896 → 400 experts in every MoE layer
    return c;
  }
  fail("unknown synth preset '{}' (presets: tiny, bench-m, bench-m-896, kimi-k3, kimi-k3-reap55)", name);
}

std::vector<bool> synth_mla_map(const SynthConfig& c) {
  std::vector<bool> mla(c.n_layer, false);
  if (!c.mla_layers.empty()) {
    for (uint32_t il : c.mla_layers) {
      if (il >= c.n_layer) fail("synth: MLA layer {} is out of range (n_layer = {})", il, c.n_layer);
      mla[il] = true;
    }
    return mla;
  }
  for (uint32_t il = 0; il < c.n_layer; ++il)
    if (c.mla_every && (il + 1) % c.mla_every == 0) mla[il] = true;
  if (c.mla_last && c.n_layer) mla[c.n_layer - 1] = true;
  return mla;
}

namespace {

void validate(const SynthConfig& c) {
  auto need = [](bool ok, const char* what) {
    if (!ok) fail("synth: invalid configuration: {}", what);
  };
  need(c.n_embd > 0, "n_embd must be > 0");
  need(c.n_layer > 0 && c.n_layer <= 512, "n_layer must be in 1..512");
  need(c.n_vocab > 0, "vocab must be > 0");
  need(c.n_head > 0, "n_head must be > 0");
  need(c.kda_head_dim > 0, "kda head_dim must be > 0");
  need(c.ssm_conv_kernel >= 1, "conv kernel must be >= 1");
  need(c.kv_lora_rank > 0, "kv_lora_rank must be > 0");
  need(c.qk_nope + c.n_rot > 0, "qk_nope + n_rot must be > 0");
  need(c.n_embd_head_v_mla > 0, "v_head_dim must be > 0");
  need(c.n_layer_dense_lead <= c.n_layer, "leading dense layers must be <= n_layer");
  need(c.n_layer_dense_lead == 0 || c.n_ff > 0, "n_ff must be > 0 when there is a dense layer");
  bool has_moe = c.n_layer_dense_lead < c.n_layer;
  if (has_moe) {
    need(c.n_expert > 0 && c.n_expert <= 1024, "n_expert must be in 1..1024");
    need(c.n_expert_used > 0 && c.n_expert_used <= c.n_expert, "n_expert_used must be in 1..n_expert");
    need(c.n_ff_exp > 0, "expert FFN width must be > 0");
  }
  need(c.shards >= 1, "shards must be >= 1");
  need(std::isfinite(c.rms_eps) && c.rms_eps > 0, "rms eps must be > 0");
}

bool converter_f32(const std::string& name, size_t n_dims) {
  auto ends = [&](std::string_view s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return n_dims == 1 || ends("_norm.weight") || name.find("ffn_gate_inp") != std::string::npos ||
         name.find("ssm_conv1d") != std::string::npos || !ends(".weight");
}

struct Planner {
  const SynthConfig& c;
  std::vector<std::regex> res;
  std::vector<SynthTensor> out;
  int fallbacks = 0;

  explicit Planner(const SynthConfig& cfg) : c(cfg) {
    for (const TypeRule& r : c.rules) res.emplace_back(r.pattern);
  }

  Type choose(const std::string& name, const std::vector<int64_t>& ne) {
    Type t = converter_f32(name, ne.size()) ? Type::F32 : c.trunk_type;
    for (size_t i = 0; i < res.size(); ++i)
      if (std::regex_search(name, res[i])) {
        t = c.rules[i].type;
        break;
      }
    int64_t be = quant::type_info(t).block_elems;
    if (ne[0] % be != 0) {
      Type fb = ne[0] % 32 == 0 ? Type::Q8_0 : Type::F16;
      if (quant::type_info(t).block_elems == 1) fb = Type::F32;
      log::debug("synth: {} has rows of {} (not a multiple of {}'s block of {}): using {}", name, ne[0],
                 quant::type_name(t), be, quant::type_name(fb));
      ++fallbacks;
      t = fb;
    }
    return t;
  }

  void add(std::string name, std::vector<int64_t> ne, SynthInit init, float scale = 0.0f) {
    SynthTensor t;
    t.type = choose(name, ne);
    if (scale == 0.0f) scale = 1.0f / std::sqrt(static_cast<float>(ne[0]));
    t.name = std::move(name);
    t.ne = std::move(ne);
    t.init = init;
    t.scale = scale;
    int64_t n = 1;
    for (int64_t e : t.ne) n *= e;
    t.nbytes = quant::row_bytes(t.type, n);
    out.push_back(std::move(t));
  }
};

}  // namespace

model::HParams synth_hparams(const SynthConfig& c) { return model::hparams_of(c, synth_mla_map(c)); }

std::vector<SynthTensor> synth_plan(const SynthConfig& c) {
  validate(c);
  const model::HParams hp = synth_hparams(c);
  // Residual-branch outputs are scaled down by 1/sqrt(2·n_layer) (GPT-2 style) so the random
  // network stays well conditioned, as in the golden small-* models.
  const float res = 1.0f / std::sqrt(2.0f * static_cast<float>(c.n_layer));
  using I = SynthInit;
  using T = model::schema::Tensor;

  // Names and shapes are the schema's; the order, initialisation and which optional tensors
  // exist are synth's.
  Planner p(c);
  uint32_t il = 0;
  auto add = [&](T t, I init, float scale = 0.0f) {
    p.add(model::schema::tensor_name(t, il), model::schema::tensor_shape(t, hp), init, scale);
  };
  auto add_residual = [&](T t) {
    const std::vector<int64_t> ne = model::schema::tensor_shape(t, hp);
    const float fan = 1.0f / std::sqrt(static_cast<float>(ne[0]));
    p.add(model::schema::tensor_name(t, il), ne, I::Matrix, fan * res);
  };
  add(T::TokenEmbd, I::Embedding, 1.0f);
  for (il = 0; il < c.n_layer; ++il) {
    add(T::AttnNorm, I::Norm);
    if (c.attn_res_block_size) add(T::AttnResScore, I::Small, 0.03f);
    if (!hp.is_kda(il)) {
      if (c.q_lora_rank) {
        add(T::MlaQA, I::Matrix);
        add(T::MlaQANorm, I::Norm);
        add(T::MlaQB, I::Matrix);
      } else {
        add(T::MlaQ, I::Matrix);
      }
      add(T::MlaKvAMqa, I::Matrix);
      add(T::MlaKvANorm, I::Norm);
      add(T::MlaKB, I::Matrix);
      add(T::MlaVB, I::Matrix);
      if (c.attn_gate) add(T::MlaGate, I::Matrix);
      add_residual(T::MlaOutput);
    } else {
      for (T t : {T::KdaQ, T::KdaK, T::KdaV}) add(t, I::Matrix);
      for (T t : {T::KdaConvQ, T::KdaConvK, T::KdaConvV}) add(t, I::Small, 0.5f);
      add(T::KdaFA, I::Matrix);
      add(T::KdaFB, I::Matrix);
      add(T::KdaDtBias, I::Small, 0.5f);
      add(T::KdaA, I::SsmA);
      add(T::KdaBeta, I::Matrix);
      add(T::KdaG, I::Matrix);
      add(T::KdaNorm, I::Norm);
      add_residual(T::KdaOutput);
    }
    add(T::FfnNorm, I::Norm);
    if (c.attn_res_block_size) add(T::FfnResScore, I::Small, 0.03f);
    if (hp.is_dense(il)) {
      add(T::FfnGate, I::Matrix);
      add(T::FfnUp, I::Matrix);
      add_residual(T::FfnDown);
    } else {
      add(T::Router, I::Matrix);
      add(T::RouterBias, I::Small, 0.1f);
      add(T::ExpGate, I::Matrix);
      add(T::ExpUp, I::Matrix);
      add(T::ExpDown, I::Matrix);
      if (c.n_embd_exp_latent) {
        add(T::RoutedDown, I::Matrix);
        add_residual(T::RoutedUp);
      }
      if (c.routed_norm) add(T::RoutedNorm, I::Norm);
      if (hp.n_ff_shexp()) {
        add(T::ShexpGate, I::Matrix);
        add(T::ShexpUp, I::Matrix);
        add_residual(T::ShexpDown);
      }
    }
  }
  add(T::OutputNorm, I::Norm);
  if (c.attn_res_block_size) add(T::OutputResScore, I::Small, 0.03f);
  add(T::Output, I::Matrix);
  if (p.fallbacks)
    log::info(
        "synth: {} tensor(s) could not take their rule's type (row width not a multiple of "
        "its block) and use Q8_0/F16/F32 instead",
        p.fallbacks);
  return std::move(p.out);
}

std::vector<std::pair<std::string, gguf::Value>> synth_metadata(const SynthConfig& c) {
  validate(c);
  using gguf::Value;
  std::vector<std::pair<std::string, Value>> kv;
  kv.emplace_back("general.architecture", Value::string(std::string(model::schema::kArch)));
  kv.emplace_back("general.name", Value::string("kimi-k3-synth-" + c.name));
  kv.emplace_back("general.description",
                  Value::string(fmt::format("random weights written by k3 synth (seed {})", c.seed)));
  for (auto& key : model::schema::hparams_kvs(synth_hparams(c))) kv.push_back(std::move(key));
  append_synth_vocab(c.n_vocab, kv);
  kv.emplace_back("general.quantization_version", Value::u32(2));
  // llama.cpp's ftype numbering for the trunk type, where one exists.
  int ftype = -1;
  switch (c.trunk_type) {
    case Type::F32: ftype = 0; break;
    case Type::F16: ftype = 1; break;
    case Type::Q4_0: ftype = 2; break;
    case Type::Q8_0: ftype = 7; break;
    case Type::BF16: ftype = 32; break;
    default: break;
  }
  if (ftype >= 0) kv.emplace_back("general.file_type", Value::u32(static_cast<uint32_t>(ftype)));
  return kv;
}

namespace {

// Values of a tensor, as bytes of its type. Matrices, embeddings and small vectors are
// zero-mean random (synth_fill_random); norms and ssm_a need offsets, which only float
// types can carry exactly (a quantized norm is left zero-mean).
void fill_tensor(const SynthTensor& t, const SynthConfig& cfg, uint8_t* dst) {
  int64_t n = 1;
  for (int64_t e : t.ne) n *= e;
  const uint64_t s = cfg.seed ^ stable_hash(t.name.data(), t.name.size());
  if (t.name == "output.weight" && cfg.n_vocab >= 272) {
    // Readable output from a random model: rows of tokens that are not visible text get zero
    // weights (logit 0) and the others three times the usual spread, so sampling almost
    // never picks a control byte.
    const size_t rb = quant::row_bytes(t.type, t.ne[0]);
    for (int64_t r = 0; r < t.ne[1]; ++r) {
      uint8_t* row = dst + static_cast<size_t>(r) * rb;
      if (synth_vocab_printable(cfg.n_vocab, static_cast<uint32_t>(r)))
        synth_fill_random(t.type, row, t.ne[0], 3.0 * t.scale, s ^ (0x9E3779B97F4A7C15ull * (r + 1)));
      else std::memset(row, 0, rb);
    }
    return;
  }
  switch (t.init) {
    case SynthInit::Matrix:
    case SynthInit::Small: synth_fill_random(t.type, dst, n, t.scale, s); return;
    case SynthInit::Embedding: synth_fill_random(t.type, dst, n, 1.0, s); return;
    case SynthInit::Norm:
    case SynthInit::SsmA: {
      if (t.type != Type::F32) {
        synth_fill_random(t.type, dst, n, 0.1, s);
        return;
      }
      SplitMix64 rng(s);
      for (int64_t i = 0; i < n; ++i) {
        float v = t.init == SynthInit::Norm ? static_cast<float>(1.0 + 0.1 * rng.normal())
                                            : static_cast<float>(-(1.0 + 15.0 * rng.uniform()));
        std::memcpy(dst + 4 * i, &v, 4);
      }
      return;
    }
  }
}

// The smallest byte cap for which the writer's greedy split gives at most `n` shards.
uint64_t shard_cap(const std::vector<SynthTensor>& ts, uint32_t n) {
  auto padded = [](uint64_t b) { return (b + 31) / 32 * 32; };
  auto count = [&](uint64_t cap) {
    uint32_t shards = 1;
    uint64_t run = 0;
    bool empty = true;
    for (const auto& t : ts) {
      uint64_t p = padded(t.nbytes);
      if (!empty && run + p > cap) ++shards, run = 0;
      run += p;
      empty = false;
    }
    return shards;
  };
  uint64_t lo = 0, hi = 0;
  for (const auto& t : ts) lo = std::max(lo, padded(t.nbytes)), hi += padded(t.nbytes);
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (count(mid) <= n) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

}  // namespace

SynthResult write_synth(const std::string& path, const SynthConfig& c, bool progress_on) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<SynthTensor> plan = synth_plan(c);
  auto kvs = synth_metadata(c);
  kvs.emplace_back("k3.synth.preset", gguf::Value::string(c.name));
  kvs.emplace_back("k3.synth.seed", gguf::Value::u64(c.seed));

  std::vector<gguf::TensorSpec> specs;
  specs.reserve(plan.size());
  SynthResult r;
  uint64_t filled = 0;  // bytes the writer fills (the rest are holes)
  for (const SynthTensor& t : plan) {
    gguf::TensorSpec s;
    s.name = t.name;
    s.ne = t.ne;
    s.type = t.type;
    // Sparse files keep data only for vectors (norms, scores, biases: a few MB even at full
    // size); every matrix is a hole, which decodes as zero weights and costs no disk.
    if (!c.sparse || t.ne.size() == 1) {
      const SynthTensor* tp = &t;
      s.fill = [tp, &c](uint8_t* dst, uint64_t) { fill_tensor(*tp, c, dst); };
      filled += t.nbytes;
    }
    r.tensor_bytes += t.nbytes;
    specs.push_back(std::move(s));
  }
  gguf::WriteOptions opt;
  opt.sparse_holes = c.sparse;
  if (c.shards > 1) opt.split.max_bytes = shard_cap(plan, c.shards);
  Progress progress(filled, "synth", progress_on);
  opt.on_written = [&progress](const gguf::TensorSpec& t, uint64_t n) { progress.advance(n, t.name); };
  r.files = gguf::write_gguf(path, kvs, specs, opt);
  progress.finish();
  r.n_tensors = plan.size();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace k3::tools
