// kernels/x86/simd: small AVX2 helpers shared by the x86 kernels (private to kernels/x86/).
// Contract: pure register functions; nt dispatch maps a runtime token count 1..4 onto the
// compile-time-unrolled kernel templates.
// Internal linkage (the anonymous namespace): the AVX-512 and AVX-VNNI files include this
// header under their own -m flags, and an inline function with external linkage could then be
// emitted there in a wider encoding and picked by the linker for every caller
// (lint.isa_objects checks that those objects define no shared symbols).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace k3::kernels::simd {
namespace {

// IEEE binary16 → float (F16C, exact).
inline float f16(uint16_t h) { return _cvtsh_ss(h); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline double hsum_pd(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

// Unsigned bytes u times signed bytes a, pairs summed to int16, then multiplied by the int16
// weights s and pair-summed again: 8 int32 lanes. Callers keep u·a·2 within int16.
inline __m256i dot_us(__m256i u, __m256i a, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), s);
}

// Signed bytes w times signed bytes a (neither −128 in a), via |w| and sign transfer.
inline __m256i dot_ss(__m256i w_abs, __m256i w, __m256i a, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(a, w)), s);
}

inline const uint8_t* tok(const void* act, size_t stride, int t) {
  return static_cast<const uint8_t*>(act) + static_cast<size_t>(t) * stride;
}

}  // namespace
}  // namespace k3::kernels::simd

// Full unrolling of the short token/sub-block loops keeps the per-token accumulators in
// registers (at -O2 GCC otherwise keeps them in memory, a store-forwarding chain per step).
#define K3_UNROLL _Pragma("GCC unroll 16")

// Expands to the public entry point dot_<name> dispatching on nt to name##_nt<NT>.
#define K3_DOT_DISPATCH(name)                                                                 \
  void dot_##name(int64_t n, const void* w, const void* act, size_t st, int nt, float* out) { \
    switch (nt) {                                                                             \
      case 1: name##_nt<1>(n, w, act, st, out); break;                                        \
      case 2: name##_nt<2>(n, w, act, st, out); break;                                        \
      case 3: name##_nt<3>(n, w, act, st, out); break;                                        \
      default: name##_nt<4>(n, w, act, st, out); break;                                       \
    }                                                                                         \
  }
