// tools/convert: plans every kimi-k3 GGUF tensor from the HF checkpoint (names, shapes, types,
// transformations of docs/convert.md), validates all inputs up front, then streams the tensors
// through the GGUF writer (see convert.h).
#include "tools/convert/convert.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "model/schema.h"
#include "quant/codec.h"
#include "tools/convert/hf_config.h"
#include "tools/convert/hf_tokenizer.h"
#include "tools/convert/plan.h"
#include "tools/convert/safetensors.h"

namespace k3::tools {

namespace fs = std::filesystem;
using model::schema::Tensor;
using quant::Type;

namespace {

class Planner {
 public:
  Planner(const SafetensorsSet& st, const K3HfConfig& c, Type outtype)
      : st_(st), c_(c), hp_(k3_hparams(c)), outtype_(outtype) {}

  std::vector<Plan> plans;
  std::set<std::string> used;
  size_t n_mxfp4 = 0;

  std::string hf(const std::string& n) const { return c_.tensor_prefix + n; }
  std::string layer(uint32_t il, const std::string& n) const {
    return hf(fmt::format("model.layers.{}.{}", il, n));
  }

  const StTensor* find(const std::string& full) const { return st_.find(full); }

  const StTensor& need_any(const std::string& full, const std::vector<std::vector<int64_t>>& shapes) {
    const StTensor* t = st_.find(full);
    if (!t) fail("missing tensor '{}' in the checkpoint", full);
    if (t->dtype != StDtype::F32 && t->dtype != StDtype::F16 && t->dtype != StDtype::BF16)
      fail("tensor '{}' ({}): dtype {} is not supported here (expected BF16, F16 or F32)", full, t->file,
           st_dtype_name(t->dtype));
    bool ok = shapes.empty();
    for (const auto& s : shapes) ok = ok || s == t->shape;
    if (!ok)
      fail("tensor '{}' ({}): shape {} does not match the config (expected [{}])", full, t->file,
           t->shape_string(), fmt::join(shapes.front(), ", "));
    used.insert(full);
    return *t;
  }
  const StTensor& need(const std::string& full, std::vector<int64_t> shape) {
    return need_any(full, std::vector<std::vector<int64_t>>{std::move(shape)});
  }

  // The converter's dtype rule (docs/convert.md, --outtype): 1-D, norms, the router, conv weights
  // and non-.weight tensors stay F32; Q8_0 needs rows that are whole blocks, else F16 as gguf-py
  // falls back.
  Type pick(const std::string& name, const std::vector<int64_t>& ne) const {
    auto ends = [&](std::string_view s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ne.size() <= 1 || ends("_norm.weight") || name.find("ffn_gate_inp") != std::string::npos ||
        name.find("ssm_conv1d") != std::string::npos || !ends(".weight"))
      return Type::F32;
    if (outtype_ == Type::Q8_0 && ne[0] % 32 != 0) {
      log::warn("{}: row width {} is not a multiple of 32, written as F16 instead of Q8_0", name, ne[0]);
      return Type::F16;
    }
    return outtype_;
  }

  void add(Plan p) { plans.push_back(std::move(p)); }

  // A tensor copied as is (rows of the HF matrix are rows of the GGUF tensor).
  void plain(const std::string& gname, const std::string& full, std::vector<int64_t> hf_shape,
             std::vector<int64_t> ne = {}) {
    const StTensor& t = need(full, hf_shape);
    plain_from(gname, t, ne.empty() ? std::vector<int64_t>(hf_shape.rbegin(), hf_shape.rend()) : ne);
  }
  // A schema tensor copied as is: its ne shape is the schema's, the HF (PyTorch) shape the
  // reverse of it.
  void plain(Tensor kind, uint32_t il, const std::string& full) {
    const std::vector<int64_t> ne = model::schema::tensor_shape(kind, hp_);
    plain(model::schema::tensor_name(kind, il), full, std::vector<int64_t>(ne.rbegin(), ne.rend()));
  }
  void plain_from(const std::string& gname, const StTensor& t, std::vector<int64_t> ne) {
    Plan p;
    p.name = gname;
    p.ne = std::move(ne);
    p.type = pick(gname, p.ne);
    p.ne0 = p.ne[0];
    p.nrows = t.numel() / p.ne0;
    p.bytes_in = t.nbytes;
    if (same_encoding(t.dtype, p.type)) {
      p.raw = t.data;
    } else {
      const StTensor* tp = &t;
      const int64_t ne0 = p.ne0;
      p.row_f32 = [tp, ne0](int64_t r, float* dst) { read_f32(*tp, r * ne0, ne0, dst); };
    }
    add(std::move(p));
  }

