// gguf/census: the numbers a model card gives about a GGUF model, computed from an open
// GgufFile: architecture and hyperparameters, layer kinds, tensor/type/expert statistics,
// parameter count, size and bits per weight, shards, and warnings.
// Contract: works for any valid GGUF; Kimi-K3 specifics (layer kinds, expert slots) are filled
// only when general.architecture is "kimi-k3". census_json() is the stable format documented
// in docs/gguf-info-json.md (bump schema_version on any incompatible change).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "quant/types.h"

namespace k3::gguf {

class GgufFile;

struct TypeCensus {
  quant::Type type;
  uint64_t tensors = 0;
  uint64_t bytes = 0;
  uint64_t params = 0;
};

// Expert tensors (names containing "_exps", ending in ".weight") grouped by their shape class:
// `tensors` tensors, each holding `slots` experts of `params_per_slot` parameters.
struct ExpertGroup {
  uint64_t tensors = 0;
  uint64_t params_per_slot = 0;
  uint64_t slots = 0;
  uint64_t bytes = 0;
};

struct LayerCensus {
  uint32_t index = 0;
  std::string attention;      // "KDA", "MLA" (K3 only, else "")
  std::string ffn;            // "dense", "MoE" (K3 only, else "")
  uint64_t expert_slots = 0;  // largest expert-slot count among the layer's expert tensors
  uint64_t tensors = 0;
  uint64_t params = 0;
  uint64_t bytes = 0;
};

struct ShardCensus {
  std::string path;
  uint64_t file_size = 0;
  uint64_t tensors = 0;
  uint64_t tensor_bytes = 0;
};

struct Census {
  std::string path;
  uint32_t version = 0;
  uint64_t file_size = 0;  // all shards
  std::vector<ShardCensus> shards;

  std::string architecture, name, general_type;
  int64_t file_type = -1;  // general.file_type, -1 if absent
  bool is_k3 = false;
  // KVs "<architecture>.*" with the prefix removed, in file order.
  std::vector<std::pair<std::string, Value>> hparams;
  std::string tokenizer_model;  // tokenizer.ggml.model, "" if absent
  int64_t vocab_size = -1;      // length of tokenizer.ggml.tokens, -1 if absent

  uint64_t kv_count = 0;
  uint64_t tensor_count = 0;
  uint64_t params = 0;            // total elements of all tensors
  uint64_t tensor_bytes = 0;      // total tensor data bytes (without padding)
  double bpw = 0;                 // 8 * tensor_bytes / params
  double bpw_file = 0;            // 8 * file_size / params
  std::vector<TypeCensus> types;  // by type id

  int64_t block_count = -1;         // <arch>.block_count, -1 if absent
  std::vector<LayerCensus> layers;  // one per block when block_count is known
  uint64_t n_kda = 0, n_mla = 0, n_dense = 0, n_moe = 0;

  uint64_t expert_tensors = 0, expert_params = 0, expert_bytes = 0;
  std::vector<ExpertGroup> expert_groups;

  std::vector<std::string> warnings;
};

Census take_census(const GgufFile& f);

// JSON text (indent < 0: one line).
std::string census_json(const Census& c, int indent = 2);

// "276 × 11,010,048 × 400" (tensors × params per slot × slots).
std::string expert_group_text(const ExpertGroup& g);
// [0,1,2,4,6,7] -> "0-2,4,6-7" (ascending input).
std::string index_ranges(const std::vector<uint32_t>& xs);
// 11010048 -> "11,010,048".
std::string with_commas(uint64_t n);

}  // namespace k3::gguf
