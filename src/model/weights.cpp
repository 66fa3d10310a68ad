// model/weights: name → view binding with shape checks (see weights.h).
#include "model/weights.h"

#include <array>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "quant/codec.h"
#include "quant/types.h"

namespace k3::model {
namespace {

using Dims = std::vector<int64_t>;

std::string dims_string(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", d[i]);
  return s + "]";
}

class Binder {
 public:
  Binder(const gguf::GgufFile& f) : f_(f) {}

  const gguf::TensorInfo* find(const std::string& name) const { return f_.tensor(name); }

  const gguf::TensorInfo& get(const std::string& name, const Dims& want) const {
    const gguf::TensorInfo* t = f_.tensor(name);
    if (!t) fail("{}: missing tensor '{}' (expected shape {})", f_.path(), name, dims_string(want));
    // Compare as 4-D shapes: llama.cpp's saver drops trailing 1-dims ([128, 1] → [128]).
    for (size_t i = 0; i < gguf::kMaxDims; ++i) {
      const int64_t w = i < want.size() ? want[i] : 1;
      if (t->dim(i) != w)
        fail("{}: tensor '{}' has shape {}, expected {}", f_.path(), name, t->shape_string(),
             dims_string(want));
    }
    const quant::TypeInfo* ti = quant::type_info(static_cast<uint32_t>(t->type));
    if (!ti || !ti->file_type)
      fail("{}: tensor '{}' has unsupported type id {}", f_.path(), name, static_cast<uint32_t>(t->type));
    if (t->dim(0) % ti->block_elems != 0)
      fail("{}: tensor '{}' ({}): row of {} is not a multiple of the {}-element block", f_.path(), name,
           ti->name, t->dim(0), ti->block_elems);
    return *t;
  }

  // A matrix [IN, OUT] or a stack [IN, OUT, X], seen as OUT·X rows of IN.
  WeightView matrix(const std::string& name, const Dims& want) const {
    const gguf::TensorInfo& t = get(name, want);
    WeightView v;
    v.type = t.type;
    v.data = t.data;
    v.cols = t.dim(0);
    v.rows = t.dim(1) * t.dim(2) * t.dim(3);
    v.row_stride = quant::row_bytes(t.type, v.cols);
    return v;
  }

  std::vector<float> vec(const std::string& name, const Dims& want) const {
    const gguf::TensorInfo& t = get(name, want);
    const int64_t n = t.n_elements(), row = t.dim(0);
    std::vector<float> out(static_cast<size_t>(n));
    const size_t rb = quant::row_bytes(t.type, row);
    for (int64_t r = 0; r < n / row; ++r)
      quant::dequantize_row(t.type, t.data + r * rb, out.data() + r * row, row);
    return out;
  }

  bool has(const std::string& name) const { return f_.tensor(name) != nullptr; }

