// matmul dispatch: every fast type and shape class (decode, prefill tiles with a ragged last
// token group, strided x/y, one and two threads) against the scalar twins applied row by row,
// and the fallback types against matmul_reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_batch.h"
#include "kernels/random_weights.h"
#include "kernels/vec_dot.h"
#include "quant/codec.h"

namespace k3::kernels {
namespace {

using quant::Type;

struct Matrix {
  std::vector<uint8_t> bytes;
  std::vector<float> deq;  // rows × cols
  WeightView view;
};

Matrix random_matrix(Type t, int64_t rows, int64_t cols, std::mt19937& rng) {
  Matrix m;
  const size_t rb = quant::row_bytes(t, cols);
  m.bytes.resize(rb * static_cast<size_t>(rows));
  m.deq.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = test::random_row(t, cols, rng);
    std::copy(row.begin(), row.end(), m.bytes.begin() + static_cast<std::ptrdiff_t>(r * rb));
    quant::dequantize_row(t, row.data(), m.deq.data() + r * cols, cols);
  }
  m.view = WeightView{t, m.bytes.data(), cols, rows, rb};
  return m;
}

void check_against_twins(Type t, int64_t rows, int64_t cols, int64_t n_tok, ThreadPool* pool) {
  std::mt19937 rng(static_cast<uint32_t>(rows * 131 + n_tok * 7 + static_cast<int64_t>(t)));
  const Matrix m = random_matrix(t, rows, cols, rng);
  const int64_t xs = cols + 3, ys = rows + 5;  // strided on purpose
  std::vector<float> x(static_cast<size_t>(n_tok * xs), 0.0f);
  for (int64_t tk = 0; tk < n_tok; ++tk) {
    const auto row = test::random_acts(cols, rng);
    std::copy(row.begin(), row.end(), x.begin() + tk * xs);
  }
  std::vector<float> y(static_cast<size_t>(n_tok * ys), -777.0f);
  matmul(m.view, x.data(), n_tok, y.data(), pool, xs, ys);

  const DotKernel* k = dot_kernel(t);
  ASSERT_NE(k, nullptr);
  std::vector<uint8_t> act(act_row_bytes(k->act, cols));
  for (int64_t tk = 0; tk < n_tok; ++tk) {
    quantize_act_row(k->act, x.data() + tk * xs, act.data(), cols);
    for (int64_t r = 0; r < rows; ++r) {
      const float want = k->dot_scalar(cols, m.view.row(r), act.data());
      double mag = 0;
      for (int64_t c = 0; c < cols; ++c) mag += std::fabs(m.deq[r * cols + c] * x[tk * xs + c]);
      ASSERT_NEAR(y[tk * ys + r], want, 2e-6 * mag + 1e-30)
          << quant::type_name(t) << " rows=" << rows << " n_tok=" << n_tok << " r=" << r << " t=" << tk;
    }
    for (int64_t r = rows; r < ys; ++r) ASSERT_EQ(y[tk * ys + r], -777.0f) << "wrote past the row";
  }
}

class MatmulFast : public ::testing::TestWithParam<Type> {};

TEST_P(MatmulFast, DecodeAndPrefillMatchTwins) {
  ThreadPool pool(2);
  const Type t = GetParam();
  const int64_t cols = quant::type_info(t).block_elems == 1 ? 300 : 512;
  for (int64_t n_tok : {1, 2, 5, 9}) {
    check_against_twins(t, 37, cols, n_tok, &pool);
    check_against_twins(t, 37, cols, n_tok, nullptr);
  }
  check_against_twins(t, 1, cols, 3, &pool);
  check_against_twins(t, 21, cols, 300, &pool);  // more tokens than the gemm form takes at once
}

INSTANTIATE_TEST_SUITE_P(AllFastTypes, MatmulFast,
                         ::testing::Values(Type::F32, Type::F16, Type::BF16, Type::Q8_0, Type::MXFP4,
                                           Type::Q2_K, Type::Q3_K, Type::Q4_K, Type::Q6_K, Type::IQ2_XXS,
                                           Type::IQ2_XS, Type::IQ1_S, Type::IQ1_M),
                         [](const auto& info) { return std::string(quant::type_name(info.param)); });

TEST(Matmul, FallbackTypesEqualReference) {
  ThreadPool pool(2);
  std::mt19937 rng(3);
  for (Type t : {Type::Q5_K, Type::IQ4_XS, Type::Q4_0}) {
    const Matrix m = random_matrix(t, 19, 512, rng);
    std::vector<float> x = test::random_acts(512 * 3, rng);
    std::vector<float> y(19 * 3), ref(19 * 3);
    matmul(m.view, x.data(), 3, y.data(), &pool);
    matmul_reference(m.view, x.data(), 3, ref.data());
    EXPECT_EQ(y, ref) << quant::type_name(t);
  }
}

TEST(Matmul, F32MatchesFloat64WithinGoldenBudget) {
  // F32 golden models need NMSE ≤ 1e-9 end to end; one matmul must be orders better.
  ThreadPool pool(2);
  std::mt19937 rng(8);
  const int64_t rows = 64, cols = 1000, n_tok = 6;
  const Matrix m = random_matrix(Type::F32, rows, cols, rng);
  std::vector<float> x = test::random_acts(cols * n_tok, rng);
  std::vector<float> y(static_cast<size_t>(rows * n_tok));
  matmul(m.view, x.data(), n_tok, y.data(), &pool);
  double err = 0, norm = 0;
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double exact = 0;
      for (int64_t c = 0; c < cols; ++c) exact += static_cast<double>(m.deq[r * cols + c]) * x[t * cols + c];
      err += (y[t * rows + r] - exact) * (y[t * rows + r] - exact);
      norm += exact * exact;
    }
  EXPECT_LT(err / norm, 1e-12);
}

