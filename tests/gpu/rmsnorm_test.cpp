// The RMSNorm shader (the first element-wise op of the whole-layer GPU path, docs/gpu.md)
// against kernels::rmsnorm_rows, the CPU's (double sums, rounded to float): float32 sums here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gpu_fixture.h"
#include "kernels/norms.h"

namespace k3::gpu {
namespace {

TEST(GpuRmsnorm, MatchesTheCpuTwinOnStridedRows) {
  K3_NEED_GPU(dev);
  const uint32_t rows = 5, width = 1000, xs = 1003, ys = 1010;
  const float eps = 1e-6f;
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> x(rows * xs), g(width);
  for (float& v : x) v = nd(rng);
  for (float& v : g) v = 1.0f + 0.1f * nd(rng);
  Buffer xb = dev->alloc(x.size() * 4, "x"), gb = dev->alloc(g.size() * 4, "g"),
         yb = dev->alloc(rows * ys * 4, "y");
  dev->upload(xb, 0, x.data(), x.size() * 4);
  dev->upload(gb, 0, g.data(), g.size() * 4);
  struct Push {
    uint32_t width, x_stride, y_stride;
    float eps;
  } push{width, xs, ys, eps};
  Recorder rec(*dev);
  rec.dispatch("rmsnorm", {{&xb}, {&gb}, {&yb}}, push, rows);
  dev->submit(rec);
  std::vector<float> y(rows * ys), ref(rows * ys);
  dev->download(yb, 0, y.data(), y.size() * 4);
  kernels::rmsnorm_rows(x.data(), ref.data(), rows, width, g.data(), eps, xs, ys);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < width; ++i)
      ASSERT_NEAR(y[r * ys + i], ref[r * ys + i], 2e-6f * std::fabs(ref[r * ys + i]) + 1e-7f)
          << r << "," << i;
}

}  // namespace
}  // namespace k3::gpu
