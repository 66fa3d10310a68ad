// The IQ1_M and IQ2_XXS decode layouts (kernels/decode_layout.h): the rewritten rows give the
// file layout's one-token results bit for bit, in the scalar twins and in the SIMD rows kernels,
// and matmul reads the decode copy where a view has one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/act_quant.h"
#include "kernels/decode_layout.h"
#include "kernels/matmul.h"
#include "kernels/random_weights.h"
#include "kernels/vec_dot.h"
#include "kernels/vec_dot_impl.h"
#include "quant/types.h"

namespace k3::kernels {
namespace {

using quant::Type;

struct Rows {
  int64_t n = 0, rows = 0;
  std::vector<uint8_t> file, decode;
  size_t rs = 0, ds = 0;
};

Rows random_rows(int64_t n, int64_t rows, std::mt19937& rng, Type t = Type::IQ1_M) {
  Rows m;
  m.n = n;
  m.rows = rows;
  m.rs = quant::row_bytes(t, n);
  m.ds = decode_row_bytes(t, n);
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<uint8_t> row = test::random_row(t, n, rng);
    m.file.insert(m.file.end(), row.begin(), row.end());
  }
  m.decode.assign(m.ds * static_cast<size_t>(rows), 0xA5);
  repack_for_decode(t, m.file.data(), m.decode.data(), rows * (n / 256));
  return m;
}

// The types with a decode layout and their one-token scalar twins (file layout, decode layout;
// IQ1_S rows take IQ1_M's layout).
struct LayoutCase {
  Type type;
  DotScalarFn file_twin, decode_twin;
};
const LayoutCase kCases[] = {{Type::IQ1_M, impl::dot_iq1_m_scalar, dot_iq1_m_decode_scalar},
                             {Type::IQ2_XXS, impl::dot_iq2_xxs_scalar, dot_iq2_xxs_decode_scalar},
                             {Type::IQ1_S, impl::dot_iq1_s_scalar, dot_iq1_m_decode_scalar}};

// A type's one-token products of several rows through its table kernel: dot_rows where it has
// one, else dot row by row.
void file_rows(const DotKernel& k, int64_t n, const uint8_t* w, size_t rs, int64_t rows, const void* act,
               float* out) {
  if (k.dot_rows) return k.dot_rows(n, w, rs, rows, act, out);
  for (int64_t r = 0; r < rows; ++r) k.dot(n, w + r * rs, act, 0, 1, out + r);
}

std::vector<uint8_t> q8k_acts(int64_t n, std::mt19937& rng) {
  const std::vector<float> x = test::random_acts(n, rng);
  std::vector<uint8_t> act(act_row_bytes(ActFormat::Q8_K, n));
  quantize_act_row(ActFormat::Q8_K, x.data(), act.data(), n);
  return act;
}

TEST(DecodeLayout, SizesAndTypes) {
  EXPECT_EQ(sizeof(Iq1mDecodeBlock), 80u);
  EXPECT_EQ(decode_row_bytes(Type::IQ1_M, 1024), 4u * 80u);
  EXPECT_EQ(sizeof(Iq2xxsDecodeBlock), 144u);
  EXPECT_EQ(decode_row_bytes(Type::IQ2_XXS, 1024), 4u * 144u);
  EXPECT_EQ(decode_row_bytes(Type::IQ1_S, 1024), 4u * 80u);
  EXPECT_EQ(decode_row_bytes(Type::IQ2_XS, 1024), 0u);
  EXPECT_EQ(decode_row_bytes(Type::Q8_0, 1024), 0u);
}

// The scalar twin over the rewritten blocks is the type's scalar twin over the file's, bit for
// bit: same integer sums, same float step.
TEST(DecodeLayout, ScalarTwinEqualsFileLayout) {
  std::mt19937 rng(77);
  for (const LayoutCase& c : kCases)
    for (int64_t n : {256, 1024, 7168}) {
      const Rows m = random_rows(n, 6, rng, c.type);
      const std::vector<uint8_t> act = q8k_acts(n, rng);
      for (int64_t r = 0; r < m.rows; ++r) {
        const float want = c.file_twin(n, m.file.data() + r * m.rs, act.data());
        const float got = c.decode_twin(n, m.decode.data() + r * m.ds, act.data());
        EXPECT_EQ(std::memcmp(&want, &got, sizeof want), 0)
            << quant::type_name(c.type) << " n=" << n << " row " << r << ": " << want << " vs " << got;
      }
    }
}

// Each weight's value survives the rewrite: a one-hot activation picks single weights out of
// the decode-layout product, which must match the file layout's.
TEST(DecodeLayout, OneHotActivationsPickEachWeight) {
  std::mt19937 rng(5);
  const int64_t n = 256;
  for (const LayoutCase& c : kCases) {
    const Rows m = random_rows(n, 1, rng, c.type);
    for (int64_t i = 0; i < n; ++i) {
      std::vector<float> x(n, 0.0f);
      x[i] = 1.0f;
      std::vector<uint8_t> act(act_row_bytes(ActFormat::Q8_K, n));
      quantize_act_row(ActFormat::Q8_K, x.data(), act.data(), n);
      const float want = c.file_twin(n, m.file.data(), act.data());
      const float got = c.decode_twin(n, m.decode.data(), act.data());
      ASSERT_EQ(want, got) << quant::type_name(c.type) << " weight " << i;
    }
  }
}

// The SIMD rows kernel over the decode layout equals the file layout's rows kernel bit for bit,
// for row counts around the group size and short and long rows, where the kernel path has one
// (IQ2_XXS: not on AVX-512, which decodes the file's layout).
TEST(DecodeLayout, RowsKernelEqualsFileLayout) {
  std::mt19937 rng(99);
  int with_kernel = 0;
  for (const LayoutCase& c : kCases) {
    const DotKernel* k = dot_kernel(c.type);
    ASSERT_NE(k, nullptr);
    if (!k->dot_rows_decode) continue;
    ++with_kernel;
    for (int64_t n : {256, 1024, 2048 + 512}) {
      for (int64_t rows : {1, 3, 4, 5, 9, 17}) {
        const Rows m = random_rows(n, rows, rng, c.type);
        const std::vector<uint8_t> act = q8k_acts(n, rng);
        std::vector<float> want(static_cast<size_t>(rows)), got(static_cast<size_t>(rows), -1.0f);
        file_rows(*k, n, m.file.data(), m.rs, rows, act.data(), want.data());
        k->dot_rows_decode(n, m.decode.data(), m.ds, rows, act.data(), got.data());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
            << quant::type_name(c.type) << " n=" << n << " rows=" << rows;
        for (int64_t r = 0; r < rows; ++r) {  // and the scalar twin, within float summation order
          const float s = c.decode_twin(n, m.decode.data() + r * m.ds, act.data());
          EXPECT_NEAR(got[r], s, 1e-4f * (1.0f + std::abs(s)));
        }
      }
    }
  }
  if (with_kernel == 0) GTEST_SKIP() << "no decode-layout kernel in the portable build";
}

#if defined(K3_SIMD_X86)
// Every x86 decode-layout kernel this CPU can run (AVX2 always; AVX-512 where it has it), called
// directly whatever the kernel path, equals the AVX2 file-layout rows kernel bit for bit. Sign
// and delta patterns are random, so each of the 64 delta bits and each code bit pair is hit.
TEST(DecodeLayout, EachX86KernelEqualsAvx2FileLayout) {
  std::mt19937 rng(2024);
  struct Kernel {
    Type type;
    DotRowsFn file, decode;
  };
  // IQ1_S has no AVX2 rows kernel: its one-token dot row by row
  const DotRowsFn iq1_s_rows = [](int64_t n, const void* w, size_t rs, int64_t rows, const void* act,
                                  float* out) {
    for (int64_t r = 0; r < rows; ++r)
      impl::dot_iq1_s(n, static_cast<const uint8_t*>(w) + r * rs, act, 0, 1, out + r);
  };
  std::vector<Kernel> kernels = {{Type::IQ1_M, impl::dot_rows_iq1_m, impl::dot_rows_iq1_m_decode},
                                 {Type::IQ2_XXS, impl::dot_rows_iq2_xxs, impl::dot_rows_iq2_xxs_decode},
                                 {Type::IQ1_S, iq1_s_rows, impl::dot_rows_iq1_m_decode}};
  if (impl::cpu_has_avx512_iq()) {
    kernels.push_back({Type::IQ1_M, impl::dot_rows_iq1_m, impl::dot_rows_iq1_m_decode_avx512});
    kernels.push_back({Type::IQ1_S, iq1_s_rows, impl::dot_rows_iq1_m_decode_avx512});
  }
  for (const Kernel& k : kernels)
    for (int64_t n : {256, 768, 7168}) {
      for (int64_t rows : {1, 2, 3, 7}) {
        const Rows m = random_rows(n, rows, rng, k.type);
        const std::vector<uint8_t> act = q8k_acts(n, rng);
        std::vector<float> want(static_cast<size_t>(rows)), got(static_cast<size_t>(rows), -1.0f);
        k.file(n, m.file.data(), m.rs, rows, act.data(), want.data());
        k.decode(n, m.decode.data(), m.ds, rows, act.data(), got.data());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
            << quant::type_name(k.type) << " n=" << n << " rows=" << rows;
      }
    }
}
#endif

// matmul takes a view's decode copy for one token and the file rows for several: a view whose
// decode copy holds another matrix gives that matrix's products at one token only.
TEST(DecodeLayout, MatmulReadsTheDecodeCopyForOneToken) {
  const DotKernel* k = dot_kernel(Type::IQ1_M);
  if (!k->dot_rows_decode) GTEST_SKIP() << "no decode-layout kernel in the portable build";
  std::mt19937 rng(3);
  const int64_t n = 1024, rows = 64;
  const Rows a = random_rows(n, rows, rng), b = random_rows(n, rows, rng);
  WeightView w{Type::IQ1_M, a.file.data(), n, rows, a.rs};
  WeightView wb{Type::IQ1_M, b.file.data(), n, rows, b.rs};
  const std::vector<float> x = test::random_acts(n * 2, rng);
  ThreadPool pool(2);
  std::vector<float> plain_b(rows), crossed(rows), prefill(2 * rows), prefill_a(2 * rows);
  matmul(wb, x.data(), 1, plain_b.data(), &pool);
  w.decode = b.decode.data();
  w.decode_stride = b.ds;
  matmul(w, x.data(), 1, crossed.data(), &pool);
  EXPECT_EQ(std::memcmp(plain_b.data(), crossed.data(), plain_b.size() * sizeof(float)), 0);
  matmul(w, x.data(), 2, prefill.data(), &pool);
  w.decode = nullptr;
  matmul(w, x.data(), 2, prefill_a.data(), &pool);
  EXPECT_EQ(std::memcmp(prefill.data(), prefill_a.data(), prefill.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace k3::kernels
