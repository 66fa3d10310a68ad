// kernels/norms: see norms.h. Portable: the reduction is the only part worth vectorising, and
// it is reduce.h's.
#include "kernels/norms.h"

#include <algorithm>
#include <cmath>

#include "kernels/reduce.h"

namespace k3::kernels {

void rmsnorm_rows(const float* x, float* y, int64_t n_rows, int64_t n, const float* w, float eps,
                  int64_t x_stride, int64_t y_stride) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    const double ss = dot_f32_f64(xr, xr, n);
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      const double v = xr[i] * scale;
      yr[i] = static_cast<float>(w ? v * w[i] : v);
    }
  }
}

void l2norm(float* x, int64_t n, float eps) {
  const double ss = dot_f32_f64(x, x, n);
  const double scale = 1.0 / std::max(std::sqrt(ss), static_cast<double>(eps));
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * scale);
}

}  // namespace k3::kernels
