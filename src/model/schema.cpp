// model/schema: the kimi-k3 key and tensor tables (see schema.h).
#include "model/schema.h"

#include <fmt/format.h>

#include "core/assert.h"
#include "model/hparams.h"

namespace k3::model::schema {
namespace {

using T = KeyType;

// The writers' file order (the reference converter's); the reader looks keys up by name.
constexpr KeyInfo kKeys[] = {
    {Key::VocabSize, "vocab_size", T::U32, false, true, "n_vocab (without a token list)"},
    {Key::ContextLength, "context_length", T::U32, true, true, "n_ctx_train"},
    {Key::EmbeddingLength, "embedding_length", T::U32, true, true, "n_embd"},
    {Key::BlockCount, "block_count", T::U32, true, true, "n_layer"},
    {Key::FeedForwardLength, "feed_forward_length", T::PerLayer, false, true, "n_ff (layer 0)"},
    {Key::HeadCount, "attention.head_count", T::PerLayer, true, true, "n_head (layer 0)"},
    {Key::HeadCountKv, "attention.head_count_kv", T::PerLayer, false, true, "n_head_kv, kind (0: KDA)"},
    {Key::RmsEps, "attention.layer_norm_rms_epsilon", T::F32, true, true, "rms_eps"},
    {Key::ExpertCount, "expert_count", T::U32, false, true, "n_expert"},
    {Key::ExpertUsedCount, "expert_used_count", T::U32, false, true, "n_expert_used"},
    {Key::SsmConvKernel, "ssm.conv_kernel", T::U32, true, true, "ssm_conv_kernel"},
    {Key::KdaHeadDim, "kda.head_dim", T::U32, true, true, "kda_head_dim"},
    {Key::KdaGateLowerBound, "kda.gate_lower_bound", T::F32, false, true, "kda_gate_lower_bound"},
    {Key::QLoraRank, "attention.q_lora_rank", T::U32, false, true, "q_lora_rank"},
    {Key::KvLoraRank, "attention.kv_lora_rank", T::U32, true, true, "kv_lora_rank"},
    {Key::RopeDimensionCount, "rope.dimension_count", T::U32, false, true, "n_rot"},
    {Key::KeyLength, "attention.key_length", T::U32, false, true, "n_embd_head_k (= C + R)"},
    {Key::ValueLength, "attention.value_length", T::U32, false, true, ""},
    {Key::KeyLengthMla, "attention.key_length_mla", T::U32, true, true, "n_embd_head_k_mla (= N + R)"},
    {Key::ValueLengthMla, "attention.value_length_mla", T::U32, true, true, "n_embd_head_v_mla"},
    {Key::ExpertFeedForwardLength, "expert_feed_forward_length", T::U32, true, true, "n_ff_exp"},
    {Key::ExpertSharedCount, "expert_shared_count", T::U32, true, true, "n_expert_shared"},
    {Key::LeadingDenseBlockCount, "leading_dense_block_count", T::U32, false, true, "n_layer_dense_lead"},
    {Key::ExpertWeightsScale, "expert_weights_scale", T::F32, false, true, "expert_weights_scale"},
    {Key::ExpertWeightsNorm, "expert_weights_norm", T::Bool, false, true, "expert_weights_norm"},
    {Key::ExpertGatingFunc, "expert_gating_func", T::U32, true, true, "expert_gating_func"},
    {Key::ExpertLatentLength, "expert_latent_length", T::U32, false, true, "n_embd_exp_latent"},
    {Key::SituBeta, "activation.situ_beta", T::F32, true, true, "situ_beta"},
    {Key::SituLinearBeta, "activation.situ_linear_beta", T::F32, true, true, "situ_linear_beta"},
    {Key::AttnResBlockSize, "attn_res.block_size", T::U32, true, true, "attn_res_block_size"},
    // Informational: K3's MLA has no RoPE; k3 convert copies the config's rope_theta.
    {Key::RopeFreqBase, "rope.freq_base", T::F32, false, true, ""},
    // Read only to refuse group-limited routing (above 1); never written.
    {Key::ExpertGroupCount, "expert_group_count", T::U32, false, false, "(checked <= 1)"},
};

constexpr bool keys_in_enum_order() {
  for (size_t i = 0; i < std::size(kKeys); ++i)
    if (static_cast<size_t>(kKeys[i].key) != i) return false;
  return true;
}
static_assert(keys_in_enum_order(), "kKeys is indexed by Key");

// The letters of model/weights.h.
struct Letters {
  int64_t E, V, H, D, Di, K, Q, C, R, N, Vh, F, X, L, Fe, Fs;
  explicit Letters(const HParams& h)
      : E(h.n_embd),
        V(h.n_vocab),
        H(h.n_head),
        D(h.kda_head_dim),
        Di(h.kda_inner()),
        K(h.ssm_conv_kernel),
        Q(h.q_lora_rank),
        C(h.kv_lora_rank),
        R(h.n_rot),
        N(h.qk_nope()),
        Vh(h.n_embd_head_v_mla),
        F(h.n_ff),
        X(h.n_expert),
        L(h.expert_in()),
        Fe(h.n_ff_exp),
        Fs(h.n_ff_shexp()) {}
};

using Shape = std::vector<int64_t> (*)(const Letters&);
using P = Part;
using W = When;

struct TensorRow {
  TensorKind kind;
  Shape shape;
};

// clang-format off
const TensorRow kTensors[] = {
    {{Tensor::TokenEmbd, "token_embd.weight", P::Global, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.V}; }},
    {{Tensor::OutputNorm, "output_norm.weight", P::Global, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E}; }},
    {{Tensor::Output, "output.weight", P::Global, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.V}; }},
    {{Tensor::OutputResScore, "output_res_score.weight", P::Global, W::AttnRes, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E}; }},
    {{Tensor::AttnNorm, "attn_norm.weight", P::Layer, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E}; }},
    {{Tensor::AttnResScore, "attn_res_score.weight", P::Layer, W::AttnRes, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E}; }},
    {{Tensor::FfnNorm, "ffn_norm.weight", P::Layer, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E}; }},
    {{Tensor::FfnResScore, "ffn_res_score.weight", P::Layer, W::AttnRes, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E}; }},
    // KDA
    {{Tensor::KdaQ, "attn_q.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.Di}; }},
    {{Tensor::KdaK, "attn_k.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.Di}; }},
    {{Tensor::KdaV, "attn_v.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.Di}; }},
    {{Tensor::KdaConvQ, "ssm_conv1d_q.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.K, 1, d.Di}; }},
    {{Tensor::KdaConvK, "ssm_conv1d_k.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.K, 1, d.Di}; }},
    {{Tensor::KdaConvV, "ssm_conv1d_v.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.K, 1, d.Di}; }},
    {{Tensor::KdaFA, "ssm_f_a.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.D}; }},
    {{Tensor::KdaFB, "ssm_f_b.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.D, d.Di}; }},
    {{Tensor::KdaDtBias, "ssm_dt.bias", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.Di}; }},
    {{Tensor::KdaA, "ssm_a", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.H}; }},
    {{Tensor::KdaBeta, "ssm_beta.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.H}; }},
    {{Tensor::KdaG, "ssm_g.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.Di}; }},
    {{Tensor::KdaNorm, "ssm_norm.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.D}; }},
    {{Tensor::KdaOutput, "attn_output.weight", P::Kda, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.Di, d.E}; }},
    // MLA
    {{Tensor::MlaQA, "attn_q_a.weight", P::Mla, W::QLora, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.Q}; }},
    {{Tensor::MlaQANorm, "attn_q_a_norm.weight", P::Mla, W::QLora, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.Q}; }},
    {{Tensor::MlaQB, "attn_q_b.weight", P::Mla, W::QLora, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.Q, d.H * (d.N + d.R)}; }},
    {{Tensor::MlaQ, "attn_q.weight", P::Mla, W::NoQLora, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.H * (d.N + d.R)}; }},
    {{Tensor::MlaKvAMqa, "attn_kv_a_mqa.weight", P::Mla, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.C + d.R}; }},
    {{Tensor::MlaKvANorm, "attn_kv_a_norm.weight", P::Mla, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.C}; }},
    {{Tensor::MlaKB, "attn_k_b.weight", P::Mla, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.N, d.C, d.H}; }},
    {{Tensor::MlaVB, "attn_v_b.weight", P::Mla, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.C, d.Vh, d.H}; }},
    {{Tensor::MlaKvB, "attn_kv_b.weight", P::Mla, W::Ignored, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.C, d.H * (d.N + d.Vh)}; }},
    {{Tensor::MlaGate, "attn_gate.weight", P::Mla, W::Optional, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.H * d.Vh}; }},
    {{Tensor::MlaOutput, "attn_output.weight", P::Mla, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.H * d.Vh, d.E}; }},
    // Dense FFN
    {{Tensor::FfnGate, "ffn_gate.weight", P::Dense, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.F}; }},
    {{Tensor::FfnUp, "ffn_up.weight", P::Dense, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.F}; }},
    {{Tensor::FfnDown, "ffn_down.weight", P::Dense, W::Always, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.F, d.E}; }},
    // MoE
    {{Tensor::Router, "ffn_gate_inp.weight", P::Moe, W::Always, true}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.X}; }},
    {{Tensor::RouterBias, "exp_probs_b.bias", P::Moe, W::Optional, true}, [](const Letters& d) -> std::vector<int64_t> { return {d.X}; }},
    {{Tensor::ExpGate, "ffn_gate_exps.weight", P::Moe, W::Always, true}, [](const Letters& d) -> std::vector<int64_t> { return {d.L, d.Fe, d.X}; }},
    {{Tensor::ExpUp, "ffn_up_exps.weight", P::Moe, W::Always, true}, [](const Letters& d) -> std::vector<int64_t> { return {d.L, d.Fe, d.X}; }},
    {{Tensor::ExpDown, "ffn_down_exps.weight", P::Moe, W::Always, true}, [](const Letters& d) -> std::vector<int64_t> { return {d.Fe, d.L, d.X}; }},
    {{Tensor::RoutedDown, "ffn_routed_down.weight", P::Moe, W::Latent, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.L}; }},
    {{Tensor::RoutedUp, "ffn_routed_up.weight", P::Moe, W::Latent, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.L, d.E}; }},
    {{Tensor::RoutedNorm, "ffn_routed_norm.weight", P::Moe, W::Optional, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.L}; }},
    {{Tensor::ShexpGate, "ffn_gate_shexp.weight", P::Moe, W::Optional, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.Fs}; }},
    {{Tensor::ShexpUp, "ffn_up_shexp.weight", P::Moe, W::Optional, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.E, d.Fs}; }},
    {{Tensor::ShexpDown, "ffn_down_shexp.weight", P::Moe, W::Optional, false}, [](const Letters& d) -> std::vector<int64_t> { return {d.Fs, d.E}; }},
};
// clang-format on

