// model/hparams: the Kimi-K3 hyperparameters, read from GGUF metadata exactly as llama.cpp's
// loader reads them (the keys of docs/MODEL.md).
// Contract: load_hparams() returns a complete, validated set or throws k3::Error naming the
// file and the key at fault. Scalar types are checked strictly (u32 keys must be UINT32, f32
// keys FLOAT32, bool keys BOOL); per-layer arrays may hold INT32 or UINT32 and must have
// exactly block_count entries. Keys the K3 graph ignores are not read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace k3::gguf {
class GgufFile;
}

namespace k3::model {

enum class LayerKind { KDA, MLA };

// `expert_gating_func` as the GGUF numbers it (llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_*).
constexpr uint32_t kGatingSoftmax = 1;
constexpr uint32_t kGatingSigmoid = 2;

struct HParams {
  uint32_t n_ctx_train = 0;         // context_length
  uint32_t n_embd = 0;              // embedding_length
  uint32_t n_layer = 0;             // block_count
  uint32_t n_vocab = 0;             // token list, else vocab_size key, else token_embd rows
  uint32_t n_ff = 0;                // dense FFN width (layer 0's value)
  uint32_t n_head = 0;              // layer 0's value: MLA query heads and KDA heads
  std::vector<uint32_t> n_head_kv;  // per layer; 0 marks a KDA layer
  std::vector<LayerKind> kind;      // derived from n_head_kv

  float rms_eps = 0.0f;

  // MLA
  uint32_t n_embd_head_k = 0;      // key_length (cache row width, C + R)
  uint32_t n_rot = 0;              // rope.dimension_count = R (un-rotated "pe" dims)
  uint32_t n_embd_head_k_mla = 0;  // key_length_mla = N + R
  uint32_t n_embd_head_v_mla = 0;  // value_length_mla = Vh
  uint32_t q_lora_rank = 0;
  uint32_t kv_lora_rank = 0;  // C

  // KDA
  uint32_t ssm_conv_kernel = 0;               // K
  uint32_t kda_head_dim = 0;                  // D
  std::optional<float> kda_gate_lower_bound;  // present: lower-bound gate; absent: softplus

  // MoE
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;
  uint32_t n_expert_shared = 0;
  uint32_t n_layer_dense_lead = 0;
  float expert_weights_scale = 0.0f;
  bool expert_weights_norm = false;
  uint32_t expert_gating_func = 0;  // kGatingSoftmax or kGatingSigmoid (the GGUF's numbers)
  uint32_t n_embd_exp_latent = 0;   // 0: experts run at n_embd

  // AttnRes and SiTU
  uint32_t attn_res_block_size = 0;
  float situ_beta = 0.0f;
  float situ_linear_beta = 0.0f;

  // Derived.
  uint32_t qk_nope() const { return n_embd_head_k_mla - n_rot; }
  uint32_t kda_inner() const { return n_head * kda_head_dim; }
  uint32_t expert_in() const { return n_embd_exp_latent ? n_embd_exp_latent : n_embd; }
  uint32_t n_ff_shexp() const { return n_ff_exp * n_expert_shared; }
  bool is_kda(uint32_t il) const { return kind[il] == LayerKind::KDA; }
  bool is_dense(uint32_t il) const { return il < n_layer_dense_lead; }
  bool has_moe() const { return n_layer_dense_lead < n_layer; }  // any layer with routed experts
  uint32_t n_kda_layers() const;
  uint32_t n_mla_layers() const;
};

HParams load_hparams(const gguf::GgufFile& file);

}  // namespace k3::model
