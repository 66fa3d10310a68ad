// tools/synth: random but valid Kimi-K3 GGUF models of any shape and quant mix.
// Contract: synth_plan() turns a SynthConfig into the complete list of K3 tensors (the tensor
// list of docs/MODEL.md: names, ne shapes, types) and synth_metadata() into every key the K3
// loader requires (its key list) plus a byte-level tokenizer, so the result loads and runs in
// our engine.
// write_synth() fills each tensor with deterministic random data (a pure function of the
// seed and the tensor name): float tensors get small normal values, quantized tensors get
// random blocks whose f16 scales are set so the decoded weights have the intended RMS
// (synth_blocks.h). Nothing is quantized, so writing is as fast as the disk. With
// `sparse`, large tensors are left as holes (all-zero, still valid) so full-size shapes
// cost no disk. Bad configurations throw k3::Error naming the field at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "model/hparams.h"
#include "quant/types.h"

namespace k3::tools {

// A per-tensor type rule: tensors whose name matches `pattern` (ECMAScript regex, searched
// anywhere in the name) get `type`.
struct TypeRule {
  std::string pattern;
  quant::Type type = quant::Type::Q8_0;
};
// Parses "REGEX=TYPE" (TYPE case-insensitive, e.g. "ffn_.*_exps=iq1_m").
TypeRule parse_type_rule(std::string_view text);

struct SynthConfig {
  std::string name = "tiny";  // general.name becomes "kimi-k3-synth-<name>"
  uint64_t seed = 1;

  // Shape (kimi-k3.* key names, as in docs/MODEL.md, in comments).
  uint32_t n_vocab = 272;                             // token list size; >= 272 gets a byte-level vocabulary
  uint32_t n_ctx_train = 4096;                        // context_length
  uint32_t n_embd = 128;                              // embedding_length
  uint32_t n_layer = 4;                               // block_count
  uint32_t n_head = 4;                                // attention.head_count (MLA and KDA heads)
  uint32_t kda_head_dim = 32;                         // kda.head_dim
  uint32_t ssm_conv_kernel = 4;                       // ssm.conv_kernel
  std::optional<float> kda_gate_lower_bound = -5.0f;  // absent: softplus gate
  uint32_t q_lora_rank = 64;                          // 0: plain attn_q instead of the q-LoRA pair
  uint32_t kv_lora_rank = 64;                         // C
  uint32_t n_rot = 32;                                // R (the un-rotated "pe" dims)
  uint32_t qk_nope = 32;                              // N
  uint32_t n_embd_head_v_mla = 32;                    // Vh
  uint32_t n_ff = 256;                                // dense FFN width
  uint32_t n_layer_dense_lead = 1;                    // leading_dense_block_count
  uint32_t n_expert = 4;
  uint32_t n_expert_used = 2;
  uint32_t n_ff_exp = 256;
  uint32_t n_expert_shared = 1;      // 0: no shared-expert tensors
  uint32_t n_embd_exp_latent = 256;  // expert_latent_length; 0: experts at n_embd
  bool routed_norm = true;           // ffn_routed_norm present
  bool attn_gate = true;             // MLA attn_gate present
  uint32_t attn_res_block_size = 2;  // attn_res.block_size; 0 disables AttnRes
  float rms_eps = 1e-5f;
  float situ_beta = 4.0f, situ_linear_beta = 25.0f;
  float expert_weights_scale = 1.0f;
  bool expert_weights_norm = true;

  // Layer map: a layer is MLA when (il+1) is a multiple of mla_every (1-indexed, as K3's
  // full_attn_layers), plus the last layer when mla_last; `mla_layers` (0-indexed) replaces
  // both when non-empty.
  uint32_t mla_every = 2;
  bool mla_last = false;
  std::vector<uint32_t> mla_layers;

  // Types: rules are tried in order (user rules first), the first match wins; tensors that
  // match none get `trunk_type`, except the small/vector tensors the K3 converter keeps in
  // F32 (1-D, norms, router, conv taps, ssm_a, biases), which get F32 unless a rule names
  // them. A type whose block does not divide a tensor's rows falls back to Q8_0, then F16.
  quant::Type trunk_type = quant::Type::Q8_0;
  std::vector<TypeRule> rules;

  // Output.
  uint32_t shards = 1;
  bool sparse = false;  // holes instead of data for every tensor with >1 dim
};

// Preset names: tiny, bench-m, kimi-k3, kimi-k3-reap55.
std::vector<std::string> synth_preset_names();
// Throws k3::Error listing the presets when the name is unknown.
SynthConfig synth_preset(std::string_view name);

// How a tensor's values are drawn (before quantization to its type).
enum class SynthInit {
  Matrix,     // N(0, scale²), scale = 1/sqrt(fan_in) (× 1/sqrt(2·n_layer) for residual outputs)
  Embedding,  // N(0, 1)
  Norm,       // 1 + 0.1·N(0, 1)
  Small,      // N(0, scale²) with a fixed small scale (AttnRes scores, biases, conv taps)
  SsmA,       // −U(1, 16): −exp(A_log) of a plausible decay
};

struct SynthTensor {
  std::string name;
  std::vector<int64_t> ne;
  quant::Type type = quant::Type::F32;
  SynthInit init = SynthInit::Matrix;
  float scale = 1.0f;  // standard deviation for Matrix/Small
  uint64_t nbytes = 0;
};

// Validates the config and lists every tensor, in file order.
std::vector<SynthTensor> synth_plan(const SynthConfig& cfg);
// The hyperparameters a config describes, as the loader will read them back (the model keys
// are written from these through model/schema.h).
model::HParams synth_hparams(const SynthConfig& cfg);
// Every KV of the file, in file order (without split.* keys).
std::vector<std::pair<std::string, gguf::Value>> synth_metadata(const SynthConfig& cfg);

struct SynthResult {
  std::vector<std::string> files;
  size_t n_tensors = 0;
  uint64_t tensor_bytes = 0;  // sum of tensor sizes (apparent, holes included)
  double seconds = 0.0;
};
// Writes the model to `path` (shards: path-0000i-of-0000N.gguf).
// progress: a progress bar on stderr over the bytes filled.
SynthResult write_synth(const std::string& path, const SynthConfig& cfg, bool progress = false);

// The 0-indexed MLA layers of a config.
std::vector<bool> synth_mla_map(const SynthConfig& cfg);

}  // namespace k3::tools
