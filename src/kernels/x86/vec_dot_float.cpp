// AVX2/FMA dot products for the plain float weight encodings F32, F16, BF16 against f32
// activations. Each weight vector is converted once and applied to every token of the tile.
// F32 accuracy: at least two independent 8-lane accumulators per token, then a pairwise
// horizontal sum; relative error stays ~1e-7·√(n/16), far inside the golden NMSE 1e-9 budget.
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/simd.h"
#include "kernels/vec_dot_impl.h"

namespace k3::kernels::impl {

namespace {

struct LoadF32 {
  static constexpr int kBytes = 4;
  static __m256 load(const void* w, int64_t i) { return _mm256_loadu_ps(static_cast<const float*>(w) + i); }
  static float one(const void* w, int64_t i) { return static_cast<const float*>(w)[i]; }
};
struct LoadF16 {
  static constexpr int kBytes = 2;
  static __m256 load(const void* w, int64_t i) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i)));
  }
  static float one(const void* w, int64_t i) { return _cvtsh_ss(static_cast<const uint16_t*>(w)[i]); }
};
struct LoadBF16 {
  static constexpr int kBytes = 2;
  static __m256 load(const void* w, int64_t i) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float one(const void* w, int64_t i) {
    const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(w)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

// U vectors of 8 per step; with one token 4 chains hide the FMA latency.
template <class L, int NT>
void float_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  constexpr int U = NT == 1 ? 4 : 2;
  const float* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const float*>(simd::tok(act, st, t));
  __m256 acc[NT][U];
  K3_UNROLL for (int t = 0; t < NT; ++t) K3_UNROLL for (int u = 0; u < U; ++u) acc[t][u] =
      _mm256_setzero_ps();
  const int64_t pf = decode_prefetch_bytes();
  int64_t i = 0;
  for (; i + 8 * U <= n; i += 8 * U) {
    if constexpr (NT == 1) {
      // Decode streams the row once (the F32 router of every MoE layer): ask for the lines
      // ahead into L2, as the Q8_0 kernel does (one core, 2026-12-03, 4 KiB ahead: F32 11.0
      // -> 13.9 GB/s, F16 10.8 -> 14.5, BF16 10.0 -> 13.9; 3 KiB: router-sized 2 MB products
      // on two threads another +4-5 %).
      const char* ahead = static_cast<const char*>(w) + i * L::kBytes + pf;
      K3_UNROLL for (int l = 0; l < 8 * U * L::kBytes; l += 64) _mm_prefetch(ahead + l, _MM_HINT_T1);
    }
    __m256 wx[U];
    K3_UNROLL for (int u = 0; u < U; ++u) wx[u] = L::load(w, i + 8 * u);
    K3_UNROLL for (int t = 0; t < NT; ++t) K3_UNROLL for (int u = 0; u < U; ++u) acc[t][u] =
        _mm256_fmadd_ps(wx[u], _mm256_loadu_ps(y[t] + i + 8 * u), acc[t][u]);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 wx = L::load(w, i);
    K3_UNROLL for (int t = 0; t < NT; ++t) acc[t][0] =
        _mm256_fmadd_ps(wx, _mm256_loadu_ps(y[t] + i), acc[t][0]);
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) {
    for (int u = 1; u < U; ++u) acc[t][0] = _mm256_add_ps(acc[t][0], acc[t][u]);
    float s = simd::hsum(acc[t][0]);
    for (int64_t k = i; k < n; ++k) s += L::one(w, k) * y[t][k];
    out[t] = s;
  }
}

template <int NT>
void f32_nt(int64_t n, const void* w, const void* a, size_t st, float* o) {
  float_nt<LoadF32, NT>(n, w, a, st, o);
}
template <int NT>
void f16_nt(int64_t n, const void* w, const void* a, size_t st, float* o) {
  float_nt<LoadF16, NT>(n, w, a, st, o);
}
template <int NT>
void bf16_nt(int64_t n, const void* w, const void* a, size_t st, float* o) {
  float_nt<LoadBF16, NT>(n, w, a, st, o);
}

}  // namespace

K3_DOT_DISPATCH(f32)
K3_DOT_DISPATCH(f16)
K3_DOT_DISPATCH(bf16)

}  // namespace k3::kernels::impl
