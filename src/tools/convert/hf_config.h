// tools/hf_config: the Kimi-K3 text-model hyperparameters of a Hugging Face config.json, and
// the kimi-k3.* GGUF keys they become (docs/convert.md, docs/MODEL.md).
// Contract: read_k3_config() merges `text_config` over the root (K3 nests the language model
// there; its tensors then carry the prefix "language_model."), checks every required key's
// presence, type and range (naming the key), and resolves the 1-indexed
// linear_attn_config.full_attn_layers into per-layer MLA flags. k3_model_kvs() returns the
// model keys in the order the reference converter writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "model/hparams.h"

namespace k3::tools {

// The fields carry model::HParams' names (the kimi-k3.* key each becomes is in model/schema.h).
struct K3HfConfig {
  std::string tensor_prefix;  // "language_model." when the text model is nested
  uint32_t n_layer = 0, n_ctx_train = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv_hf = 0;
  std::vector<bool> is_mla;  // per 0-indexed layer: (il+1) in full_attn_layers
  uint32_t ssm_conv_kernel = 0, kda_head_dim = 0;
  std::optional<float> kda_gate_lower_bound;
  uint32_t q_lora_rank = 0;  // 0: no q-LoRA (MLA layers use q_proj)
  uint32_t kv_lora_rank = 0, n_rot = 0, qk_nope = 0, n_embd_head_v_mla = 0;
  uint32_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_expert_shared = 0, n_layer_dense_lead = 0;
  float expert_weights_scale = 1.0f;
  bool expert_weights_norm = false;
  uint32_t n_embd_exp_latent = 0;
  float situ_beta = 0, situ_linear_beta = 0;
  uint32_t attn_res_block_size = 0;
  float rms_eps = 0;
  uint32_t n_vocab = 0;
  std::optional<int64_t> eos_token_id, bos_token_id;
  std::optional<float> rope_theta;
};

K3HfConfig read_k3_config(const std::string& config_json_path);
K3HfConfig parse_k3_config(const std::string& json_text, const std::string& name);

// The hyperparameters the converted file will load with.
model::HParams k3_hparams(const K3HfConfig& c);
std::vector<std::pair<std::string, gguf::Value>> k3_model_kvs(const K3HfConfig& c);

}  // namespace k3::tools
