#include <vector>

#include "kernels/matmul.h"
#include "quant/codec.h"

namespace k3::kernels {

void matmul_reference(const WeightView& w, const float* x, int64_t n_tok, float* y, int64_t x_stride,
                      int64_t y_stride) {
  if (x_stride < 0) x_stride = w.cols;
  if (y_stride < 0) y_stride = w.rows;
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    quant::dequantize_row(w.type, w.row(r), row.data(), w.cols);
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* xt = x + t * x_stride;
      double acc = 0.0;
      for (int64_t k = 0; k < w.cols; ++k) acc += static_cast<double>(row[k]) * xt[k];
      y[t * y_stride + r] = static_cast<float>(acc);
    }
  }
}

}  // namespace k3::kernels
