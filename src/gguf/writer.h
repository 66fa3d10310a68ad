// gguf/writer: writes GGUF v3 files (optionally split into shards) atomically.
// Contract: KVs and tensor infos are written in the order given; tensor data is aligned to
// general.alignment (default 32) with zero padding, exactly as ggml/gguf-py lay it out, so a
// file read by GgufFile and written back with the same KVs/tensors is byte-identical.
// Output goes to temporary files that are renamed only after every shard is complete.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "quant/types.h"

namespace k3::gguf {

class GgufFile;

struct TensorSpec {
  std::string name;
  std::vector<int64_t> ne;
  quant::Type type = quant::Type::F32;
  // Supplies the bytes: called once with a buffer of nbytes to fill. Lets big writers stream
  // (quantize/convert one tensor at a time). If null and `data` is set, `data` is copied;
  // if both are null the region is left as a hole (sparse synthetic files).
  std::function<void(uint8_t* dst, uint64_t nbytes)> fill;
  const uint8_t* data = nullptr;
};

struct SplitOptions {
  uint64_t max_bytes = 0;    // 0: no size limit
  uint32_t max_tensors = 0;  // 0: no count limit
};

struct WriteOptions {
  SplitOptions split;
  bool sparse_holes = false;  // tensors without data/fill become holes instead of zeros
  // Called after each tensor's bytes (from fill or data; not holes or zeros) are written:
  // progress for writers whose tensors need no fill of their own.
  std::function<void(const TensorSpec&, uint64_t nbytes)> on_written;
};

// Writes `path` (or path-0000i-of-0000N.gguf shards when splitting; `path` may be given with
// or without the -00001-of-... suffix). Returns the list of files written.
// Splitting follows gguf-split: tensors keep their order and are cut into consecutive runs;
// a new shard starts when max_tensors is reached or when the next tensor's aligned size would
// push the run past max_bytes (a tensor is never split; one larger than max_bytes gets a shard
// of its own). Shard 1 gets all KVs (any split.* among them dropped) plus split.no (UINT16,
// 0-based), split.count (UINT16) and split.tensors.count (INT32); later shards get only those
// three keys and the default alignment of 32. When the limits leave everything in one shard,
// `path` is written as given, with the KVs unchanged.
// The metadata is always padded to the alignment, even without tensors (as ggml's writer does).
std::vector<std::string> write_gguf(const std::string& path,
                                    const std::vector<std::pair<std::string, Value>>& kvs,
                                    const std::vector<TensorSpec>& tensors, const WriteOptions& opt = {});

// Shard naming helper: "dir/name-00002-of-00008.gguf" for index 1, count 8 (index is 0-based,
// like split.no; the name is 1-based).
std::string shard_path(const std::string& prefix, uint32_t index, uint32_t count);

}  // namespace k3::gguf