std::vector<TensorKind> kinds_of_rows() {
  std::vector<TensorKind> v;
  for (const TensorRow& r : kTensors) {
    K3_ASSERT(static_cast<size_t>(r.kind.id) == v.size(), "kTensors is indexed by Tensor");
    v.push_back(r.kind);
  }
  return v;
}

const std::vector<TensorKind>& kinds() {
  static const std::vector<TensorKind> v = kinds_of_rows();
  return v;
}

const TensorRow& row(Tensor t) {
  const size_t i = static_cast<size_t>(t);
  K3_ASSERT(i < std::size(kTensors) && kTensors[i].kind.id == t);
  return kTensors[i];
}

}  // namespace

std::span<const TensorKind> tensors() { return kinds(); }

const TensorKind& tensor_kind(Tensor t) { return kinds()[static_cast<size_t>(row(t).kind.id)]; }

std::string tensor_name(Tensor t, uint32_t il) {
  const TensorKind& k = row(t).kind;
  if (k.part == Part::Global) return std::string(k.name);
  return fmt::format("blk.{}.{}", il, k.name);
}

std::vector<int64_t> tensor_shape(Tensor t, const HParams& hp) { return row(t).shape(Letters(hp)); }

bool in_part(Part p, const HParams& hp, uint32_t il) {
  switch (p) {
    case Part::Global: return false;
    case Part::Layer: return true;
    case Part::Kda: return hp.is_kda(il);
    case Part::Mla: return !hp.is_kda(il);
    case Part::Dense: return hp.is_dense(il);
    case Part::Moe: return !hp.is_dense(il);
  }
  return false;
}

