// Fast dot products: SIMD kernels against their scalar twins (every type, 1..4 tokens), and
// the scalar twins against dequantize + float64 dot within the activation-rounding bound.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/act_quant.h"
#include "kernels/random_weights.h"
#include "kernels/vec_dot.h"
#include "kernels/vec_dot_impl.h"
#include "quant/blocks.h"
#include "quant/codec.h"

namespace k3::kernels {
namespace {

using quant::Type;

const Type kFastTypes[] = {Type::F32,    Type::F16,   Type::BF16, Type::Q8_0, Type::MXFP4,
                           Type::Q2_K,   Type::Q3_K,  Type::Q4_K, Type::Q6_K, Type::IQ2_XXS,
                           Type::IQ2_XS, Type::IQ1_S, Type::IQ1_M};

struct Case {
  std::vector<uint8_t> w;
  std::vector<float> wf;              // dequantized weights
  std::vector<std::vector<float>> x;  // kMaxDotTokens activation rows
  std::vector<uint8_t> act;           // converted activations, one row per token
  size_t act_stride = 0;
};

Case make_case(const DotKernel& k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  c.w = test::random_row(k.type, n, rng);
  c.wf.resize(static_cast<size_t>(n));
  quant::dequantize_row(k.type, c.w.data(), c.wf.data(), n);
  c.act_stride = act_row_bytes(k.act, n);
  c.act.resize(c.act_stride * kMaxDotTokens);
  for (int t = 0; t < kMaxDotTokens; ++t) {
    c.x.push_back(test::random_acts(n, rng));
    quantize_act_row(k.act, c.x[t].data(), c.act.data() + t * c.act_stride, n);
  }
  return c;
}

// Σ|w·x|: the scale against which float rounding is judged.
double magnitude(const std::vector<float>& w, const std::vector<float>& x) {
  double m = 0;
  for (size_t i = 0; i < w.size(); ++i) m += std::fabs(static_cast<double>(w[i]) * x[i]);
  return m;
}

class VecDot : public ::testing::TestWithParam<Type> {};

TEST_P(VecDot, SimdMatchesScalarTwin) {
  const DotKernel* k = dot_kernel(GetParam());
  ASSERT_NE(k, nullptr);
  for (int64_t n : {256, 1024, 2816}) {
    const Case c = make_case(*k, n, static_cast<uint32_t>(n) * 7 + static_cast<uint32_t>(GetParam()));
    for (int nt = 1; nt <= kMaxDotTokens; ++nt) {
      float out[kMaxDotTokens];
      k->dot(n, c.w.data(), c.act.data(), c.act_stride, nt, out);
      for (int t = 0; t < nt; ++t) {
        const float ref = k->dot_scalar(n, c.w.data(), c.act.data() + t * c.act_stride);
        const double tol = 2e-6 * magnitude(c.wf, c.x[t]) + 1e-30;
        EXPECT_NEAR(out[t], ref, tol)
            << quant::type_name(k->type) << " n=" << n << " nt=" << nt << " t=" << t;
      }
    }
  }
}

TEST_P(VecDot, ScalarTwinMatchesDequantizedDot) {
  const DotKernel* k = dot_kernel(GetParam());
  ASSERT_NE(k, nullptr);
  const int64_t n = 2048;
  const Case c = make_case(*k, n, 99u + static_cast<uint32_t>(GetParam()));
  const int64_t blk = k->act == ActFormat::Q8_0 ? 32 : 256;
  for (int t = 0; t < kMaxDotTokens; ++t) {
    const std::vector<float>& x = c.x[t];
    double exact = 0, bound = 0;
    for (int64_t b = 0; b < n; b += blk) {
      float amax = 0;
      for (int64_t i = b; i < b + blk; ++i) amax = std::max(amax, std::fabs(x[i]));
      for (int64_t i = b; i < b + blk; ++i) {
        exact += static_cast<double>(c.wf[i]) * x[i];
        // round-to-nearest onto a grid of step amax/127 moves each input by at most half a step
        if (k->act != ActFormat::F32) bound += std::fabs(c.wf[i]) * amax / 254.0;
      }
    }
    bound = bound * 1.001 + 1e-5 * magnitude(c.wf, x);
    const float got = k->dot_scalar(n, c.w.data(), c.act.data() + t * c.act_stride);
    EXPECT_NEAR(got, exact, bound) << quant::type_name(k->type) << " t=" << t;
    // The bound must be meaningful: well below the size of the dot's terms.
    EXPECT_LT(bound, 0.05 * magnitude(c.wf, x)) << quant::type_name(k->type);
  }
}

#if defined(K3_SIMD_X86)  // the x86 builds against each other (src/kernels/x86/)
// Two builds of one dot kernel give the same floats, bit for bit, for every token count.
void expect_same_bits(const Case& c, int64_t n, DotFn base, DotFn other, const std::string& what) {
  for (int nt = 1; nt <= kMaxDotTokens; ++nt) {
    float a[kMaxDotTokens], b[kMaxDotTokens];
    base(n, c.w.data(), c.act.data(), c.act_stride, nt, a);
    other(n, c.w.data(), c.act.data(), c.act_stride, nt, b);
    EXPECT_EQ(std::memcmp(a, b, sizeof(float) * static_cast<size_t>(nt)), 0)
        << what << " n=" << n << " nt=" << nt << ": " << a[0] << " vs " << b[0];
  }
}

// The AVX-VNNI builds (chosen at run time where the CPU has them) give the AVX2 kernels'
// results bit for bit, for every token count.
TEST(VecDotVnni, EqualsAvx2BitForBit) {
  if (!impl::cpu_has_avx_vnni()) GTEST_SKIP() << "this CPU has no AVX-VNNI";
  struct Pair {
    Type type;
    DotFn avx2, vnni;
  };
  for (const Pair& p : {Pair{Type::Q8_0, impl::dot_q8_0, impl::dot_q8_0_vnni},
                        Pair{Type::MXFP4, impl::dot_mxfp4, impl::dot_mxfp4_vnni}}) {
    const DotKernel* k = dot_kernel(p.type);
    ASSERT_NE(k, nullptr);
    for (int64_t n : {32, 96, 2816}) {
      const Case c = make_case(*k, n, 5u + static_cast<uint32_t>(n));
      expect_same_bits(c, n, p.avx2, p.vnni, quant::type_name(p.type));
    }
  }
}

// The AVX-512 builds of the 256-blocked types (IQ2_XXS, IQ2_XS, IQ1_M, IQ1_S, Q3_K) give the AVX2 kernels'
// results bit for bit (nt == 1 is the AVX-512 loop, nt > 1 the AVX2 one it delegates to; the
// multi-row forms: VecDotRows.EqualOneRowAtATime), and stay within the SIMD tolerance of the
// scalar twins. Row lengths: one super-block, an expert's 1024, and a hidden size of 7168.
TEST(VecDotAvx512, SuperBlockTypesEqualAvx2BitForBit) {
  if (!impl::cpu_has_avx512_iq()) GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/VBMI/VNNI";
  struct Pair {
    Type type;
    DotFn avx2, avx512;
  };
  for (const Pair& p : {Pair{Type::IQ2_XXS, impl::dot_iq2_xxs, impl::dot_iq2_xxs_avx512},
                        Pair{Type::IQ1_M, impl::dot_iq1_m, impl::dot_iq1_m_avx512},
                        Pair{Type::IQ1_S, impl::dot_iq1_s, impl::dot_iq1_s_avx512},
                        Pair{Type::IQ2_XS, impl::dot_iq2_xs, impl::dot_iq2_xs_avx512},
                        Pair{Type::Q3_K, impl::dot_q3_k, impl::dot_q3_k_avx512}}) {
    const DotKernel* k = dot_kernel(p.type);
    ASSERT_NE(k, nullptr);
    for (int64_t n : {256, 1024, 7168}) {
      for (uint32_t rep = 0; rep < 4; ++rep) {
        const Case c = make_case(*k, n, 17u * rep + static_cast<uint32_t>(n));
        expect_same_bits(c, n, p.avx2, p.avx512, fmt::format("{} rep={}", quant::type_name(p.type), rep));
        for (int nt = 1; nt <= kMaxDotTokens; ++nt) {
          float b[kMaxDotTokens];
          p.avx512(n, c.w.data(), c.act.data(), c.act_stride, nt, b);
          for (int t = 0; t < nt; ++t) {
            const float ref = k->dot_scalar(n, c.w.data(), c.act.data() + t * c.act_stride);
            EXPECT_NEAR(b[t], ref, 2e-6 * magnitude(c.wf, c.x[t]) + 1e-30)
                << quant::type_name(p.type) << " n=" << n << " nt=" << nt << " t=" << t;
          }
        }
      }
    }
  }
}

// IQ2_XXS's AVX-512 kernels find the grid bytes by gathers, by loads or from code tables
// (vec_dot_impl.h: cpu_iq_lookup; ctest runs this file every way). A random row meets only
// some of the 256 grid entries, so here the index bytes of 8 super-blocks name each entry
// once, in two orders, and the product must equal the AVX2 kernel's (which reads the grid
// from memory) bit for bit, one row and four rows at a time.
TEST(VecDotAvx512, Iq2xxsEveryGridEntry) {
  if (!impl::cpu_has_avx512_iq()) GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/VBMI/VNNI";
  const DotKernel* k = dot_kernel(Type::IQ2_XXS);
  ASSERT_NE(k, nullptr);
  const int64_t n = 2048;  // 8 super-blocks × 32 indices
  for (uint32_t order = 0; order < 2; ++order) {
    Case c = make_case(*k, n, 4242u + order);
    for (int64_t i = 0; i < 256; ++i) {  // index i: super-block i/32, group (i%32)/4, byte i%4
      const size_t at = sizeof(quant::blk::IQ2_XXS) * static_cast<size_t>(i / 32) +
                        offsetof(quant::blk::IQ2_XXS, qs) + static_cast<size_t>(8 * ((i % 32) / 4) + i % 4);
      c.w[at] = static_cast<uint8_t>(order == 0 ? i : 255 - i);
    }
    quant::dequantize_row(Type::IQ2_XXS, c.w.data(), c.wf.data(), n);
    float avx2 = 0, avx512 = 0;
    impl::dot_iq2_xxs(n, c.w.data(), c.act.data(), c.act_stride, 1, &avx2);
    impl::dot_iq2_xxs_avx512(n, c.w.data(), c.act.data(), c.act_stride, 1, &avx512);
    EXPECT_EQ(std::memcmp(&avx2, &avx512, sizeof avx2), 0) << avx2 << " vs " << avx512;
    std::vector<uint8_t> rows;
    for (int r = 0; r < 4; ++r) rows.insert(rows.end(), c.w.begin(), c.w.end());
    float four[4];
    impl::dot_rows_iq2_xxs_avx512(n, rows.data(), c.w.size(), 4, c.act.data(), four);
    for (float v : four) EXPECT_EQ(std::memcmp(&v, &avx2, sizeof v), 0) << v << " vs " << avx2;
    const float ref = k->dot_scalar(n, c.w.data(), c.act.data());
    EXPECT_NEAR(avx512, ref, 2e-6 * magnitude(c.wf, c.x[0]) + 1e-30);
  }
}

// The AVX-512 MXFP4 kernel gives the AVX2 and AVX-VNNI kernels' results bit for bit (nt == 1
// is the AVX-512 loop; its multi-row form is checked against that loop row by row in
// VecDotRows.EqualOneRowAtATime). Row lengths: one block, an odd count (a last single block),
// an expert's 2816 and a hidden size of 7168.
TEST(VecDotAvx512, Mxfp4EqualsAvx2BitForBit) {
  if (!impl::cpu_has_avx512_iq()) GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/VBMI/VNNI";
  const DotKernel* k = dot_kernel(Type::MXFP4);
  ASSERT_NE(k, nullptr);
  for (int64_t n : {32, 64, 96, 128, 160, 2816, 7168}) {
    for (uint32_t rep = 0; rep < 4; ++rep) {
      Case c = make_case(*k, n, 31u * rep + static_cast<uint32_t>(n));
      // Rep 3: the smallest exponent bytes too (0 and 1 are the subnormal-scale branch of
      // e8m0_half, which the AVX-512 kernel reads from a table).
      if (rep == 3)
        for (size_t b = 0; b < c.w.size() / 17; ++b) c.w[b * 17] = static_cast<uint8_t>(b % 4);
      expect_same_bits(c, n, impl::dot_mxfp4, impl::dot_mxfp4_avx512, fmt::format("avx2 rep={}", rep));
      if (impl::cpu_has_avx_vnni())
        expect_same_bits(c, n, impl::dot_mxfp4_vnni, impl::dot_mxfp4_avx512, fmt::format("vnni rep={}", rep));
    }
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(AllFastTypes, VecDot, ::testing::ValuesIn(kFastTypes),
                         [](const auto& info) { return std::string(quant::type_name(info.param)); });

TEST(VecDot, UnsupportedTypesHaveNoKernel) {
  EXPECT_EQ(dot_kernel(Type::Q5_K), nullptr);
  EXPECT_EQ(dot_kernel(Type::IQ4_XS), nullptr);
}

TEST(VecDot, F32DotIsNearlyExactOnLongRows) {
  // The golden F32 models need NMSE ≤ 1e-9 end to end; a single dot must be far better.
  const DotKernel* k = dot_kernel(Type::F32);
  std::mt19937 rng(5);
  const int64_t n = 7168 + 5;  // odd tail too
  std::vector<float> w = test::random_acts(n, rng), x = test::random_acts(n, rng);
  float out;
  k->dot(n, w.data(), x.data(), 0, 1, &out);
  double exact = 0;
  for (int64_t i = 0; i < n; ++i) exact += static_cast<double>(w[i]) * x[i];
  EXPECT_NEAR(out, exact, 1e-6 * magnitude(w, x));
}

TEST(ActQuant, Q8KMatchesReferenceRule) {
  std::mt19937 rng(11);
  std::vector<float> x = test::random_acts(512, rng);
  x[37] = -9.5f;  // the largest magnitude maps to -127 whatever its sign (scale = -127/max)
  std::vector<BlockQ8KA> q(2);
  quantize_act_q8_k(x.data(), q.data(), 512);
  EXPECT_EQ(q[0].qs[37], -127);
  EXPECT_FLOAT_EQ(q[0].d, 1.0f / (-127.0f / -9.5f));
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 16; ++i) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += q[b].qs[16 * i + j];
      EXPECT_EQ(q[b].bsums[i], s);
    }
    for (int j = 0; j < 256; ++j) {
      EXPECT_GE(q[b].qs[j], -127);
      EXPECT_LE(std::fabs(q[b].d * q[b].qs[j] - x[256 * b + j]), std::fabs(q[b].d) * 0.5f + 1e-6f);
    }
  }
  std::vector<float> zeros(256, 0.0f);
  quantize_act_q8_k(zeros.data(), q.data(), 256);
  EXPECT_EQ(q[0].d, 0.0f);
  EXPECT_EQ(q[0].bsums[3], 0);
}

TEST(ActQuant, Q8_0RoundsHalfAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.49f;
  BlockQ8_0A q;
  quantize_act_q8_0(x.data(), &q, 32);
  EXPECT_EQ(q.d, 1.0f);
  EXPECT_EQ(q.qs[0], 127);
  EXPECT_EQ(q.qs[1], 3);
  EXPECT_EQ(q.qs[2], -3);
  EXPECT_EQ(q.qs[3], 0);
}

// The AVX2 quantizers equal their plain-C twins byte for byte: random rows, exact ties
// (k + 0.5 after scaling, both signs), a repeated maximum of either sign, and zero blocks.
TEST(ActQuant, SimdEqualsScalarTwinExactly) {
  std::mt19937 rng(23);
  for (int rep = 0; rep < 20; ++rep) {
    const int64_t n = 1024;
    std::vector<float> x = test::random_acts(n, rng);
    if (rep % 4 == 1) {
      for (int64_t i = 0; i < n; ++i)
        x[i] = static_cast<float>(static_cast<int>(rng() % 255) - 127) + 0.5f * (rng() % 2);
      for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16) + 0.5f;  // exact ties
      x[5] = 127.0f;  // Q8_0 block 0: d = 1, so k + 0.5 stays a tie
    }
    if (rep % 4 == 2) {
      x[300] = 7.0f;
      x[310] = -7.0f;                             // same |max| twice in Q8_K block 1: the first one wins
      std::fill(x.begin() + 768, x.end(), 0.0f);  // a zero block
    }
    std::vector<BlockQ8_0A> a(n / 32), b(n / 32);
    quantize_act_q8_0(x.data(), a.data(), n);
    quantize_act_q8_0_scalar(x.data(), b.data(), n);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ8_0A))) << "Q8_0 rep " << rep;
    std::vector<BlockQ8KA> c(n / 256), d(n / 256);
    quantize_act_q8_k(x.data(), c.data(), n);
    quantize_act_q8_k_scalar(x.data(), d.data(), n);
    EXPECT_EQ(0, std::memcmp(c.data(), d.data(), c.size() * sizeof(BlockQ8KA))) << "Q8_K rep " << rep;
  }
}

