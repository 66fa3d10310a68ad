// tools/convert/plan: one GGUF tensor to produce from safetensors sources (a Plan), and the
// streaming write of a planned file; shared by the text converter (convert.cpp) and the mmproj
// converter (vision.cpp).
// Contract: a Plan has exactly one source — `raw` (bytes already in the output encoding),
// `row_f32` (row r as ne0 floats, encoded here to the plan's type) or `row_bytes` (row r
// already encoded). write_plans() encodes the rows of each tensor in parallel, writes through
// the atomic GGUF writer (temporaries renamed only on success) and reports progress; an
// encoding error (a NaN for Q8_0) throws k3::Error naming the tensor and row.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "quant/types.h"
#include "tools/convert/safetensors.h"

namespace k3::tools {

struct Plan {
  std::string name;
  std::vector<int64_t> ne;
  quant::Type type = quant::Type::F32;
  int64_t ne0 = 0, nrows = 0;
  const uint8_t* raw = nullptr;                      // bytes already in the output encoding
  std::function<void(int64_t, float*)> row_f32;      // row r as floats (ne0 of them)
  std::function<void(int64_t, uint8_t*)> row_bytes;  // row r already encoded
  uint64_t bytes_in = 0;
};

// Element i of a F32/F16/BF16 tensor as a float (any other dtype throws, naming the tensor).
float elem_f32(const StTensor& t, int64_t i);
// n elements from `off` as floats.
void read_f32(const StTensor& t, int64_t off, int64_t n, float* dst);
// True when the safetensors dtype is byte-for-byte the GGUF type (F32, F16, BF16).
bool same_encoding(StDtype s, quant::Type t);
// general.file_type for an --outtype (LLAMA_FTYPE_*); MXFP4 experts make it MOSTLY_MXFP4_MOE.
uint32_t file_type_of(quant::Type outtype, bool mxfp4);

struct WritePlansOptions {
  uint64_t split_max_bytes = 0;  // 0: one file
  int threads = 0;               // 0: default
  bool verbose = false;          // one line per tensor
  bool progress = false;         // progress bar on stderr
};

struct WritePlansResult {
  std::vector<std::string> files;
  uint64_t bytes_in = 0, bytes_out = 0;
};

WritePlansResult write_plans(const std::string& out_path,
                             const std::vector<std::pair<std::string, gguf::Value>>& kvs,
                             const std::vector<Plan>& plans, const WritePlansOptions& opt);

}  // namespace k3::tools
