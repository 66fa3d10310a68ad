// model/schema: the kimi-k3 GGUF schema, written once: every metadata key (its name after the
// `kimi-k3.` prefix, GGUF type, whether the loader requires it, the HParams field it fills) and
// every tensor kind (its name, the layers that carry it, when it is present, its ne shape from
// the hyperparameters). The readers (load_hparams, bind_weights, the expert source, the memory
// plan) and the writers (k3 synth, k3 convert, k3 reap) take names and shapes from here, so a
// key or tensor cannot be spelled two ways. docs/MODEL.md has the same lists with their meaning.
// Contract: the tables are complete and constant; tensor_shape() is a pure function of HParams
// (it does not validate them: load_hparams does).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/value.h"

namespace k3::model {
struct HParams;
}

namespace k3::model::schema {

// general.architecture, and the prefix of every model key ("kimi-k3.context_length").
constexpr std::string_view kArch = "kimi-k3";

// ---- Metadata keys ------------------------------------------------------------------------

enum class Key : uint8_t {
  VocabSize,
  ContextLength,
  EmbeddingLength,
  BlockCount,
  FeedForwardLength,
  HeadCount,
  HeadCountKv,
  RmsEps,
  ExpertCount,
  ExpertUsedCount,
  SsmConvKernel,
  KdaHeadDim,
  KdaGateLowerBound,
  QLoraRank,
  KvLoraRank,
  RopeDimensionCount,
  KeyLength,
  ValueLength,
  KeyLengthMla,
  ValueLengthMla,
  ExpertFeedForwardLength,
  ExpertSharedCount,
  LeadingDenseBlockCount,
  ExpertWeightsScale,
  ExpertWeightsNorm,
  ExpertGatingFunc,
  ExpertLatentLength,
  SituBeta,
  SituLinearBeta,
  AttnResBlockSize,
  RopeFreqBase,
  ExpertGroupCount,
};

enum class KeyType : uint8_t {
  U32,       // UINT32
  F32,       // FLOAT32
  Bool,      // BOOL
  PerLayer,  // written as an INT32 array of block_count entries; read as that or one UINT32
};

struct KeyInfo {
  Key key;
  std::string_view name;  // after "kimi-k3."
  KeyType type;
  bool required;           // load_hparams fails without it
  bool written;            // k3 synth and k3 convert write it
  std::string_view field;  // the HParams field (or derivation) it fills; empty: not read
};

// Every key, in the order the writers put them in a file.
std::span<const KeyInfo> keys();
const KeyInfo& key_info(Key k);
// "kimi-k3.<name>".
std::string key_name(Key k);

// The written keys of `hp`, in file order, as k3 synth writes them: every written key except
// kda.gate_lower_bound when hp has none and rope.freq_base (HParams has no RoPE base; a writer
// that knows one appends it). attention.key_length and value_length are derived (C + R, C).
std::vector<std::pair<std::string, gguf::Value>> hparams_kvs(const HParams& hp);

// ---- Tensors -------------------------------------------------------------------------------
// Shapes are GGUF ne order (ne[0] contiguous), with the letters of model/weights.h. Kinds that
// share a name in different layer kinds (attn_q, attn_output) are separate entries.

enum class Tensor : uint8_t {
  TokenEmbd,
  OutputNorm,
  Output,
  OutputResScore,
  AttnNorm,
  AttnResScore,
  FfnNorm,
  FfnResScore,
  KdaQ,
  KdaK,
  KdaV,
  KdaConvQ,
  KdaConvK,
  KdaConvV,
  KdaFA,
  KdaFB,
  KdaDtBias,
  KdaA,
  KdaBeta,
  KdaG,
  KdaNorm,
  KdaOutput,
  MlaQA,
  MlaQANorm,
  MlaQB,
  MlaQ,
  MlaKvAMqa,
  MlaKvANorm,
  MlaKB,
  MlaVB,
  MlaKvB,
  MlaGate,
  MlaOutput,
  FfnGate,
  FfnUp,
  FfnDown,
  Router,
  RouterBias,
  ExpGate,
  ExpUp,
  ExpDown,
  RoutedDown,
  RoutedUp,
  RoutedNorm,
  ShexpGate,
  ShexpUp,
  ShexpDown,
};

// Which part of the model carries a tensor: the file once, or every layer / the KDA layers /
// the MLA layers / the leading dense-FFN layers / the MoE layers.
enum class Part : uint8_t { Global, Layer, Kda, Mla, Dense, Moe };

// When a tensor is there, within its part.
enum class When : uint8_t {
  Always,    // required
  AttnRes,   // required when attn_res.block_size > 0, else absent
  QLora,     // the q-LoRA pair (the loader keys on attn_q_a_norm); else NoQLora's attn_q
  NoQLora,   //
  Latent,    // required when expert_latent_length > 0
  Optional,  // may be absent: the loader looks and adapts
  Ignored,   // some exporters write it; the K3 graph never reads it
};

struct TensorKind {
  Tensor id;
  std::string_view name;  // per-layer kinds: after "blk.N."
  Part part;
  When when;
  bool per_expert;  // the last dimension is expert_count (what k3 reap slices)
};

// Every kind, in enum order.
std::span<const TensorKind> tensors();
const TensorKind& tensor_kind(Tensor t);
// The GGUF name: "token_embd.weight", or "blk.<il>.attn_kv_a_mqa.weight" for a per-layer kind.
std::string tensor_name(Tensor t, uint32_t il = 0);
// Its ne shape for hp (trailing 1-dims are kept as k3 synth writes them: conv taps [K, 1, Di]).
std::vector<int64_t> tensor_shape(Tensor t, const HParams& hp);
// Whether layer il is of the kind's part (always true for Layer, false for Global).
bool in_part(Part p, const HParams& hp, uint32_t il);

// The routed experts' stacks ([L, Fe, X] gate and up, [Fe, L, X] down), the ones an expert
// store pages, in the order the stores keep them.
constexpr Tensor kExpertTensors[3] = {Tensor::ExpGate, Tensor::ExpUp, Tensor::ExpDown};

}  // namespace k3::model::schema
