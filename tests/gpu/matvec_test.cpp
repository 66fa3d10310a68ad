// The matrix kernel of every GPU weight type against the CPU's reference product
// (kernels::matmul_reference: dequantize with quant/, dot in double). The GPU sums in float32,
// so the bound is relative: the error of an n-term float32 sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/matrix.h"
#include "gpu_fixture.h"
#include "kernels/matmul.h"
#include "quant/codec.h"

namespace k3::gpu {
namespace {

using quant::Type;

struct Case {
  Type type;
  int64_t rows, cols;
};

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = nd(rng);
  return v;
}

// Max over outputs of |gpu − ref| / (Σ_k |W||x| of that output): the float32 bound.
void expect_matches_reference(Device& dev, const Case& c, uint32_t n_tok, size_t max_part_bytes) {
  const std::vector<float> wf = random_floats(static_cast<size_t>(c.rows * c.cols), 1);
  const size_t rb = quant::row_bytes(c.type, c.cols);
  std::vector<uint8_t> wq(rb * static_cast<size_t>(c.rows));
  if (quant::can_quantize(c.type)) {
    const std::vector<float> imatrix(static_cast<size_t>(c.cols), 1.0f);  // the grid types need one
    quant::quantize_rows(c.type, wf.data(), wq.data(), c.rows, c.cols,
                         quant::requires_imatrix(c.type) ? imatrix.data() : nullptr);
  } else {
    // Q4_1, Q5_1: no quantizer here; random blocks whose two f16 fields (d, m) are sane.
    std::mt19937 rng(3);
    for (uint8_t& b : wq) b = static_cast<uint8_t>(rng());
    const size_t bb = quant::block_bytes(c.type);
    for (size_t o = 0; o + bb <= wq.size(); o += bb)
      for (int f = 0; f < 2; ++f) {
        const uint16_t h = quant::fp32_to_fp16(0.01f * (static_cast<float>(rng() % 200) - 100.0f));
        std::memcpy(&wq[o + 2 * f], &h, 2);
      }
  }
  const size_t x_stride = static_cast<size_t>(c.cols) + 3, y_stride = static_cast<size_t>(c.rows) + 5;
  const std::vector<float> x = random_floats(x_stride * n_tok, 2);

  Matrix m = upload_matrix(dev, c.type, wq.data(), c.rows, c.cols, rb, "test matrix", max_part_bytes);
  if (max_part_bytes) { EXPECT_GT(m.parts.size(), 1u); }
  Buffer xb = dev.alloc(x.size() * 4, "x"), yb = dev.alloc(y_stride * n_tok * 4, "y");
  dev.upload(xb, 0, x.data(), x.size() * 4);
  Recorder rec(dev);
  record_matvec(rec, m, {&xb}, x_stride, {&yb}, y_stride, n_tok);
  dev.submit(rec);
  std::vector<float> y(y_stride * n_tok);
  dev.download(yb, 0, y.data(), y.size() * 4);
  // A range of rows (an expert's slice of a stacked tensor), across part boundaries when split:
  // the same sums, bit for bit.
  {
    const int64_t r0 = c.rows / 5, nr = c.rows / 2;
    Buffer sub = dev.alloc(static_cast<size_t>(nr) * n_tok * 4, "y rows");
    Recorder rows(dev);
    record_matvec(rows, m, {&xb}, x_stride, {&sub}, static_cast<size_t>(nr), n_tok, r0, nr);
    dev.submit(rows);
    std::vector<float> ys(static_cast<size_t>(nr) * n_tok);
    dev.download(sub, 0, ys.data(), ys.size() * 4);
    for (uint32_t t = 0; t < n_tok; ++t)
      for (int64_t i = 0; i < nr; ++i)
        ASSERT_EQ(ys[t * nr + i], y[t * y_stride + r0 + i]) << "row " << r0 + i;
  }

  kernels::WeightView wv{c.type, wq.data(), c.cols, c.rows, rb};
  std::vector<float> ref(y_stride * n_tok);
  kernels::matmul_reference(wv, x.data(), n_tok, ref.data(), static_cast<int64_t>(x_stride),
                            static_cast<int64_t>(y_stride));
  // Σ|W||x| per output, from the dequantized rows.
  std::vector<float> row(static_cast<size_t>(c.cols));
  double worst = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    quant::dequantize_row(c.type, wq.data() + r * rb, row.data(), c.cols);
    for (uint32_t t = 0; t < n_tok; ++t) {
      double mag = 0;
      for (int64_t k = 0; k < c.cols; ++k) mag += std::fabs(double(row[k]) * x[t * x_stride + k]);
      const double err =
          std::fabs(double(y[t * y_stride + r]) - ref[t * y_stride + r]) / std::max(mag, 1e-30);
      worst = std::max(worst, err);
    }
  }
  // 64 float32 partial sums of cols/64 terms, then a 6-level tree: far below 1e-5 relative.
  EXPECT_LT(worst, 1e-5) << quant::type_name(c.type) << " " << c.rows << "x" << c.cols;
}

