// model/schema: the kimi-k3 GGUF schema, written once: every metadata key (its name after the
// `kimi-k3.` prefix, GGUF type, whether the loader requires it, the HParams field it fills). The
// reader (load_hparams) and the writers (k3 synth, k3 convert) take key names from here, so a
// key cannot be spelled two ways. docs/MODEL.md has the same lists with their meaning.
// Contract: the table is complete and constant.
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
  bool required;          // load_hparams fails without it
  bool written;           // k3 synth and k3 convert write it
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

}  // namespace k3::model::schema
