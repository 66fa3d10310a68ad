// tools/quantize_imatrix: reads importance-matrix files for `k3 quantize`
// (docs/imatrix.md): llama.cpp's GGUF imatrix (general.type = "imatrix",
// NAME.in_sum2 + NAME.counts tensors) and the legacy .dat format.
// Contract: load_imatrix() returns, per weight-tensor name, the normalised importance values
// the quantizer uses: n_in·n_mat floats, in_sum2/count per expert, 1.0 for an expert that was
// never routed (GGUF); values/ncall (legacy). Malformed files throw k3::Error naming the file
// and the entry at fault.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace k3::tools {

struct ImatrixEntry {
  std::vector<float> values;  // n_in · n_mat
  int64_t n_in = 0;
  int64_t n_mat = 1;
  std::vector<int64_t> counts;  // per matrix (GGUF; legacy: ncall for every matrix)
};

struct Imatrix {
  std::string path;
  bool legacy = false;
  std::vector<std::string> datasets;
  uint32_t chunk_count = 0;
  uint32_t chunk_size = 0;
  std::map<std::string, ImatrixEntry, std::less<>> entries;

  const ImatrixEntry* find(const std::string& tensor_name) const;
};

Imatrix load_imatrix(const std::string& path);

// Writes `im` in the legacy .dat layout (values·ncall with ncall = chunk_count, so that a
// reload gives back the same normalised values); used to test the legacy reader.
void write_legacy_imatrix(const std::string& path, const Imatrix& im);

}  // namespace k3::tools
