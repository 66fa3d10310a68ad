// The 256-bit prefill products (AVX2 and AVX-VNNI builds of DotKernel::gemm, for hosts without
// AVX-512) called directly, whatever the table picks on this host: every output against the
// scalar twin, the VNNI build against the AVX2 one and, where the CPU has it, the AVX-512 gemm
// against both, bit for bit (each block's or sub-block's integer sum is exact in every build and
// the float steps are the same, so any difference is an integer error). VecDotGemm.MatchesScalarTwin
// (vec_dot_test.cpp) checks whichever forms the table holds.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/act_quant.h"
#include "kernels/decode_layout.h"
#include "kernels/random_weights.h"
#include "kernels/vec_dot.h"
#include "kernels/vec_dot_impl.h"
#include "quant/codec.h"

#if defined(K3_SIMD_X86)
namespace k3::kernels {
namespace {

using quant::Type;

constexpr int64_t kMaxTokens = 40;

// Rows (strided 6 bytes past their size, so a row's last block does not end its memory) and
// kMaxTokens tokens; each product takes a prefix of the tokens. ref[t][r] = the scalar twin.
struct GemmCase {
  int64_t n = 0, rows = 0;
  size_t rs = 0, as = 0;
  std::vector<uint8_t> w, act;
  std::vector<std::vector<float>> ref, scale;  // scale: Σ|w·x| per token and row (the tolerance)
};

GemmCase make_case(const DotKernel& k, int64_t n, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  GemmCase c;
  c.n = n;
  c.rows = rows;
  c.rs = quant::row_bytes(k.type, n) + 6;
  c.as = act_row_bytes(k.act, n);
  c.w.resize(c.rs * static_cast<size_t>(rows));
  std::vector<std::vector<float>> wf(static_cast<size_t>(rows), std::vector<float>(static_cast<size_t>(n)));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<uint8_t> row = test::random_row(k.type, n, rng);
    std::memcpy(c.w.data() + r * c.rs, row.data(), row.size());
    quant::dequantize_row(k.type, row.data(), wf[r].data(), n);
  }
  c.act.resize(c.as * kMaxTokens);
  for (int64_t t = 0; t < kMaxTokens; ++t) {
    const std::vector<float> x = test::random_acts(n, rng);
    quantize_act_row(k.act, x.data(), c.act.data() + t * c.as, n);
    c.ref.emplace_back();
    c.scale.emplace_back();
    for (int64_t r = 0; r < rows; ++r) {
      c.ref[t].push_back(k.dot_scalar(n, c.w.data() + r * c.rs, c.act.data() + t * c.as));
      double m = 0;
      for (int64_t i = 0; i < n; ++i) m += std::fabs(static_cast<double>(wf[r][i]) * x[i]);
      c.scale[t].push_back(m);
    }
  }
  return c;
}

// y for the first n_tok tokens, rows + 3 floats per token; the 3 past the rows stay −777.
std::vector<float> run(const GemmCase& c, ActSumsFn act_sums, GemmFn gemm, int64_t n_tok) {
  std::vector<int32_t> sums(gemm_sums_ints(c.n, n_tok));
  act_sums(c.n, c.act.data(), c.as, n_tok, sums.data());
  std::vector<uint8_t> panel(gemm_panel_bytes(c.n));
  const size_t ys = static_cast<size_t>(c.rows) + 3;
  std::vector<float> y(ys * static_cast<size_t>(n_tok), -777.0f);
  gemm(c.n, c.w.data(), c.rs, c.rows, c.act.data(), c.as, sums.data(), n_tok, y.data(), ys, panel.data());
  return y;
}

struct Form {
  const char* name;
  ActSumsFn act_sums;
  GemmFn gemm;
  bool vnni;  // needs cpu_has_avx_vnni()
};

struct TypeForms {
  Type type;
  Form avx2, vnni, avx512;
};

const TypeForms kForms[] = {
    {Type::Q8_0,
     {"avx2", impl::act_sums_q8_0_avx2, impl::gemm_q8_0_avx2, false},
     {"vnni", impl::act_sums_q8_0_plus128, impl::gemm_q8_0_vnni, true},
     {"avx512", impl::act_sums_q8_0_plus128, impl::gemm_q8_0_avx512, false}},
    {Type::IQ2_XXS,
     {"avx2", impl::act_sums_iq2_xxs_avx2, impl::gemm_iq2_xxs_avx2, false},
     {"vnni", impl::act_sums_iq2_xxs_avx2, impl::gemm_iq2_xxs_vnni, true},
     {"avx512", impl::act_sums_iq2_xxs_avx512, impl::gemm_iq2_xxs_avx512, false}},
    {Type::IQ1_M,
     {"avx2", impl::act_sums_iq1_m_avx2, impl::gemm_iq1_m_avx2, false},
     {"vnni", impl::act_sums_iq1_m_avx2, impl::gemm_iq1_m_vnni, true},
     {"avx512", impl::act_sums_iq1_m_avx512, impl::gemm_iq1_m_avx512, false}},
};

// Every output of y within float rounding of the twin (the tolerance of the dot tests), and
// nothing written past the rows.
void expect_twin(const GemmCase& c, const std::vector<float>& y, int64_t n_tok, const std::string& what) {
  const size_t ys = static_cast<size_t>(c.rows) + 3;
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < c.rows; ++r)
      ASSERT_NEAR(y[t * ys + r], c.ref[t][r], 2e-6 * c.scale[t][r] + 1e-30)
          << what << " row " << r << " token " << t;
    for (size_t r = static_cast<size_t>(c.rows); r < ys; ++r) ASSERT_EQ(y[t * ys + r], -777.0f) << what;
  }
}

