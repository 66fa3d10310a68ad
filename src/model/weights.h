// model/weights: every non-expert K3 tensor, bound by its model/schema.h entry (name and
// expected shape; the tensor list of docs/MODEL.md). Matrices stay in their GGUF encoding and
// point into the mapping; 1-D vectors (norms, biases, conv taps, AttnRes scores) are small and are decoded
// to float once. Tensors the K3 graph ignores (*.scale, *.input_scale, KDA q/k/v biases,
// attn_kv_b next to k_b/v_b: llama.cpp's K3 graph never reads them) are never looked at.
// Contract: bind_weights() throws k3::Error naming the tensor that is missing, has the wrong
// shape (trailing 1-dims may be dropped, as llama.cpp's saver does) or an unusable type.
//
// Shapes are in GGUF ne order, ne[0] contiguous: [IN, OUT] is OUT rows of IN values (a
// PyTorch (OUT, IN) nn.Linear weight), and a 3-D [A, B, H] is H·B rows of A. Heads are
// head-major (element h·D + d). The letters, with their HParams field, kimi-k3.* GGUF key and
// full-K3 value:
//   E   n_embd             embedding_length                                    7168
//   V   n_vocab            length of tokenizer.ggml.tokens                     163840
//   H   n_head             attention.head_count, layer 0 (MLA and KDA heads)   96
//   D   kda_head_dim       kda.head_dim; Di = H·D = kda_inner()                128
//   K   ssm_conv_kernel    ssm.conv_kernel (causal conv taps)                  4
//   Q   q_lora_rank        attention.q_lora_rank (0: plain attn_q)             1536
//   C   kv_lora_rank       attention.kv_lora_rank (the MLA latent)             512
//   R   n_rot              rope.dimension_count (the un-rotated "pe" dims)     64
//   N   qk_nope()          attention.key_length_mla − R                        128
//   Vh  n_embd_head_v_mla  attention.value_length_mla                          128
//   F   n_ff               feed_forward_length (dense layers)                  33792
//   X   n_expert           expert_count (k = expert_used_count)                896 (k 16)
//   L   expert_in()        expert_latent_length, or E when it is 0             3584
//   Fe  n_ff_exp           expert_feed_forward_length                          3072
//   Fs  n_ff_shexp()       Fe · expert_shared_count                            6144
// Expert tensors ([L, Fe, X] gate/up, [Fe, L, X] down) are not here: model::ExpertSource
// serves them. docs/MODEL.md has the same table and the forward pass these weights feed.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/matmul.h"

namespace k3::gguf {
class GgufFile;
}

namespace k3::model {

struct HParams;
namespace schema {
enum class Tensor : uint8_t;  // model/schema.h
}
using kernels::WeightView;

struct KdaWeights {
  WeightView wq, wk, wv;                      // [E, Di]
  std::vector<float> conv_q, conv_k, conv_v;  // Di channels × K taps, tap K-1 = current token
  WeightView f_a;                             // [E, D]
  WeightView f_b;                             // [D, Di]
  std::vector<float> dt_bias;                 // [Di]
  std::vector<float> ssm_a;                   // [H], holds -exp(A_log)
  WeightView beta;                            // [E, H]
  WeightView g;                               // [E, Di]
  std::vector<float> norm;                    // [D], shared by all heads
  WeightView out;                             // [Di, E]
};

struct MlaWeights {
  bool q_lora = false;
  WeightView q_a;                // [E, Q]       (q_lora)
  std::vector<float> q_a_norm;   // [Q]          (q_lora)
  WeightView q_b;                // [Q, H(N+R)]  (q_lora)
  WeightView q;                  // [E, H(N+R)]  (no q_lora)
  WeightView kv_a;               // [E, C+R]
  std::vector<float> kv_a_norm;  // [C]
  WeightView k_b;                // [N, C, H] as H·C rows of N
  WeightView v_b;                // [C, Vh, H] as H·Vh rows of C
  bool has_gate = false;
  WeightView gate;  // [E, H·Vh]
  WeightView out;   // [H·Vh, E]
};

struct FfnWeights {
  WeightView gate, up, down;
};

struct MoeWeights {
  WeightView router;               // [E, X]
  std::vector<float> router_bias;  // [X] selection-only correction (zeros if absent)
  bool latent = false;
  WeightView routed_down;          // [E, L]
  WeightView routed_up;            // [L, E]
  std::vector<float> routed_norm;  // [L] or empty
  bool has_shared = false;
  FfnWeights shared;  // [E, Fs] ×2, [Fs, E]
};

struct LayerWeights {
  std::vector<float> attn_norm, ffn_norm;
  std::vector<float> attn_res_score, ffn_res_score;  // empty when block_size == 0
  KdaWeights kda;                                    // KDA layers
  MlaWeights mla;                                    // MLA layers
  FfnWeights dense;                                  // il < leading_dense_block_count
  MoeWeights moe;                                    // the others
};

struct Weights {
  WeightView token_embd;                // [E, V]
  std::vector<float> output_norm;       // [E]
  WeightView output;                    // [E, V]
  std::vector<float> output_res_score;  // [E] or empty
  std::vector<LayerWeights> layers;
};

Weights bind_weights(const gguf::GgufFile& file, const HParams& hp);

// Calls fn on every bound trunk matrix the forward pass streams: all WeightViews except
// token_embd (one row per token is read, so it stays where it is).
void for_each_streamed_matrix(Weights& w, const std::function<void(WeightView&)>& fn);
void for_each_streamed_matrix(const Weights& w, const std::function<void(const WeightView&)>& fn);
// The same walk over one layer's matrices, each with its schema entry (schema::tensor_name names
// it): what k3 -ngl places on the GPU (model/gpu_placement.h).
void for_each_layer_matrix(const LayerWeights& l,
                           const std::function<void(const WeightView&, schema::Tensor)>& fn);

}  // namespace k3::model