 private:
  const gguf::GgufFile& f_;
};

std::string blk(uint32_t il, const char* what) { return fmt::format("blk.{}.{}", il, what); }

// Conv taps [K, 1, Di, 1] (or 3-D [K, 1, Di]) → Di channels of K taps, the layout as stored.
std::vector<float> conv(const Binder& b, uint32_t il, const char* what, int64_t K, int64_t Di) {
  return b.vec(blk(il, what), {K, 1, Di, 1});
}

}  // namespace

Weights bind_weights(const gguf::GgufFile& f, const HParams& hp) {
  Binder b(f);
  const int64_t E = hp.n_embd, V = hp.n_vocab, H = hp.n_head, D = hp.kda_head_dim;
  const int64_t Di = hp.kda_inner(), K = hp.ssm_conv_kernel;
  const int64_t C = hp.kv_lora_rank, R = hp.n_rot, N = hp.qk_nope(), Vh = hp.n_embd_head_v_mla,
                Q = hp.q_lora_rank;
  const int64_t X = hp.n_expert, L = hp.expert_in(), Fs = hp.n_ff_shexp();
  const bool res = hp.attn_res_block_size > 0;

  Weights w;
  w.token_embd = b.matrix("token_embd.weight", {E, V});
  w.output_norm = b.vec("output_norm.weight", {E});
  w.output = b.matrix("output.weight", {E, V});
  if (res) w.output_res_score = b.vec("output_res_score.weight", {E});

  w.layers.resize(hp.n_layer);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    LayerWeights& lw = w.layers[il];
    lw.attn_norm = b.vec(blk(il, "attn_norm.weight"), {E});
    lw.ffn_norm = b.vec(blk(il, "ffn_norm.weight"), {E});
    if (res) {
      lw.attn_res_score = b.vec(blk(il, "attn_res_score.weight"), {E});
      lw.ffn_res_score = b.vec(blk(il, "ffn_res_score.weight"), {E});
    }

    if (hp.is_kda(il)) {
      KdaWeights& k = lw.kda;
      k.wq = b.matrix(blk(il, "attn_q.weight"), {E, Di});
      k.wk = b.matrix(blk(il, "attn_k.weight"), {E, Di});
      k.wv = b.matrix(blk(il, "attn_v.weight"), {E, Di});
      k.conv_q = conv(b, il, "ssm_conv1d_q.weight", K, Di);
      k.conv_k = conv(b, il, "ssm_conv1d_k.weight", K, Di);
      k.conv_v = conv(b, il, "ssm_conv1d_v.weight", K, Di);
      k.f_a = b.matrix(blk(il, "ssm_f_a.weight"), {E, D});
      k.f_b = b.matrix(blk(il, "ssm_f_b.weight"), {D, Di});
      k.dt_bias = b.vec(blk(il, "ssm_dt.bias"), {Di});
      k.ssm_a = b.vec(blk(il, "ssm_a"), {H});
      k.beta = b.matrix(blk(il, "ssm_beta.weight"), {E, H});
      k.g = b.matrix(blk(il, "ssm_g.weight"), {E, Di});
      k.norm = b.vec(blk(il, "ssm_norm.weight"), {D});
      k.out = b.matrix(blk(il, "attn_output.weight"), {Di, E});
    } else {
      MlaWeights& m = lw.mla;
      if (!b.has(blk(il, "attn_k_b.weight")) && b.has(blk(il, "attn_kv_b.weight")))
        fail("{}: layer {} has only the un-absorbed attn_kv_b; K3 needs attn_k_b + attn_v_b", f.path(), il);
      m.q_lora = b.has(blk(il, "attn_q_a_norm.weight"));
      if (m.q_lora) {
        if (Q == 0) fail("{}: layer {} has q-LoRA tensors but attention.q_lora_rank is 0", f.path(), il);
        m.q_a = b.matrix(blk(il, "attn_q_a.weight"), {E, Q});
        m.q_a_norm = b.vec(blk(il, "attn_q_a_norm.weight"), {Q});
        m.q_b = b.matrix(blk(il, "attn_q_b.weight"), {Q, H * (N + R)});
      } else {
        m.q = b.matrix(blk(il, "attn_q.weight"), {E, H * (N + R)});
      }
      m.kv_a = b.matrix(blk(il, "attn_kv_a_mqa.weight"), {E, C + R});
      m.kv_a_norm = b.vec(blk(il, "attn_kv_a_norm.weight"), {C});
      m.k_b = b.matrix(blk(il, "attn_k_b.weight"), {N, C, H});
      m.v_b = b.matrix(blk(il, "attn_v_b.weight"), {C, Vh, H});
      m.has_gate = b.has(blk(il, "attn_gate.weight"));
      if (m.has_gate) m.gate = b.matrix(blk(il, "attn_gate.weight"), {E, H * Vh});
      m.out = b.matrix(blk(il, "attn_output.weight"), {H * Vh, E});
    }

    if (hp.is_dense(il)) {
      const int64_t F = hp.n_ff;
      lw.dense.gate = b.matrix(blk(il, "ffn_gate.weight"), {E, F});
      lw.dense.up = b.matrix(blk(il, "ffn_up.weight"), {E, F});
      lw.dense.down = b.matrix(blk(il, "ffn_down.weight"), {F, E});
    } else {
      MoeWeights& m = lw.moe;
      m.router = b.matrix(blk(il, "ffn_gate_inp.weight"), {E, X});
      if (b.has(blk(il, "exp_probs_b.bias"))) m.router_bias = b.vec(blk(il, "exp_probs_b.bias"), {X});
      else m.router_bias.assign(static_cast<size_t>(X), 0.0f);
      m.latent = hp.n_embd_exp_latent > 0;
      if (m.latent) {
        m.routed_down = b.matrix(blk(il, "ffn_routed_down.weight"), {E, L});
        m.routed_up = b.matrix(blk(il, "ffn_routed_up.weight"), {L, E});
      }
      if (b.has(blk(il, "ffn_routed_norm.weight")))
        m.routed_norm = b.vec(blk(il, "ffn_routed_norm.weight"), {L});
      m.has_shared = b.has(blk(il, "ffn_gate_shexp.weight"));
      if (m.has_shared) {
        if (Fs == 0) fail("{}: layer {} has shared experts but their width is 0", f.path(), il);
        m.shared.gate = b.matrix(blk(il, "ffn_gate_shexp.weight"), {E, Fs});
        m.shared.up = b.matrix(blk(il, "ffn_up_shexp.weight"), {E, Fs});
        m.shared.down = b.matrix(blk(il, "ffn_down_shexp.weight"), {Fs, E});
      }
    }
  }
  return w;
}

namespace {

// One walk for both constnesses (W is Weights or const Weights).
template <class W, class Fn>
void walk_streamed(W& w, const Fn& fn) {
  auto visit = [&](auto& v) {
    if (v.data) fn(v);
  };
  auto ffn = [&](auto& f) {
    visit(f.gate);
    visit(f.up);
    visit(f.down);
  };
  visit(w.output);
  for (auto& l : w.layers) {
    for (auto* v :
         {&l.kda.wq, &l.kda.wk, &l.kda.wv, &l.kda.f_a, &l.kda.f_b, &l.kda.beta, &l.kda.g, &l.kda.out})
      visit(*v);
    for (auto* v :
         {&l.mla.q_a, &l.mla.q_b, &l.mla.q, &l.mla.kv_a, &l.mla.k_b, &l.mla.v_b, &l.mla.gate, &l.mla.out})
      visit(*v);
    ffn(l.dense);
    visit(l.moe.router);
    visit(l.moe.routed_down);
    visit(l.moe.routed_up);
    ffn(l.moe.shared);
  }
}

}  // namespace

void for_each_streamed_matrix(Weights& w, const std::function<void(WeightView&)>& fn) {
  walk_streamed(w, fn);
}

void for_each_streamed_matrix(const Weights& w, const std::function<void(const WeightView&)>& fn) {
  walk_streamed(w, fn);
}

}  // namespace k3::model
