// model/weights: name → view binding with shape checks (see weights.h).
#include "model/weights.h"

#include <array>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/schema.h"
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

using schema::Tensor;

// Binds by schema entry: the name and the expected shape both come from model/schema.h.
struct SchemaBinder {
  const Binder& b;
  const HParams& hp;
  uint32_t il = 0;

  std::string name(Tensor t) const { return schema::tensor_name(t, il); }
  bool has(Tensor t) const { return b.has(name(t)); }
  WeightView matrix(Tensor t) const { return b.matrix(name(t), schema::tensor_shape(t, hp)); }
  std::vector<float> vec(Tensor t) const { return b.vec(name(t), schema::tensor_shape(t, hp)); }
  // Conv taps [K, 1, Di, 1] (or 3-D [K, 1, Di]) → Di channels of K taps, the layout as stored.
  std::vector<float> conv(Tensor t) const {
    Dims want = schema::tensor_shape(t, hp);
    want.push_back(1);
    return b.vec(name(t), want);
  }
};

}  // namespace

Weights bind_weights(const gguf::GgufFile& f, const HParams& hp) {
  Binder b(f);
  SchemaBinder s{b, hp};
  const int64_t X = hp.n_expert, Fs = hp.n_ff_shexp(), Q = hp.q_lora_rank;
  const bool res = hp.attn_res_block_size > 0;

  Weights w;
  w.token_embd = s.matrix(Tensor::TokenEmbd);
  w.output_norm = s.vec(Tensor::OutputNorm);
  w.output = s.matrix(Tensor::Output);
  if (res) w.output_res_score = s.vec(Tensor::OutputResScore);

  w.layers.resize(hp.n_layer);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    s.il = il;
    LayerWeights& lw = w.layers[il];
    lw.attn_norm = s.vec(Tensor::AttnNorm);
    lw.ffn_norm = s.vec(Tensor::FfnNorm);
    if (res) {
      lw.attn_res_score = s.vec(Tensor::AttnResScore);
      lw.ffn_res_score = s.vec(Tensor::FfnResScore);
    }

    if (hp.is_kda(il)) {
      KdaWeights& k = lw.kda;
      k.wq = s.matrix(Tensor::KdaQ);
      k.wk = s.matrix(Tensor::KdaK);
      k.wv = s.matrix(Tensor::KdaV);
      k.conv_q = s.conv(Tensor::KdaConvQ);
      k.conv_k = s.conv(Tensor::KdaConvK);
      k.conv_v = s.conv(Tensor::KdaConvV);
      k.f_a = s.matrix(Tensor::KdaFA);
      k.f_b = s.matrix(Tensor::KdaFB);
      k.dt_bias = s.vec(Tensor::KdaDtBias);
      k.ssm_a = s.vec(Tensor::KdaA);
      k.beta = s.matrix(Tensor::KdaBeta);
      k.g = s.matrix(Tensor::KdaG);
      k.norm = s.vec(Tensor::KdaNorm);
      k.out = s.matrix(Tensor::KdaOutput);
    } else {
      MlaWeights& m = lw.mla;
      if (!s.has(Tensor::MlaKB) && s.has(Tensor::MlaKvB))
        fail("{}: layer {} has only the un-absorbed attn_kv_b; K3 needs attn_k_b + attn_v_b", f.path(), il);
      m.q_lora = s.has(Tensor::MlaQANorm);
      if (m.q_lora) {
        if (Q == 0) fail("{}: layer {} has q-LoRA tensors but attention.q_lora_rank is 0", f.path(), il);
        m.q_a = s.matrix(Tensor::MlaQA);
        m.q_a_norm = s.vec(Tensor::MlaQANorm);
        m.q_b = s.matrix(Tensor::MlaQB);
      } else {
        m.q = s.matrix(Tensor::MlaQ);
      }
      m.kv_a = s.matrix(Tensor::MlaKvAMqa);
      m.kv_a_norm = s.vec(Tensor::MlaKvANorm);
      m.k_b = s.matrix(Tensor::MlaKB);
      m.v_b = s.matrix(Tensor::MlaVB);
      m.has_gate = s.has(Tensor::MlaGate);
      if (m.has_gate) m.gate = s.matrix(Tensor::MlaGate);
      m.out = s.matrix(Tensor::MlaOutput);
    }

    if (hp.is_dense(il)) {
      lw.dense.gate = s.matrix(Tensor::FfnGate);
      lw.dense.up = s.matrix(Tensor::FfnUp);
      lw.dense.down = s.matrix(Tensor::FfnDown);
    } else {
      MoeWeights& m = lw.moe;
      m.router = s.matrix(Tensor::Router);
      if (s.has(Tensor::RouterBias)) m.router_bias = s.vec(Tensor::RouterBias);
      else m.router_bias.assign(static_cast<size_t>(X), 0.0f);
      m.latent = hp.n_embd_exp_latent > 0;
      if (m.latent) {
        m.routed_down = s.matrix(Tensor::RoutedDown);
        m.routed_up = s.matrix(Tensor::RoutedUp);
      }
      if (s.has(Tensor::RoutedNorm)) m.routed_norm = s.vec(Tensor::RoutedNorm);
      m.has_shared = s.has(Tensor::ShexpGate);
      if (m.has_shared) {
        if (Fs == 0) fail("{}: layer {} has shared experts but their width is 0", f.path(), il);
        m.shared.gate = s.matrix(Tensor::ShexpGate);
        m.shared.up = s.matrix(Tensor::ShexpUp);
        m.shared.down = s.matrix(Tensor::ShexpDown);
      }
    }
  }
  return w;
}