// The prefill product (gemm, where a type has one: Q8_0, IQ2_XXS and IQ1_M on every x86 host;
// gemm_test.cpp calls the AVX2 and AVX-VNNI forms directly): every output against the scalar
// twin, for row counts around Q8_0's 16-row panel, token counts around its groups of 8 and 4
// and around the IQ kernels' tiles of 16 tokens, rows of an odd and an even block count, a row
// stride other than the row size (so the row's last block ends where its memory does not); and
// nothing written past the rows asked for.
TEST(VecDotGemm, MatchesScalarTwin) {
  int with_gemm = 0;
  for (Type type : kFastTypes) {
    const DotKernel* k = dot_kernel(type);
    ASSERT_NE(k, nullptr);
    if (!k->gemm) continue;
    ASSERT_NE(k->act_sums, nullptr);
    ++with_gemm;
    const int64_t blk = quant::type_info(k->type).block_elems;
    for (int64_t n : {blk, blk * 3, int64_t{1024}, int64_t{2816} + blk}) {
      for (int64_t rows : {1, 5, 16, 17, 40}) {
        for (int64_t n_tok : {1, 3, 8, 13, 16, 17, 33}) {
          std::mt19937 rng(99u + static_cast<uint32_t>(n * 31 + rows * 7 + n_tok));
          const size_t rs = quant::row_bytes(k->type, n) + 6;
          std::vector<uint8_t> w(rs * static_cast<size_t>(rows));
          std::vector<std::vector<float>> wf(static_cast<size_t>(rows),
                                             std::vector<float>(static_cast<size_t>(n)));
          for (int64_t r = 0; r < rows; ++r) {
            const std::vector<uint8_t> row = test::random_row(k->type, n, rng);
            std::memcpy(w.data() + r * rs, row.data(), row.size());
            quant::dequantize_row(k->type, row.data(), wf[r].data(), n);
          }
          const size_t as = act_row_bytes(k->act, n);
          std::vector<uint8_t> act(as * static_cast<size_t>(n_tok));
          std::vector<std::vector<float>> x;
          for (int64_t t = 0; t < n_tok; ++t) {
            x.push_back(test::random_acts(n, rng));
            quantize_act_row(k->act, x[t].data(), act.data() + t * as, n);
          }
          std::vector<int32_t> sums(gemm_sums_ints(n, n_tok));
          k->act_sums(n, act.data(), as, n_tok, sums.data());
          std::vector<uint8_t> panel(gemm_panel_bytes(n));
          const size_t ys = static_cast<size_t>(rows) + 3;
          std::vector<float> y(ys * static_cast<size_t>(n_tok), -777.0f);
          k->gemm(n, w.data(), rs, rows, act.data(), as, sums.data(), n_tok, y.data(), ys, panel.data());
          for (int64_t t = 0; t < n_tok; ++t) {
            for (int64_t r = 0; r < rows; ++r) {
              const float ref = k->dot_scalar(n, w.data() + r * rs, act.data() + t * as);
              ASSERT_NEAR(y[t * ys + r], ref, 2e-6 * magnitude(wf[r], x[t]) + 1e-30)
                  << quant::type_name(k->type) << " n=" << n << " rows=" << rows << " tokens=" << n_tok
                  << " row " << r << " token " << t;
            }
            for (size_t r = static_cast<size_t>(rows); r < ys; ++r) ASSERT_EQ(y[t * ys + r], -777.0f);
          }
        }
      }
    }
  }
#if defined(K3_SIMD_X86)
  EXPECT_GE(with_gemm, 3);  // Q8_0, IQ2_XXS, IQ1_M on every x86 host: AVX-512, AVX-VNNI or AVX2
#else
  EXPECT_EQ(with_gemm, 0);
#endif
}

