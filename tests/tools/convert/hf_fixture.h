// tests/tools/convert/hf_fixture: builds a Hugging Face-format Kimi-K3 checkpoint from a golden GGUF by
// the INVERSE of the converter's mapping (docs/convert.md), so that `k3 convert` of the result must
// give the golden tensors back. Written independently of src/tools/convert*.cpp: names, kv_b merge,
// A_log, fused-score factoring, conv reshape and the MXFP4 unpack are re-derived here from the
// documented mapping.
#pragma once

#include <string>

#include "gguf/file.h"

namespace k3::test {

struct FixtureOptions {
  std::string dir;             // created
  int shards = 1;              // >1: model-0000i-of-0000N.safetensors + index.json
  bool nested = true;          // text_config + "language_model." prefix (+ a vision tensor to drop)
  bool packed_experts = true;  // MXFP4 experts as weight_packed/weight_scale (else dequantized)
};

void write_hf_fixture(const gguf::GgufFile& golden, const FixtureOptions& opt);

// A minimal safetensors writer: tensors as (name, dtype, shape, bytes); sorted by name.
struct StEntry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
void write_safetensors(const std::string& path, const std::vector<StEntry>& tensors);

}  // namespace k3::test