// Row counts around the Q8_0 panel of 8 rows and the IQ passes of 4; every token count 1..40
// (around the groups of 4 and 2 tokens and the IQ tiles of 8) on short rows, some on long ones.
TEST(VecDotGemm, Avx2FormsMatchScalarTwinAndEachOther) {
  const bool vnni = impl::cpu_has_avx_vnni(), avx512 = impl::cpu_has_avx512_iq();
  int checked = 0;
  for (const TypeForms& f : kForms) {
    const DotKernel* k = dot_kernel(f.type);
    ASSERT_NE(k, nullptr);
    const int64_t blk = quant::type_info(f.type).block_elems;
    std::vector<int64_t> ns = {blk, 3 * blk, 1024, 7168};
    if (blk != 256) ns.insert(ns.begin() + 2, 256);
    for (int64_t n : ns) {
      for (int64_t rows : {1, 3, 7, 8, 9, 17, 40}) {
        const GemmCase c = make_case(*k, n, rows, 7u + static_cast<uint32_t>(n * 41 + rows));
        std::vector<int64_t> toks = {1, 2, 3, 5, 8, 9, 16, 17, 33, 40};
        if (n <= 1024) {
          toks.clear();
          for (int64_t t = 1; t <= kMaxTokens; ++t) toks.push_back(t);
        }
        for (int64_t n_tok : toks) {
          const std::string what =
              fmt::format("{} n={} rows={} tokens={}", quant::type_name(f.type), n, rows, n_tok);
          const std::vector<float> base = run(c, f.avx2.act_sums, f.avx2.gemm, n_tok);
          expect_twin(c, base, n_tok, what + " avx2");
          ++checked;
          for (const Form* other : {&f.vnni, &f.avx512}) {
            if (other->vnni ? !vnni : (other == &f.avx512 && !avx512)) continue;
            const std::vector<float> y = run(c, other->act_sums, other->gemm, n_tok);
            ASSERT_EQ(std::memcmp(y.data(), base.data(), y.size() * sizeof(float)), 0)
                << what << ": " << other->name << " differs from avx2";
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// The IQ gemms over rows rewritten into the decode layout (DotKernel::gemm_decode, what prefill
// reads where the expert store made a decode copy) give the file-layout gemm's floats bit for bit,
// AVX2 and, where the CPU has it, AVX-VNNI.
TEST(VecDotGemm, DecodeLayoutRowsGiveTheFileRowsResults) {
  struct DecodeForms {
    Type type;
    ActSumsFn act_sums;
    GemmFn file, decode_avx2, decode_vnni;
  };
  const DecodeForms forms[] = {{Type::IQ2_XXS, impl::act_sums_iq2_xxs_avx2, impl::gemm_iq2_xxs_avx2,
                                impl::gemm_iq2_xxs_decode_avx2, impl::gemm_iq2_xxs_decode_vnni},
                               {Type::IQ1_M, impl::act_sums_iq1_m_avx2, impl::gemm_iq1_m_avx2,
                                impl::gemm_iq1_m_decode_avx2, impl::gemm_iq1_m_decode_vnni}};
  for (const DecodeForms& f : forms) {
    const DotKernel* k = dot_kernel(f.type);
    for (int64_t n : {256, 1024, 2048 + 512}) {
      for (int64_t rows : {1, 4, 7, 9}) {
        GemmCase c = make_case(*k, n, rows, 11u + static_cast<uint32_t>(n + rows));
        const size_t ds = decode_row_bytes(f.type, n);
        std::vector<uint8_t> dec(ds * static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r)
          repack_for_decode(f.type, c.w.data() + r * c.rs, dec.data() + r * ds, n / 256);
        for (int64_t n_tok : {1, 8, 9, 16, 17, 40}) {
          const std::string what =
              fmt::format("{} n={} rows={} tokens={}", quant::type_name(f.type), n, rows, n_tok);
          const std::vector<float> want = run(c, f.act_sums, f.file, n_tok);
          GemmCase d = c;
          d.w = dec;
          d.rs = ds;
          for (GemmFn g : {f.decode_avx2, f.decode_vnni}) {
            if (g == f.decode_vnni && !impl::cpu_has_avx_vnni()) continue;
            const std::vector<float> got = run(d, f.act_sums, g, n_tok);
            ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << what;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace k3::kernels
#endif
