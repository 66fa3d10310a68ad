// tools/convert: `k3 convert` — a Kimi-K3 Hugging Face checkpoint (config.json, safetensors,
// tiktoken.model) to a `kimi-k3` GGUF, exactly as llama.cpp's reference converter
// (conversion/kimi_k3.py) does; docs/convert.md lists the mapping and its transformations.
// Contract: every input tensor is checked (presence, dtype, shape) and every GGUF tensor is
// planned before the first byte is written; any problem throws k3::Error naming the tensor,
// file or key, and leaves no output file (the writer renames its temporaries only on
// success). Routed experts stored as packed MXFP4 (U8 weight_packed + E8M0 weight_scale) are
// repacked byte for byte into GGUF MXFP4, never requantized. Unknown language-model tensors
// are an error; vision tensors are dropped (`--mmproj` converts them instead: vision.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quant/types.h"

namespace k3::tools {

struct ConvertOptions {
  std::string hf_dir;
  std::string out_path;
  quant::Type outtype = quant::Type::BF16;  // F32, F16, BF16 or Q8_0
  uint64_t split_max_bytes = 0;             // 0: one file
  std::string chat_template_file;           // optional override
  std::string name;                         // general.name (default: the directory name)
  int threads = 0;                          // 0: default
  bool verbose = false;                     // one line per tensor
  bool progress = false;                    // progress bar on stderr
};

struct ConvertResult {
  std::vector<std::string> files;
  size_t n_tensors = 0;
  size_t n_mxfp4 = 0;      // tensors repacked from packed MXFP4
  uint64_t bytes_in = 0;   // safetensors payload read
  uint64_t bytes_out = 0;  // GGUF tensor data written
  uint32_t n_tokens = 0, n_merges = 0;
  double seconds = 0;
};

ConvertResult convert_hf(const ConvertOptions& opt);

// Parses --outtype (f32, f16, bf16, q8_0).
quant::Type parse_outtype(const std::string& s);

// HF packed MXFP4 → GGUF MXFP4, one row of `cols` elements: `packed` holds cols/2 bytes
// (element 2i in the low nibble of byte i, 2i+1 in the high), `scales` cols/32 E8M0 bytes;
// `dst` receives cols/32 blocks of 17 bytes (scale, then byte j = element j | element j+16 << 4).
void repack_mxfp4_row(const uint8_t* packed, const uint8_t* scales, int64_t cols, uint8_t* dst);
// The inverse (used to build test checkpoints).
void unpack_mxfp4_row(const uint8_t* blocks, int64_t cols, uint8_t* packed, uint8_t* scales);

}  // namespace k3::tools
