// kernels/situ_f64: the libm form of SiTU in double (see situ_f64.h); the AVX2 polynomial
// build is in x86/situ_f64_avx2.cpp.
#include "kernels/situ_f64.h"

#include "kernels/activations.h"

namespace k3::kernels {

// The model's scalar form (activations.h), for tests, tails and the portable build.
float situ_f64_scalar(float g, float u, float beta, float lambda) { return situ(g, u, beta, lambda); }

#if !defined(K3_SIMD_X86)
void situ_f64(const float* g, const float* u, float* y, int64_t n, float beta, float lambda) {
  for (int64_t i = 0; i < n; ++i) y[i] = situ_f64_scalar(g[i], u[i], beta, lambda);
}
#endif

}  // namespace k3::kernels