std::span<const KeyInfo> keys() { return kKeys; }

const KeyInfo& key_info(Key k) {
  const size_t i = static_cast<size_t>(k);
  K3_ASSERT(i < std::size(kKeys));
  return kKeys[i];
}

std::string key_name(Key k) { return fmt::format("{}.{}", kArch, key_info(k).name); }

std::vector<std::pair<std::string, gguf::Value>> hparams_kvs(const HParams& hp) {
  using gguf::Value;
  std::vector<std::pair<std::string, Value>> kv;
  for (const KeyInfo& k : kKeys) {
    if (!k.written) continue;
    auto put = [&](Value v) { kv.emplace_back(key_name(k.key), std::move(v)); };
    switch (k.key) {
      case Key::VocabSize: put(Value::u32(hp.n_vocab)); break;
      case Key::ContextLength: put(Value::u32(hp.n_ctx_train)); break;
      case Key::EmbeddingLength: put(Value::u32(hp.n_embd)); break;
      case Key::BlockCount: put(Value::u32(hp.n_layer)); break;
      case Key::FeedForwardLength: put(Value::u32(hp.n_ff)); break;
      case Key::HeadCount: put(Value::u32(hp.n_head)); break;
      case Key::HeadCountKv: {
        std::vector<int32_t> v(hp.n_head_kv.begin(), hp.n_head_kv.end());
        put(Value::array_i32(v));
        break;
      }
      case Key::RmsEps: put(Value::f32(hp.rms_eps)); break;
      case Key::ExpertCount: put(Value::u32(hp.n_expert)); break;
      case Key::ExpertUsedCount: put(Value::u32(hp.n_expert_used)); break;
      case Key::SsmConvKernel: put(Value::u32(hp.ssm_conv_kernel)); break;
      case Key::KdaHeadDim: put(Value::u32(hp.kda_head_dim)); break;
      case Key::KdaGateLowerBound:
        if (hp.kda_gate_lower_bound) put(Value::f32(*hp.kda_gate_lower_bound));
        break;
      case Key::QLoraRank: put(Value::u32(hp.q_lora_rank)); break;
      case Key::KvLoraRank: put(Value::u32(hp.kv_lora_rank)); break;
      case Key::RopeDimensionCount: put(Value::u32(hp.n_rot)); break;
      case Key::KeyLength: put(Value::u32(hp.kv_lora_rank + hp.n_rot)); break;
      case Key::ValueLength: put(Value::u32(hp.kv_lora_rank)); break;
      case Key::KeyLengthMla: put(Value::u32(hp.n_embd_head_k_mla)); break;
      case Key::ValueLengthMla: put(Value::u32(hp.n_embd_head_v_mla)); break;
      case Key::ExpertFeedForwardLength: put(Value::u32(hp.n_ff_exp)); break;
      case Key::ExpertSharedCount: put(Value::u32(hp.n_expert_shared)); break;
      case Key::LeadingDenseBlockCount: put(Value::u32(hp.n_layer_dense_lead)); break;
      case Key::ExpertWeightsScale: put(Value::f32(hp.expert_weights_scale)); break;
      case Key::ExpertWeightsNorm: put(Value::boolean(hp.expert_weights_norm)); break;
      case Key::ExpertGatingFunc: put(Value::u32(hp.expert_gating_func)); break;
      case Key::ExpertLatentLength: put(Value::u32(hp.n_embd_exp_latent)); break;
      case Key::SituBeta: put(Value::f32(hp.situ_beta)); break;
      case Key::SituLinearBeta: put(Value::f32(hp.situ_linear_beta)); break;
      case Key::AttnResBlockSize: put(Value::u32(hp.attn_res_block_size)); break;
      case Key::RopeFreqBase:
      case Key::ExpertGroupCount: break;
    }
  }
  return kv;
}

}  // namespace k3::model::schema
