// gpu/matrix: a weight matrix on the device, and y = W·x recorded on it.
// Contract: a matrix is held as whole rows in one or more buffers, each no larger than the
// device's binding limit (lavapipe: 128 MiB), so any matrix the device's memory holds can be
// bound; a product records one dispatch per buffer. Types: those gpu_supports() says yes to;
// the decoding is the CPU's (quant/), the sums float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "quant/types.h"

namespace k3::gpu {

// True when the matrix kernels read `type`.
bool gpu_supports(quant::Type type);

struct Matrix {
  quant::Type type = quant::Type::F32;
  int64_t rows = 0, cols = 0;
  size_t row_bytes = 0;
  struct Part {
    Buffer buf;
    int64_t first_row = 0, rows = 0;
  };
  std::vector<Part> parts;
  Buffer tables;  // the type's codebook, for the grid types (empty otherwise)

  size_t bytes() const { return row_bytes * static_cast<size_t>(rows); }
};

// Uploads `rows` rows of `row_stride` bytes apart (row_bytes(type, cols) of each used).
// max_part_bytes: 0 = the device's binding limit (a smaller value: tests of the split path).
Matrix upload_matrix(Device& dev, quant::Type type, const void* data, int64_t rows, int64_t cols,
                     size_t row_stride, std::string_view what, size_t max_part_bytes = 0);

// y[t·y_stride + i] = Σ_k W[first_row + i][k]·x[t·x_stride + k] for t < n_tok, i < n_rows
// (n_rows < 0: to the last row); offsets in floats.
void record_matvec(Recorder& rec, const Matrix& w, const BufferRange& x, size_t x_stride,
                   const BufferRange& y, size_t y_stride, uint32_t n_tok, int64_t first_row = 0,
                   int64_t n_rows = -1);

}  // namespace k3::gpu