class GpuMatvec : public ::testing::TestWithParam<Type> {};

TEST_P(GpuMatvec, MatchesReferenceOneToken) {
  K3_NEED_GPU(dev);
  expect_matches_reference(*dev, {GetParam(), 67, 512}, 1, 0);
}

TEST_P(GpuMatvec, MatchesReferenceSeveralTokensStrided) {
  K3_NEED_GPU(dev);
  expect_matches_reference(*dev, {GetParam(), 33, 768}, 3, 0);
}

TEST_P(GpuMatvec, MatchesReferenceSplitIntoParts) {
  K3_NEED_GPU(dev);
  const size_t rb = quant::row_bytes(GetParam(), 256);
  expect_matches_reference(*dev, {GetParam(), 50, 256}, 2, rb * 7);  // 8 parts of ≤ 7 rows
}

INSTANTIATE_TEST_SUITE_P(Types, GpuMatvec,
                         ::testing::Values(Type::F32, Type::F16, Type::BF16, Type::Q8_0, Type::Q4_0,
                                           Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q2_K, Type::Q3_K,
                                           Type::Q4_K, Type::Q5_K, Type::Q6_K, Type::IQ4_NL, Type::IQ4_XS,
                                           Type::MXFP4, Type::IQ2_XXS, Type::IQ1_S, Type::IQ1_M),
                         [](const auto& info) { return std::string(quant::type_name(info.param)); });

// A matrix larger than the device's binding limit (lavapipe: 128 MiB) is split by the limit
// itself, not by a test knob.
TEST(GpuMatvecLarge, MatrixBeyondTheBindingLimitIsSplit) {
  K3_NEED_GPU(dev);
  const uint64_t limit = dev->info().max_binding_bytes;
  if (limit > (512ull << 20))
    GTEST_SKIP() << "binding limit " << (limit >> 20) << " MiB: the test would be too large";
  const int64_t cols = 4096;
  const int64_t rows = static_cast<int64_t>(limit / (cols * 4)) + 100;
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) w[r * cols + k] = float((r * 7 + k * 3) % 17) - 8.0f;
  std::vector<float> x(static_cast<size_t>(cols));
  for (int64_t k = 0; k < cols; ++k) x[k] = float(k % 5) - 2.0f;
  Matrix m = upload_matrix(*dev, Type::F32, w.data(), rows, cols, cols * 4, "large matrix");
  ASSERT_EQ(m.parts.size(), 2u);
  Buffer xb = dev->alloc(x.size() * 4, "x"), yb = dev->alloc(rows * 4, "y");
  dev->upload(xb, 0, x.data(), x.size() * 4);
  Recorder rec(*dev);
  record_matvec(rec, m, {&xb}, 0, {&yb}, 0, 1);
  dev->submit(rec);
  std::vector<float> y(static_cast<size_t>(rows));
  dev->download(yb, 0, y.data(), y.size() * 4);
  // Small integers: every partial sum is exact in float32, so equality is the test.
  for (int64_t r : {int64_t{0}, m.parts[1].first_row - 1, m.parts[1].first_row, rows - 1}) {
    double s = 0;
    for (int64_t k = 0; k < cols; ++k) s += double(w[r * cols + k]) * x[k];
    EXPECT_EQ(y[r], static_cast<float>(s)) << "row " << r;
  }
}

}  // namespace
}  // namespace k3::gpu