namespace {

// One walk of a layer's bound matrices for both constnesses (L is LayerWeights or const
// LayerWeights): fn(view, its schema entry).
template <class L, class Fn>
void walk_layer(L& l, const Fn& fn) {
  auto visit = [&](auto& v, Tensor t) {
    if (v.data) fn(v, t);
  };
  visit(l.kda.wq, Tensor::KdaQ);
  visit(l.kda.wk, Tensor::KdaK);
  visit(l.kda.wv, Tensor::KdaV);
  visit(l.kda.f_a, Tensor::KdaFA);
  visit(l.kda.f_b, Tensor::KdaFB);
  visit(l.kda.beta, Tensor::KdaBeta);
  visit(l.kda.g, Tensor::KdaG);
  visit(l.kda.out, Tensor::KdaOutput);
  visit(l.mla.q_a, Tensor::MlaQA);
  visit(l.mla.q_b, Tensor::MlaQB);
  visit(l.mla.q, Tensor::MlaQ);
  visit(l.mla.kv_a, Tensor::MlaKvAMqa);
  visit(l.mla.k_b, Tensor::MlaKB);
  visit(l.mla.v_b, Tensor::MlaVB);
  visit(l.mla.gate, Tensor::MlaGate);
  visit(l.mla.out, Tensor::MlaOutput);
  visit(l.dense.gate, Tensor::FfnGate);
  visit(l.dense.up, Tensor::FfnUp);
  visit(l.dense.down, Tensor::FfnDown);
  visit(l.moe.router, Tensor::Router);
  visit(l.moe.routed_down, Tensor::RoutedDown);
  visit(l.moe.routed_up, Tensor::RoutedUp);
  visit(l.moe.shared.gate, Tensor::ShexpGate);
  visit(l.moe.shared.up, Tensor::ShexpUp);
  visit(l.moe.shared.down, Tensor::ShexpDown);
}

// W is Weights or const Weights.
template <class W, class Fn>
void walk_streamed(W& w, const Fn& fn) {
  if (w.output.data) fn(w.output);
  for (auto& l : w.layers) walk_layer(l, [&](auto& v, Tensor) { fn(v); });
}

}  // namespace

void for_each_streamed_matrix(Weights& w, const std::function<void(WeightView&)>& fn) {
  walk_streamed(w, fn);
}

void for_each_streamed_matrix(const Weights& w, const std::function<void(const WeightView&)>& fn) {
  walk_streamed(w, fn);
}

void for_each_layer_matrix(const LayerWeights& l,
                           const std::function<void(const WeightView&, schema::Tensor)>& fn) {
  walk_layer(l, fn);
}

}  // namespace k3::model