// Decode over several rows (dot_rows, where a type has one: the expert types IQ1_M and
// IQ2_XXS) gives each row's one-token dot bit for bit, for row counts around the kernels'
// group sizes and short and long rows.
TEST(VecDotRows, EqualOneRowAtATime) {
  int with_rows = 0;
  for (Type type : kFastTypes) {
    const DotKernel* k = dot_kernel(type);
    ASSERT_NE(k, nullptr);
    if (!k->dot_rows) continue;
    ++with_rows;
    std::mt19937 rng(1234u + static_cast<uint32_t>(type));
    const int64_t blk = quant::type_info(k->type).block_elems;
    for (int64_t n : {blk * 3, int64_t{1024}, int64_t{2048} + 2 * blk}) {
      if (n % blk != 0) continue;
      const size_t rs = quant::row_bytes(k->type, n);
      for (int64_t rows : {1, 3, 4, 5, 9, 17}) {
        std::vector<uint8_t> w;
        for (int64_t r = 0; r < rows; ++r) {
          const std::vector<uint8_t> row = test::random_row(k->type, n, rng);
          w.insert(w.end(), row.begin(), row.end());
        }
        const std::vector<float> x = test::random_acts(n, rng);
        std::vector<uint8_t> act(act_row_bytes(k->act, n));
        quantize_act_row(k->act, x.data(), act.data(), n);
        std::vector<float> one(static_cast<size_t>(rows)), many(static_cast<size_t>(rows), -1.0f);
        for (int64_t r = 0; r < rows; ++r) k->dot(n, w.data() + r * rs, act.data(), 0, 1, &one[r]);
        k->dot_rows(n, w.data(), rs, rows, act.data(), many.data());
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
            << quant::type_name(k->type) << " n=" << n << " rows=" << rows;
      }
    }
  }
#if defined(K3_SIMD_X86)
  EXPECT_GE(with_rows, 2);  // IQ1_M and IQ2_XXS
#else
  EXPECT_EQ(with_rows, 0);  // the portable table has no multi-row forms: callers loop over dot
#endif
}

// The decode prefetch distance is one of the two measured ones: K3_PREFETCH's where it names
// one (ctest runs this file under both), else by CPU vendor (6 KiB on AMD, 3 KiB elsewhere).
TEST(DecodePrefetch, FollowsTheOverrideElseTheVendor) {
  const char* force = std::getenv("K3_PREFETCH");
  if (force && std::string(force) == "3072") EXPECT_EQ(decode_prefetch_bytes(), kDecodePrefetchIntel);
  else if (force && std::string(force) == "6144") EXPECT_EQ(decode_prefetch_bytes(), kDecodePrefetchAmd);
  else {
#if defined(K3_SIMD_X86)
    EXPECT_EQ(decode_prefetch_bytes(), __builtin_cpu_is("amd") ? kDecodePrefetchAmd : kDecodePrefetchIntel);
#else
    EXPECT_EQ(decode_prefetch_bytes(), kDecodePrefetchIntel);
#endif
  }
}

}  // namespace
}  // namespace k3::kernels