  // norm ⊙ proj (the fused AttnRes scoring vector, F32 [E]).
  void fused_score(const std::string& gname, const std::string& norm, const std::string& proj) {
    const int64_t E = c_.n_embd;
    const StTensor& n = need(norm, {E});
    const StTensor& w = need_any(proj, std::vector<std::vector<int64_t>>{{1, E}, {E}});
    Plan p;
    p.name = gname;
    p.ne = {E};
    p.type = Type::F32;
    p.ne0 = E;
    p.nrows = 1;
    p.bytes_in = n.nbytes + w.nbytes;
    const StTensor *pn = &n, *pw = &w;
    p.row_f32 = [pn, pw, E](int64_t, float* dst) {
      for (int64_t i = 0; i < E; ++i) dst[i] = elem_f32(*pn, i) * elem_f32(*pw, i);
    };
    add(std::move(p));
  }

  void build();

 private:
  void kda_layer(uint32_t il);
  void mla_layer(uint32_t il);
  void moe(uint32_t il);
  void experts(uint32_t il, const char* w, Tensor kind);

  const SafetensorsSet& st_;
  const K3HfConfig& c_;
  const model::HParams hp_;
  Type outtype_;
};

void Planner::build() {
  using model::schema::tensor_name;
  plain(Tensor::TokenEmbd, 0, hf("model.embed_tokens.weight"));
  plain(Tensor::OutputNorm, 0, hf("model.norm.weight"));
  plain(Tensor::Output, 0, hf("lm_head.weight"));
  if (c_.attn_res_block_size)
    fused_score(tensor_name(Tensor::OutputResScore), hf("model.output_attn_res_norm.weight"),
                hf("model.output_attn_res_proj.weight"));
  for (uint32_t il = 0; il < c_.n_layer; ++il) {
    plain(Tensor::AttnNorm, il, layer(il, "input_layernorm.weight"));
    plain(Tensor::FfnNorm, il, layer(il, "post_attention_layernorm.weight"));
    if (c_.attn_res_block_size) {
      fused_score(tensor_name(Tensor::AttnResScore, il), layer(il, "self_attention_res_norm.weight"),
                  layer(il, "self_attention_res_proj.weight"));
      fused_score(tensor_name(Tensor::FfnResScore, il), layer(il, "mlp_res_norm.weight"),
                  layer(il, "mlp_res_proj.weight"));
    }
    if (c_.is_mla[il]) mla_layer(il);
    else kda_layer(il);
    if (il < c_.n_layer_dense_lead) {
      plain(Tensor::FfnGate, il, layer(il, "mlp.gate_proj.weight"));
      plain(Tensor::FfnUp, il, layer(il, "mlp.up_proj.weight"));
      plain(Tensor::FfnDown, il, layer(il, "mlp.down_proj.weight"));
    } else {
      moe(il);
    }
  }
}

void Planner::kda_layer(uint32_t il) {
  using model::schema::tensor_name;
  const int64_t H = c_.n_head, D = c_.kda_head_dim, Di = H * D, K = c_.ssm_conv_kernel;
  auto sa = [&](const char* n) { return layer(il, std::string("self_attn.") + n); };
  const std::pair<const char*, Tensor> convs[] = {
      {"q", Tensor::KdaConvQ}, {"k", Tensor::KdaConvK}, {"v", Tensor::KdaConvV}};
  for (const auto& [x, kind] : convs) {
    const StTensor& t = need_any(sa((std::string(x) + "_conv1d.weight").c_str()),
                                 std::vector<std::vector<int64_t>>{{Di, 1, K}, {Di, K}});
    // The 4-D form gguf-py writes (the schema's [K, 1, Di] with its trailing 1); taps stay fastest.
    plain_from(tensor_name(kind, il), t, {K, 1, Di, 1});
  }
  plain(Tensor::KdaQ, il, sa("q_proj.weight"));
  plain(Tensor::KdaK, il, sa("k_proj.weight"));
  plain(Tensor::KdaV, il, sa("v_proj.weight"));
  plain(Tensor::KdaFA, il, sa("f_a_proj.weight"));
  plain(Tensor::KdaFB, il, sa("f_b_proj.weight"));
  plain(Tensor::KdaBeta, il, sa("b_proj.weight"));
  {
    // A_log is stored with more entries than heads (128 for 96); the first H are the rates.
    const std::string full = sa("A_log");
    const StTensor& a = need_any(full, {});
    if (a.numel() < H) fail("tensor '{}': {} entries, fewer than the {} heads", full, a.numel(), H);
    Plan p;
    p.name = tensor_name(Tensor::KdaA, il);
    p.ne = {H};
    p.ne0 = H;
    p.nrows = 1;
    p.bytes_in = a.nbytes;
    const StTensor* pa = &a;
    p.row_f32 = [pa, H](int64_t, float* dst) {
      for (int64_t i = 0; i < H; ++i)
        dst[i] = -static_cast<float>(std::exp(static_cast<double>(elem_f32(*pa, i))));
    };
    add(std::move(p));
  }
  {
    const std::string full = sa("dt_bias");
    const StTensor& t = need_any(full, {});
    if (t.numel() != Di) fail("tensor '{}': {} entries, expected {} (heads × head_dim)", full, t.numel(), Di);
    plain_from(tensor_name(Tensor::KdaDtBias, il), t, {Di});
  }
  if (find(sa("g_proj.weight"))) plain(Tensor::KdaG, il, sa("g_proj.weight"));
  plain(Tensor::KdaNorm, il, sa("o_norm.weight"));
  plain(Tensor::KdaOutput, il, sa("o_proj.weight"));
}

void Planner::mla_layer(uint32_t il) {
  using model::schema::tensor_name;
  const int64_t Hkv = c_.n_head_kv_hf, C = c_.kv_lora_rank, N = c_.qk_nope, Vh = c_.n_embd_head_v_mla;
  auto sa = [&](const char* n) { return layer(il, std::string("self_attn.") + n); };
  if (find(sa("q_a_proj.weight"))) {
    if (!c_.q_lora_rank) fail("tensor '{}' exists but config q_lora_rank is not set", sa("q_a_proj.weight"));
    plain(Tensor::MlaQA, il, sa("q_a_proj.weight"));
    plain(Tensor::MlaQANorm, il, sa("q_a_layernorm.weight"));
    plain(Tensor::MlaQB, il, sa("q_b_proj.weight"));
  } else {
    plain(Tensor::MlaQ, il, sa("q_proj.weight"));
  }
  plain(Tensor::MlaKvAMqa, il, sa("kv_a_proj_with_mqa.weight"));
  plain(Tensor::MlaKvANorm, il, sa("kv_a_layernorm.weight"));
  {
    // kv_b [Hkv·(N+Vh), C] viewed as [Hkv, N+Vh, C]: K rows transposed per head → ne [N, C, Hkv];
    // V rows kept → ne [C, Vh, Hkv]. The head count is the HF config's num_key_value_heads,
    // not the schema's H: a checkpoint whose counts differ converts as it is and the loader
    // names the mismatch.
    const StTensor& kv = need(sa("kv_b_proj.weight"), {Hkv * (N + Vh), C});
    const StTensor* t = &kv;
    Plan k;
    k.name = tensor_name(Tensor::MlaKB, il);
    k.ne = {N, C, Hkv};
    k.type = pick(k.name, k.ne);
    k.ne0 = N;
    k.nrows = C * Hkv;
    k.bytes_in = kv.nbytes;
    k.row_f32 = [t, C, N, Vh](int64_t r, float* dst) {
      const int64_t h = r / C, c = r % C;
      for (int64_t n = 0; n < N; ++n) dst[n] = elem_f32(*t, (h * (N + Vh) + n) * C + c);
    };
    add(std::move(k));
    Plan v;
    v.name = tensor_name(Tensor::MlaVB, il);
    v.ne = {C, Vh, Hkv};
    v.type = pick(v.name, v.ne);
    v.ne0 = C;
    v.nrows = Vh * Hkv;
    v.row_f32 = [t, C, N, Vh](int64_t r, float* dst) {
      const int64_t h = r / Vh, vv = r % Vh;
      read_f32(*t, (h * (N + Vh) + N + vv) * C, C, dst);
    };
    add(std::move(v));
  }
  if (find(sa("g_proj.weight"))) plain(Tensor::MlaGate, il, sa("g_proj.weight"));
  plain(Tensor::MlaOutput, il, sa("o_proj.weight"));
}

void Planner::experts(uint32_t il, const char* w, Tensor kind) {
  // [cols, rows, X]: X matrices of rows × cols, each one HF expert's weight.
  const std::vector<int64_t> ne = model::schema::tensor_shape(kind, hp_);
  const int64_t cols = ne[0], rows = ne[1], X = ne[2];
  auto ename = [&](int64_t e, const char* suffix) {
    return layer(il, fmt::format("block_sparse_moe.experts.{}.{}.{}", e, w, suffix));
  };
  Plan p;
  p.name = model::schema::tensor_name(kind, il);
  p.ne = ne;
  p.ne0 = cols;
  p.nrows = rows * X;
  const bool packed = find(ename(0, "weight_packed")) != nullptr;
  if (packed) {
    if (cols % 32)
      fail("tensor '{}': MXFP4 rows of {} elements are not whole 32-element blocks",
           ename(0, "weight_packed"), cols);
    std::vector<std::pair<const StTensor*, const StTensor*>> src;
    for (int64_t e = 0; e < X; ++e) {
      for (const char* s : {"weight_packed", "weight_scale"}) {
        const std::string full = ename(e, s);
        const StTensor* t = find(full);
        if (!t)
          fail("missing tensor '{}' in the checkpoint (MXFP4 experts need weight_packed and weight_scale)",
               full);
        if (t->dtype != StDtype::U8)
          fail("tensor '{}': dtype {} (packed MXFP4 must be U8)", full, st_dtype_name(t->dtype));
        const std::vector<int64_t> want = {rows, std::string(s) == "weight_packed" ? cols / 2 : cols / 32};
        if (t->shape != want)
          fail("tensor '{}': shape {} does not match the config (expected [{}])", full, t->shape_string(),
               fmt::join(want, ", "));
        used.insert(full);
        p.bytes_in += t->nbytes;
      }
      if (const StTensor* ws = find(ename(e, "weight_shape"))) {
        if (ws->numel() != 2 || (ws->dtype != StDtype::I64 && ws->dtype != StDtype::I32))
          fail("tensor '{}': expected two I32/I64 entries", ws->name);
        int64_t dims[2];
        for (int i = 0; i < 2; ++i) {
          if (ws->dtype == StDtype::I64) std::memcpy(&dims[i], ws->data + 8 * i, 8);
          else {
            int32_t v;
            std::memcpy(&v, ws->data + 4 * i, 4);
            dims[i] = v;
          }
        }
        if (dims[0] != rows || dims[1] != cols)
          fail("tensor '{}': says [{}, {}], the config needs [{}, {}]", ws->name, dims[0], dims[1], rows,
               cols);
        used.insert(ws->name);
      }
      if (find(ename(e, "weight")))
        fail("tensor '{}': expert stored both packed and unpacked", ename(e, "weight"));
      src.emplace_back(find(ename(e, "weight_packed")), find(ename(e, "weight_scale")));
    }
    p.type = Type::MXFP4;
    p.row_bytes = [src = std::move(src), rows, cols](int64_t r, uint8_t* dst) {
      const auto& [pk, sc] = src[r / rows];
      const int64_t i = r % rows;
      repack_mxfp4_row(pk->data + i * (cols / 2), sc->data + i * (cols / 32), cols, dst);
    };
    ++n_mxfp4;
  } else {
    std::vector<const StTensor*> src;
    for (int64_t e = 0; e < X; ++e) {
      if (find(ename(e, "weight_packed")))
        fail("tensor '{}': experts mix packed MXFP4 and float storage", ename(e, "weight_packed"));
      const StTensor& t = need(ename(e, "weight"), {rows, cols});
      p.bytes_in += t.nbytes;
      src.push_back(&t);
    }
    p.type = pick(p.name, p.ne);
    p.row_f32 = [src = std::move(src), rows, cols](int64_t r, float* dst) {
      read_f32(*src[r / rows], (r % rows) * cols, cols, dst);
    };
  }
  add(std::move(p));
}

void Planner::moe(uint32_t il) {
  auto m = [&](const std::string& n) { return layer(il, "block_sparse_moe." + n); };
  plain(Tensor::Router, il, m("gate.weight"));
  plain(Tensor::RouterBias, il, m("gate.e_score_correction_bias"));
  experts(il, "w1", Tensor::ExpGate);
  experts(il, "w3", Tensor::ExpUp);
  experts(il, "w2", Tensor::ExpDown);
  if (c_.n_embd_exp_latent) {
    plain(Tensor::RoutedDown, il, m("routed_expert_down_proj.weight"));
    plain(Tensor::RoutedUp, il, m("routed_expert_up_proj.weight"));
    if (find(m("routed_expert_norm.weight"))) plain(Tensor::RoutedNorm, il, m("routed_expert_norm.weight"));
  }
  if (c_.n_expert_shared) {
    plain(Tensor::ShexpGate, il, m("shared_experts.gate_proj.weight"));
    plain(Tensor::ShexpUp, il, m("shared_experts.up_proj.weight"));
    plain(Tensor::ShexpDown, il, m("shared_experts.down_proj.weight"));
  }
}

}  // namespace

quant::Type parse_outtype(const std::string& s) {
  auto t = quant::type_from_name(s);
  if (!t || (*t != Type::F32 && *t != Type::F16 && *t != Type::BF16 && *t != Type::Q8_0))
    fail("--outtype '{}': expected f32, f16, bf16 or q8_0", s);
  return *t;
}

ConvertResult convert_hf(const ConvertOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.outtype != Type::F32 && opt.outtype != Type::F16 && opt.outtype != Type::BF16 &&
      opt.outtype != Type::Q8_0)
    fail("outtype {} is not supported (f32, f16, bf16, q8_0)", quant::type_name(opt.outtype));
  const fs::path dir(opt.hf_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail("{}: not a directory (give the Hugging Face checkpoint directory)", opt.hf_dir);
  if (opt.out_path.empty()) fail("no output path (-o OUT.gguf)");
  // Checked before any tensor is read: a full checkpoint takes a long time to plan.
  if (fs::is_directory(opt.out_path, ec))
    fail("{}: is a directory; give the output file name (-o OUT.gguf)", opt.out_path);
  if (const fs::path parent = fs::path(opt.out_path).parent_path();
      !parent.empty() && !fs::is_directory(parent, ec))
    fail("{}: output directory '{}' does not exist", opt.out_path, parent.string());

  const K3HfConfig cfg = read_k3_config((dir / "config.json").string());
  auto st = SafetensorsSet::open(opt.hf_dir);

  Planner pl(*st, cfg, opt.outtype);
  pl.build();
  size_t dropped = 0;
  for (const auto& [name, t] : st->tensors()) {
    if (pl.used.count(name)) continue;
    if (!cfg.tensor_prefix.empty() && !name.starts_with(cfg.tensor_prefix)) {
      ++dropped;  // vision tower / projector: not part of the text model
      continue;
    }
    fail("unexpected tensor '{}' in {} (not part of the kimi-k3 mapping)", name, t.file);
  }
  if (dropped)
    log::info("dropped {} tensors outside '{}' (vision tower, projector)", dropped, cfg.tensor_prefix);

  HfTokenizerInput ti;
  ti.dir = opt.hf_dir;
  ti.vocab_size = cfg.n_vocab;
  ti.config_eos = cfg.eos_token_id;
  ti.chat_template_file = opt.chat_template_file;
  HfTokenizerResult tok = hf_tokenizer_kvs(ti);

  using gguf::Value;
  std::vector<std::pair<std::string, Value>> kvs;
  kvs.emplace_back("general.architecture", Value::string("kimi-k3"));
  std::string name = opt.name;
  if (name.empty()) name = fs::absolute(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  kvs.emplace_back("general.name", Value::string(name));
  for (auto& kv : k3_model_kvs(cfg)) kvs.push_back(std::move(kv));
  bool quantized = pl.n_mxfp4 > 0;
  for (const Plan& p : pl.plans) quantized = quantized || quant::type_info(p.type).quantized;
  kvs.emplace_back("general.file_type", Value::u32(file_type_of(opt.outtype, pl.n_mxfp4 > 0)));
  if (quantized) kvs.emplace_back("general.quantization_version", Value::u32(2));
  for (auto& kv : tok.kvs) kvs.push_back(std::move(kv));

  WritePlansOptions wo;
  wo.split_max_bytes = opt.split_max_bytes;
  wo.threads = opt.threads;
  wo.verbose = opt.verbose;
  wo.progress = opt.progress;
  WritePlansResult wr = write_plans(opt.out_path, kvs, pl.plans, wo);
  ConvertResult res;
  res.files = std::move(wr.files);
  res.bytes_in = wr.bytes_in;
  res.bytes_out = wr.bytes_out;
  res.n_tensors = pl.plans.size();
  res.n_mxfp4 = pl.n_mxfp4;
  res.n_tokens = tok.n_tokens;
  res.n_merges = tok.n_merges;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace k3::tools
