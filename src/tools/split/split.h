// tools/split: `k3 split` and `k3 merge` — re-shard a GGUF model in the standard split.* layout
// (docs/split.md), as llama.cpp's gguf-split does.
// Contract: tensor bytes are copied unchanged and in their input order; metadata goes to the
// first shard only, followed by split.no / split.count / split.tensors.count in every shard
// (also when the model fits in one shard: NAME-00001-of-00001.gguf). merge_model() drops the
// split.* keys and writes one file, so split → merge of an unsharded file gives back its
// exact bytes. Outputs are written to temporary files and renamed only when all are complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace k3::tools {

struct ShardingResult {
  std::vector<std::string> files;
  size_t tensors = 0;
  uint64_t bytes = 0;  // tensor bytes copied
  double seconds = 0;
};

// out_prefix: "dir/name" (a trailing ".gguf" is dropped). At least one limit must be set.
ShardingResult split_model(const std::string& input, const std::string& out_prefix,
                           const gguf::SplitOptions& split, bool progress = false);
// first_shard: any GGUF (a sharded set is read from its first shard).
ShardingResult merge_model(const std::string& first_shard, const std::string& output, bool progress = false);

// The number of shards write_gguf makes for these tensor sizes (same rule as the writer:
// consecutive runs, a tensor that would pass a limit opens the next shard).
uint32_t count_shards(const std::vector<uint64_t>& tensor_bytes, uint64_t alignment,
                      const gguf::SplitOptions& split);

// "45G" → 45e9, "500M" → 500e6, "1000" → 1000 bytes (decimal units, as gguf-split; K/M/G/T,
// optional trailing B). Throws naming the text when it is not a size.
uint64_t parse_size(const std::string& text);

}  // namespace k3::tools