// A batch must give each job exactly what the job alone gives (same kernels, same rounding),
// whatever the mix: fast and fallback types, decode and prefill, fused pairs, strides, and
// slices that cut through the middle of a job.
TEST(MatmulBatch, EachJobEqualsItsOwnMatmul) {
  std::mt19937 rng(21);
  struct Spec {
    Type t;
    int64_t rows, cols, n_tok;
    bool fused;
  };
  const Spec specs[] = {
      {Type::Q8_0, 37, 512, 1, false}, {Type::IQ1_M, 29, 512, 1, true},  {Type::IQ2_XXS, 40, 256, 1, false},
      {Type::F32, 13, 300, 1, false},  {Type::Q5_K, 9, 256, 1, false},   {Type::Q8_0, 21, 256, 6, true},
      {Type::Q8_0, 70, 256, 11, true}, {Type::IQ1_S, 17, 512, 9, false}, {Type::Q5_K, 5, 256, 3, true}};
  const float beta = 4.0f;
  const GateUpFn act = [](const float* g, const float* u, float* y, int64_t n, const void* ctx) {
    for (int64_t i = 0; i < n; ++i) y[i] = g[i] * *static_cast<const float*>(ctx) + u[i];
  };
  std::vector<Matrix> gates, ups;
  std::vector<std::vector<float>> xs, want, got;
  for (const Spec& s : specs) {
    gates.push_back(random_matrix(s.t, s.rows, s.cols, rng));
    ups.push_back(random_matrix(s.t, s.rows, s.cols, rng));
    xs.push_back(test::random_acts(s.cols * s.n_tok + 7, rng));
  }
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), new ThreadPool(2)}) {
    std::vector<MatmulJob> jobs;
    want.clear();
    got.clear();
    for (size_t i = 0; i < std::size(specs); ++i) {
      const Spec& s = specs[i];
      const int64_t ys = s.rows + 3;  // strided output
      want.emplace_back(static_cast<size_t>(ys * s.n_tok), -5.0f);
      got.emplace_back(want.back());
      if (s.fused) {
        std::vector<float> g(static_cast<size_t>(s.rows * s.n_tok)), u(g.size());
        matmul(gates[i].view, xs[i].data(), s.n_tok, g.data(), pool);
        matmul(ups[i].view, xs[i].data(), s.n_tok, u.data(), pool);
        for (int64_t t = 0; t < s.n_tok; ++t)
          for (int64_t r = 0; r < s.rows; ++r)
            act(&g[t * s.rows + r], &u[t * s.rows + r], &want[i][t * ys + r], 1, &beta);
      } else {
        matmul(gates[i].view, xs[i].data(), s.n_tok, want[i].data(), pool, -1, ys);
      }
      MatmulJob j;
      j.w = gates[i].view;
      if (s.fused) {
        j.up = &ups[i].view;
        j.act = act;
        j.act_ctx = &beta;
      }
      j.x = xs[i].data();
      j.n_tok = s.n_tok;
      j.y = got[i].data();
      j.y_stride = ys;
      jobs.push_back(j);
    }
    matmul_batch(jobs, pool);
    for (size_t i = 0; i < std::size(specs); ++i)
      EXPECT_EQ(got[i], want[i]) << "job " << i << " " << quant::type_name(specs[i].t)
                                 << (pool ? " pool" : " serial");
    delete pool;
  }
}

}  // namespace
}  // namespace k3::kernels

namespace k3::kernels {
namespace {

// A shape the model should have refused at bind time stops the product at its entry
// (K3_ASSERT) instead of reading past a row: weight rows shorter than their encoding, output
// rows that overlap, a fused pair of different shapes.
TEST(MatmulDeathTest, ShapesAreCheckedAtTheKernelEntry) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::mt19937 rng(7);
  const Matrix m = random_matrix(quant::Type::Q8_0, 8, 64, rng);
  std::vector<float> x(64 * 2, 0.5f), y(8 * 2);
  WeightView short_rows = m.view;
  short_rows.row_stride = quant::row_bytes(quant::Type::Q8_0, 64) - 1;
  EXPECT_DEATH(matmul(short_rows, x.data(), 1, y.data(), nullptr), "weight rows shorter than their columns");
  EXPECT_DEATH(matmul(m.view, x.data(), 2, y.data(), nullptr, 64, 4), "output rows overlap");
  const Matrix other = random_matrix(quant::Type::Q8_0, 4, 64, rng);
  MatmulJob j;
  j.w = m.view;
  j.up = &other.view;
  j.act = [](const float*, const float*, float*, int64_t, const void*) {};
  j.x = x.data();
  j.n_tok = 1;
  j.y = y.data();
  EXPECT_DEATH(matmul_batch({&j, 1}, nullptr), "a fused pair of different shapes");
  matmul(m.view, x.data(), 2, y.data(), nullptr);  // the same product, well formed, runs
}

}  // namespace
}  // namespace k3::kernels
