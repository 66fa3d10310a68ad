// AVX2 builds of the prefill products (vec_dot.h, DotKernel::act_sums and gemm) for hosts
// without AVX-512: the loops live in gemm_q8_loops.h and gemm_iq_loops.h, shared with the
// AVX-VNNI build (gemm_vnni.cpp). Here the int8 products are maddubs + madd. The IQ types'
// act_sums (the repacked tokens) serve both builds.
#include <immintrin.h>

#include "kernels/vec_dot_impl.h"
#include "kernels/x86/gemm_iq_loops.h"
#include "kernels/x86/gemm_q8_loops.h"
#include "kernels/x86/simd.h"

namespace k3::kernels::impl {

namespace {

struct GemmAvx2 {
  // Q8_0 keeps its weights signed: maddubs(|w|, sign(a, w)) cannot saturate (|w|·|a|·2 ≤
  // 32512), where w + 128 against a could (gemm_q8_loops.h).
  static constexpr bool kOffset = false;
  // Tokens per pass over a panel: 4 token accumulators in int32 and 4 in float, with |w|,
  // w and the broadcasts, fit the 16 ymm registers.
  static constexpr int kTokens = 4;
  static __m256i q8(__m256i acc, __m256i w, __m256i a) {
    return _mm256_add_epi32(acc, simd::dot_ss(_mm256_abs_epi8(w), w, a, _mm256_set1_epi16(1)));
  }
  // Unsigned u (weights + offset, small enough that u·|a|·2 fits int16) times signed a.
  static __m256i us(__m256i acc, __m256i u, __m256i a) {
    return _mm256_add_epi32(acc, simd::dot_us(u, a, _mm256_set1_epi16(1)));
  }
};

}  // namespace

void act_sums_q8_0_avx2(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums) {
  q8gemm::act_sums<GemmAvx2>(n, act, act_stride, n_tok, sums);
}

// The Σa of the gemms whose panels carry the +128 (AVX-VNNI and AVX-512): plain AVX2 code, so
// built here once, with the baseline flags, for both.
namespace {
struct Plus128 {
  static constexpr bool kOffset = true;
};
}  // namespace

void act_sums_q8_0_plus128(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums) {
  q8gemm::act_sums<Plus128>(n, act, act_stride, n_tok, sums);
}

void gemm_q8_0_avx2(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                    size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                    void* panel) {
  q8gemm::gemm<GemmAvx2>(n, w, row_stride, n_rows, act, act_stride, sums, n_tok, y, y_stride, panel);
}

void act_sums_iq2_xxs_avx2(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums) {
  iqgemm::act_tiles<iqgemm::Iq2xxsRow::kGroup, iqgemm::Iq2xxsRow::kOffset>(n, act, act_stride, n_tok, sums);
}

void act_sums_iq1_m_avx2(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums) {
  iqgemm::act_tiles<iqgemm::Iq1mRow::kGroup, iqgemm::Iq1mRow::kOffset>(n, act, act_stride, n_tok, sums);
}

K3_IQ_GEMM(gemm_iq2_xxs_avx2, GemmAvx2, Iq2xxsRow)
K3_IQ_GEMM(gemm_iq1_m_avx2, GemmAvx2, Iq1mRow)
K3_IQ_GEMM(gemm_iq2_xxs_decode_avx2, GemmAvx2, Iq2xxsDecodeRow)
K3_IQ_GEMM(gemm_iq1_m_decode_avx2, GemmAvx2, Iq1mDecodeRow)

}  // namespace k3::kernels::impl
