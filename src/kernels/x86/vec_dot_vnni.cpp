// AVX-VNNI builds of the Q8_0 and MXFP4 dot products (loops: q8_loops.h): vpdpbusd
// does the u8·s8 products and their 4-way int32 sums in one instruction where AVX2 needs
// maddubs + madd. Only called where the CPU has AVX-VNNI (cpu_has_avx_vnni()); this file
// alone is compiled for it, so the rest of the binary still runs on plain AVX2.
#include <immintrin.h>

#include "kernels/act_quant.h"
#include "quant/blocks.h"
#include "kernels/x86/q8_loops.h"
#include "kernels/x86/simd.h"
#include "kernels/vec_dot_impl.h"
#include "quant/codebooks.h"

namespace k3::kernels::impl {

namespace {

struct DotVnni {
  static __m256i sum(__m256i w_abs, __m256i w, __m256i a) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w_abs, _mm256_sign_epi8(a, w));
  }
};

template <int NT>
constexpr auto q8_0_vnni_nt = &q8_0_loop<DotVnni, NT>;
template <int NT>
constexpr auto mxfp4_vnni_nt = &mxfp4_loop<DotVnni, NT>;

}  // namespace

K3_DOT_DISPATCH(q8_0_vnni)
K3_DOT_DISPATCH(mxfp4_vnni)

}  // namespace k3::kernels::impl
