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

}  // namespace

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
