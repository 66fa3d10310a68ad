// tools/quantize: `k3 quantize` — requantizes a GGUF model tensor by tensor with llama-quantize's
// rules (tools/quantize/quant_recipe.h) and our reference quantizers (quant/codec.h).
// Contract: plan_quantize() decides every output type and checks everything it can before a
// byte is written (type names, regexes, requantize permission, imatrix presence and sizes,
// shapes); it throws k3::Error naming the tensor at fault. quantize_model() then streams: one
// output tensor is produced at a time inside the writer's fill callback, expert slices and
// row chunks spread over a thread pool, each slice with its own imatrix slice, so the bytes do
// not depend on the thread count. Output goes to temporary files renamed only when every shard
// is complete: a failure or a kill leaves nothing under the final name(s).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "gguf/writer.h"
#include "quant/types.h"
#include "tools/quantize/quant_recipe.h"

namespace k3 {
class ThreadPool;
}
namespace k3::gguf {
class GgufFile;
struct TensorInfo;
}  // namespace k3::gguf

namespace k3::tools {

struct Imatrix;

struct QuantizeOptions {
  std::string input, output;
  std::string type = "Q8_0";  // a recipe name (quant_recipe.h)
  std::string imatrix;        // path; empty: none
  // No calibration data: every column of every tensor gets importance 1 (so the IQ types,
  // which refuse to run without an imatrix, can be made — e.g. as the "no imatrix" side of
  // an A/B comparison). Excludes `imatrix`; no quantize.imatrix.* keys are written.
  bool uniform_imatrix = false;
  // With `imatrix`: tensors it has no entry for (token_embd.weight, which no matmul reads, and
  // any tensor the calibration never reached) get importance 1 — the weighted quantizer with
  // equal weights — instead of the unweighted reference quantizer that llama-quantize uses for
  // them. Not byte-identical to llama-quantize for those tensors (docs/quantize.md).
  bool uniform_missing = false;
  std::vector<std::string> tensor_types;  // "REGEX=TYPE", first match wins
  bool pure = false;
  std::optional<quant::Type> output_tensor_type, token_embedding_type;
  gguf::SplitOptions split;
  bool allow_requantize = false;
  bool avoid_unsafe_gpu = false;
  int threads = 0;        // 0: ThreadPool::default_threads()
  bool progress = false;  // progress bar on stderr
  // Called after each output tensor's bytes are produced, in output order (tests inject
  // failures here; the CLI does not use it).
  std::function<void(const std::string& name, size_t index, size_t count)> on_tensor;
};

struct TensorPlan {
  std::string name;
  std::vector<int64_t> ne;
  quant::Type from = quant::Type::F32, to = quant::Type::F32;
  std::string rule;      // why `to` was chosen
  bool convert = false;  // to != from: dequantize + quantize
  bool imatrix = false;  // an imatrix entry is used
  uint64_t bytes_in = 0, bytes_out = 0;
  size_t input_index = 0;  // index into GgufFile::tensors()
};

struct QuantizePlan {
  Recipe recipe;
  std::vector<std::pair<std::string, gguf::Value>> kvs;  // output metadata
  std::vector<TensorPlan> tensors;                       // output order
  uint64_t bytes_in = 0, bytes_out = 0;
};

// `im` may be null. Throws k3::Error for anything that would make the run fail.
QuantizePlan plan_quantize(const gguf::GgufFile& in, const QuantizeOptions& opt, const Imatrix* im);

// The imatrix of QuantizeOptions::uniform_imatrix for `in`: for every tensor of two or more
// dimensions, ne[0]·ne[2] values of 1.
Imatrix uniform_imatrix(const gguf::GgufFile& in);

// The importance matrix the options ask for: the --imatrix file, the uniform one, or the file
// completed with uniform entries (uniform_missing); null when none.
std::unique_ptr<Imatrix> importance_for(const QuantizeOptions& opt, const gguf::GgufFile& in);

struct QuantizeResult {
  QuantizePlan plan;
  std::vector<std::string> files;
  double seconds = 0;
  int threads = 1;
};
QuantizeResult quantize_model(const QuantizeOptions& opt);

// Converts one tensor to `to` into dst (row_bytes(to, ne0)·rows bytes): every expert slice
// (ne[2]) with its own imatrix slice imatrix + i2·ne[0] (imatrix may be null), rows in
// chunks over the pool.
void convert_tensor(const gguf::TensorInfo& src, quant::Type to, const float* imatrix, uint8_t* dst,
                    ThreadPool& pool);

}  // namespace k3::tools
