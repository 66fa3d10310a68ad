// kernels/stream_read: the plain-C twin (see stream_read.h); the AVX2 build is in
// x86/stream_read_avx2.cpp.
#include "kernels/stream_read.h"

#include <cstring>

namespace k3::kernels {

uint64_t stream_read_sum_scalar(const void* p, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t s[4] = {0, 0, 0, 0};  // four chains, as the AVX2 build's lanes
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, b + i + 8 * k, 8);
      s[k] += w;
    }
  return s[0] + s[1] + s[2] + s[3];
}

#if !defined(K3_SIMD_X86)
uint64_t stream_read_sum(const void* p, size_t bytes, int) { return stream_read_sum_scalar(p, bytes); }
#endif

}  // namespace k3::kernels
