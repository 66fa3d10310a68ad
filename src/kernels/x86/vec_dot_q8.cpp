// AVX2 dot products of the 32-element weight types paired with Q8_0 activations: Q8_0 and
// MXFP4; the loops live in q8_loops.h, shared with the AVX-VNNI build.
#include <immintrin.h>

#include "kernels/act_quant.h"
#include "quant/blocks.h"
#include "kernels/x86/q8_loops.h"
#include "kernels/x86/simd.h"
#include "kernels/vec_dot_impl.h"
#include "quant/codebooks.h"

namespace k3::kernels::impl {

namespace {

struct DotAvx2 {
  static __m256i sum(__m256i w_abs, __m256i w, __m256i a) {
    return simd::dot_ss(w_abs, w, a, _mm256_set1_epi16(1));
  }
};

// The per-token-count entry points K3_DOT_DISPATCH calls.
template <int NT>
constexpr auto q8_0_nt = &q8_0_loop<DotAvx2, NT>;
template <int NT>
constexpr auto mxfp4_nt = &mxfp4_loop<DotAvx2, NT>;

}  // namespace

K3_DOT_DISPATCH(q8_0)
K3_DOT_DISPATCH(mxfp4)

}  // namespace k3::kernels::impl
