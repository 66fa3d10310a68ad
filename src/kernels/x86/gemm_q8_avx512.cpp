// AVX-512 VNNI prefill product for Q8_0 weights (vec_dot.h, DotKernel::gemm): a run of rows
// against many tokens. The row-at-a-time prefill kernel (q8_loops.h) spends, per 32 products
// of one row and one token, a sign, an int8 dot, a conversion, a scale product and an FMA, and
// reloads the tokens' activations for every row. Here:
// - 16 rows at a time are repacked into a panel (thread-local, ~2 % of the work): per block
//   and per group of 4 columns, the 16 rows' 4 weights side by side in one 64-byte line, made
//   unsigned by adding 128, and the 16 rows' scales in another;
// - a token's 4 activations of a group are broadcast to all 16 lanes, so one vpdpbusd does 64
//   products for 16 rows at once, and after the block's 8 groups each lane holds its row's
//   whole block sum: one conversion, one scale product and one FMA then serve 16 rows;
// - the 128·Σa that the unsigned weights add is known per token and block before the panel
//   starts (act_sums, once per run of rows) and enters, negated, as the accumulator's initial
//   value, so the int32 lane is exactly Σ w·a (no saturation: |lane| ≤ 32·255·128 < 2^31);
// - 8 tokens share each weight line loaded from the panel.
// The integer sum per block is the row kernel's exactly and blocks are accumulated in order,
// one FMA per block, as the scalar twin does; results differ from dot() only in float rounding
// (tests/kernels/vec_dot_test.cpp checks every output against the twin).
// Only called where cpu_has_avx512_iq(); this file alone is compiled for AVX-512 (CMakeLists.txt).

// As in vec_dot_avx512.cpp: GCC 12's AVX-512 intrinsics seed unused lanes with a
// self-initialised undefined value, which -W(maybe-)uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/act_quant.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/simd.h"
#include "quant/blocks.h"

namespace k3::kernels::impl {

namespace {

constexpr int kPanelRows = 16;  // one zmm of int32 lanes
constexpr int kGroupBytes = 4;  // vpdpbusd sums 4 byte products per lane
constexpr int kGroups = 32 / kGroupBytes;
constexpr int kPanelBlockBytes = kGroups * kPanelRows * kGroupBytes;  // 512

// vec_dot.h sizes the caller's scratch for this layout (plus 64 bytes to align it).
static_assert(gemm_panel_bytes(32) == kPanelBlockBytes + kPanelRows * sizeof(float) + 64);

// The panel of rows [0, n_rows) (n_rows ≤ 16) of nb blocks: weights + 128, interleaved by
// group; scales as floats. The lanes of absent rows keep whatever an earlier panel left:
// run_tokens never stores them.
void repack_panel(const uint8_t* w, size_t row_stride, int n_rows, int64_t nb, uint8_t* pw, float* ps) {
  for (int r = 0; r < n_rows; ++r) {
    const blk::Q8_0* x = reinterpret_cast<const blk::Q8_0*>(w + r * row_stride);
    for (int64_t b = 0; b < nb; ++b) {
      ps[b * kPanelRows + r] = simd::f16(x[b].d);
      for (int g = 0; g < kGroups; ++g) {
        uint32_t v;
        std::memcpy(&v, x[b].qs + g * kGroupBytes, kGroupBytes);
        v ^= 0x80808080u;
        std::memcpy(pw + b * kPanelBlockBytes + g * kPanelRows * kGroupBytes + r * kGroupBytes, &v,
                    kGroupBytes);
      }
    }
  }
}

// T tokens against one panel: out[t] = the 16 rows' dots for token t.
template <int T>
inline void panel_tokens(int64_t nb, const uint8_t* pw, const float* ps, const BlockQ8_0A* const* y,
                         const int32_t* const* sums, __m512* out) {
  __m512 acc[T];
  K3_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* wb = pw + b * kPanelBlockBytes;
    __m512i s[T];
    K3_UNROLL for (int t = 0; t < T; ++t) s[t] = _mm512_set1_epi32(-128 * sums[t][b]);
    K3_UNROLL for (int g = 0; g < kGroups; ++g) {
      const __m512i wv = _mm512_load_si512(wb + g * kPanelRows * kGroupBytes);
      K3_UNROLL for (int t = 0; t < T; ++t) {
        int32_t a;
        std::memcpy(&a, y[t][b].qs + g * kGroupBytes, kGroupBytes);
        s[t] = _mm512_dpbusd_epi32(s[t], wv, _mm512_set1_epi32(a));
      }
    }
    const __m512 dw = _mm512_load_ps(ps + b * kPanelRows);
    K3_UNROLL for (int t = 0; t < T; ++t) acc[t] =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]), _mm512_mul_ps(dw, _mm512_set1_ps(y[t][b].d)), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < T; ++t) out[t] = acc[t];
}

template <int T>
void run_tokens(int64_t nb, const uint8_t* pw, const float* ps, const uint8_t* act, size_t act_stride,
                const int32_t* sums, int64_t t0, int n_rows, float* y, size_t y_stride) {
  const BlockQ8_0A* yp[T];
  const int32_t* sp[T];
  K3_UNROLL for (int t = 0; t < T; ++t) {
    yp[t] = reinterpret_cast<const BlockQ8_0A*>(act + (t0 + t) * act_stride);
    sp[t] = sums + (t0 + t) * nb;
  }
  __m512 out[T];
  panel_tokens<T>(nb, pw, ps, yp, sp, out);
  const __mmask16 m = static_cast<__mmask16>((1u << n_rows) - 1u);
  K3_UNROLL for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * y_stride, m, out[t]);
}

}  // namespace

void gemm_q8_0_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                      size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                      void* panel) {
  // The caller's scratch (gemm_panel_bytes), aligned here: the panel lines are loaded whole.
  const int64_t nb = n / 32;
  uint8_t* pw = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(panel) + 63) & ~uintptr_t{63});
  float* ps = reinterpret_cast<float*>(pw + nb * kPanelBlockBytes);
  const uint8_t* a = static_cast<const uint8_t*>(act);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kPanelRows) {
    const int rows = n_rows - r0 < kPanelRows ? static_cast<int>(n_rows - r0) : kPanelRows;
    repack_panel(static_cast<const uint8_t*>(w) + r0 * row_stride, row_stride, rows, nb, pw, ps);
    int64_t t = 0;
    for (; t + 8 <= n_tok; t += 8) run_tokens<8>(nb, pw, ps, a, act_stride, sums, t, rows, y + r0, y_stride);
    for (; t + 4 <= n_tok; t += 4) run_tokens<4>(nb, pw, ps, a, act_stride, sums, t, rows, y + r0, y_stride);
    for (; t < n_tok; ++t) run_tokens<1>(nb, pw, ps, a, act_stride, sums, t, rows, y + r0, y_stride);
  }
}

}  // namespace k3::kernels::impl
