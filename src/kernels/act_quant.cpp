// kernels/act_quant: the plain-C activation quantizers (see act_quant.h); the AVX2 builds are
// in x86/act_quant_avx2.cpp.
#include "kernels/act_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace k3::kernels {

void quantize_act_q8_0_scalar(const float* x, BlockQ8_0A* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    for (int j = 0; j < 32; ++j) y[b].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  }
}

void quantize_act_q8_k_scalar(const float* x, BlockQ8KA* y, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    BlockQ8KA& o = y[b];
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      o.d = 0.0f;
      std::memset(o.qs, 0, sizeof(o.qs));
      std::memset(o.bsums, 0, sizeof(o.bsums));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; ++j) {
      const long v = std::lrintf(iscale * x[j]);  // ties to even, as nearest_int
      o.qs[j] = static_cast<int8_t>(std::min<long>(127, v));
    }
    for (int i = 0; i < 16; ++i) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += o.qs[16 * i + j];
      o.bsums[i] = static_cast<int16_t>(s);
    }
    o.d = 1.0f / iscale;
  }
}

#if !defined(K3_SIMD_X86)
void quantize_act_q8_0(const float* x, BlockQ8_0A* y, int64_t n) { quantize_act_q8_0_scalar(x, y, n); }
void quantize_act_q8_k(const float* x, BlockQ8KA* y, int64_t n) { quantize_act_q8_k_scalar(x, y, n); }
#endif

}  // namespace k3::kernels
