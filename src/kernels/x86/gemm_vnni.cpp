// AVX-VNNI builds of the prefill products (vec_dot.h, DotKernel::act_sums and gemm): the loops
// of gemm_q8_loops.h and gemm_iq_loops.h, where one vpdpbusd (ymm) does a group's byte
// products and their int32 sums. The IQ gemms take the AVX2 act_sums (the repacked tokens do
// not depend on the int8 product). Only called where the CPU has AVX-VNNI (cpu_has_avx_vnni()); this file
// alone is compiled for it (CMakeLists.txt), so the rest of the binary still runs on plain AVX2.
#include <immintrin.h>

#include "kernels/vec_dot_impl.h"
#include "kernels/x86/gemm_iq_loops.h"
#include "kernels/x86/gemm_q8_loops.h"
#include "kernels/x86/simd.h"

namespace k3::kernels::impl {

namespace {

struct GemmVnni {
  // Q8_0 weights + 128 (unsigned, vpdpbusd's first operand), corrected by −128·Σa.
  static constexpr bool kOffset = true;
  static constexpr int kTokens = 4;
  static __m256i q8(__m256i acc, __m256i u, __m256i a) { return _mm256_dpbusd_avx_epi32(acc, u, a); }
  static __m256i us(__m256i acc, __m256i u, __m256i a) { return _mm256_dpbusd_avx_epi32(acc, u, a); }
};

}  // namespace

void gemm_q8_0_vnni(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                    size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                    void* panel) {
  q8gemm::gemm<GemmVnni>(n, w, row_stride, n_rows, act, act_stride, sums, n_tok, y, y_stride, panel);
}

K3_IQ_GEMM(gemm_iq2_xxs_vnni, GemmVnni, Iq2xxsRow)
K3_IQ_GEMM(gemm_iq1_m_vnni, GemmVnni, Iq1mRow)
K3_IQ_GEMM(gemm_iq2_xxs_decode_vnni, GemmVnni, Iq2xxsDecodeRow)
K3_IQ_GEMM(gemm_iq1_m_decode_vnni, GemmVnni, Iq1mDecodeRow)

}  // namespace k3::kernels::impl
