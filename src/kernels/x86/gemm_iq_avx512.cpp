// AVX-512 VNNI prefill product for the expert types IQ2_XXS and IQ1_M against Q8_K activations
// (vec_dot.h, DotKernel::act_sums and gemm). An expert of a K3 model sees few tokens per
// micro-batch (about 16 of 512 on bench-m), so the Q8_0 gemm's scheme — decode a panel of 16
// rows and share it among the tokens — cannot pay for the grid lookups. Here the roles swap:
// the lanes are tokens, not rows.
// - act_sums repacks the tokens once per run of rows (a few KiB per token, shared by every row):
//   per tile of 16 tokens and per super-block, 64 lines, line k = the 16 tokens' activation
//   bytes 4k..4k+3; then one line per sub-block with −128·Σa of each token (from bsums); then
//   the tokens' scales. Tokens past the end are zero.
// - gemm decodes 4 rows at a time (the grid values + 128 as unsigned bytes, in weight order;
//   the sub-block scales as int32; d) with the decode kernels' own unpacking
//   (iq_unpack_avx512.h), then per tile and 4-weight group one load of the group's line and,
//   per row, one broadcast of the row's 4 bytes and one vpdpbusd make 64 products for 16
//   tokens. A last tile of at most 8 tokens runs on ymm (half the work). Measured on bench-m's
//   experts (pp512, 2-vCPU AMD EPYC): one row per pass 209 GOP/s, two 293, four about 330;
//   the AVX2 multi-token dot it replaces, 163.
// - Per sub-block the int32 lanes start at −128·Σa, so after its vpdpbusds they hold exactly
//   Σ w·a; times the sub-block scale (vpmulld) and summed over the super-block they are the
//   decode kernels' integer sum exactly (|lane| < 2^26: no overflow). One conversion and one
//   FMA with d·d_y per super-block; 0.125 at the end. Results differ from dot() only in float
//   rounding (tests/kernels/vec_dot_test.cpp checks every output against the scalar twin).
// Only called where cpu_has_avx512_iq(); this file alone is compiled for AVX-512 (CMakeLists.txt).

// As in vec_dot_avx512.cpp: GCC 12's AVX-512 intrinsics seed unused lanes with a
// self-initialised undefined value, which -W(maybe-)uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/act_quant.h"
#include "kernels/vec_dot.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/gemm_token_tiles.h"
#include "kernels/x86/iq_unpack_avx512.h"
#include "kernels/x86/simd.h"
#include "quant/blocks.h"

namespace k3::kernels::impl {

namespace {

constexpr int kLanes = 16;  // tokens per tile: one zmm of int32 lanes
constexpr int kLines = 64;  // 4-byte groups per 256-weight super-block
constexpr int kBiasLines = 16;
static_assert(kTileSuperblockInts == token_tile_ints<kLanes>());
// gemm_tiles' four row buffers fit the caller's scratch from the smallest row on (it grows 18×).
static_assert(4 * ((256 + 68 + 63) & ~63) + 64 <= gemm_panel_bytes(256));

inline int32_t* align64(int32_t* p) {
  return reinterpret_cast<int32_t*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
}
inline const int32_t* align64(const int32_t* p) { return align64(const_cast<int32_t*>(p)); }

// Sub-blocks of G weights (32: IQ2_XXS; 16: IQ1_M), whose scale multiplies the integer sum;
// the weights carry + 128.
template <int G>
void act_tiles(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* out) {
  token_tiles<kLanes, 64, G, 128>(n, act, act_stride, n_tok, out);
}

// A row decoded for the tiles: per super-block its 256 weights + 128 as unsigned bytes, the
// scales of its sub-blocks (int32, 16 slots per super-block) and d.
struct RowBuf {
  uint8_t* w;
  int32_t* mult;
  float* d;
};

// The row decoders: built once per gemm call (their constants), then decode() per row.
// IQ2_XXS's grid bytes: from the 2-bit codes where cpu_iq_lookup() says so (on AMD; one EPYC
// core, bench_kernels' n_tok = 64 column: 396–430 GFLOP/s against 368–376 gathering), by
// gathers elsewhere. The scalar loads that decode once preferred on AMD measured no faster than
// the gathers here, where the decoded row is shared by the tokens. Same bytes every way.
template <bool kCodes>
struct Iq2xxsRow {
  static constexpr int kGroup = 32;
  const iq512::Iq2xxs u;
  [[maybe_unused]] const iq512::Iq2xxsCodesIf<kCodes> by_codes;
  const __m512i x80 = _mm512_set1_epi8(static_cast<char>(0x80));
  void decode(const uint8_t* row, int64_t nsb, const RowBuf& out) const {
    const blk::IQ2_XXS* x = reinterpret_cast<const blk::IQ2_XXS*>(row);
    for (int64_t b = 0; b < nsb; ++b) {
      const __m512i q = _mm512_loadu_si512(x[b].qs);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.mult + 16 * b), _mm512_cvtepi64_epi32(u.scales(q)));
      alignas(32) __mmask64 neg[4];
      u.sign_masks(q, neg);
      asm("" : "+m"(neg));
      [[maybe_unused]] __m512i codes;
      if constexpr (kCodes) codes = by_codes.codes(q);
      K3_UNROLL for (int p = 0; p < 4; ++p) {
        // +g + 128 = g ^ 0x80 (g ≤ 43); −g + 128 = 0x80 − g
        __m512i g;
        if constexpr (kCodes) g = by_codes.grid_quarter(codes, p);
        else g = u.grid_pair(q, p);
        const __m512i v = _mm512_mask_sub_epi8(_mm512_xor_si512(g, x80), _load_mask64(&neg[p]), x80, g);
        _mm512_storeu_si512(out.w + 256 * b + 64 * p, v);
      }
      out.d[b] = simd::f16(x[b].d);
    }
  }
};

struct Iq1mRow {
  static constexpr int kGroup = 16;
  const long long* grid = reinterpret_cast<const long long*>(iq1_offset_grid());
  template <bool kLast>
  void block(const blk::IQ1_M& x, int64_t b, const RowBuf& out) const {
    const iq512::Iq1mFields f = iq512::iq1m_fields<kLast>(x);
    _mm512_storeu_si512(out.mult + 16 * b, _mm512_cvtepi16_epi32(f.ls));
    // offset-grid byte (8·grid + delta + 9) + 119 = weight + 128
    const __m512i to_u8 = _mm512_set1_epi8(119);
    K3_UNROLL for (int p = 0; p < 4; ++p) _mm512_storeu_si512(
        out.w + 256 * b + 64 * p, _mm512_add_epi8(iq512::iq1_grid_quad(grid, f.idx, p), to_u8));
    out.d[b] = f.d;
  }
  void decode(const uint8_t* row, int64_t nsb, const RowBuf& out) const {
    const blk::IQ1_M* x = reinterpret_cast<const blk::IQ1_M*>(row);
    for (int64_t b = 0; b + 1 < nsb; ++b) block<false>(x[b], b, out);
    if (nsb > 0) block<true>(x[nsb - 1], nsb - 1, out);
  }
};

// The lanes of one tile: all 16 (zmm), or the first 8 (ymm) for a last tile of at most 8
// tokens, which costs half the work (its lines are the same; the upper half is not read).
struct Lanes16 {
  using I = __m512i;
  using F = __m512;
  static constexpr int kN = 16;
  static I load(const int32_t* p) { return _mm512_load_si512(p); }
  static I set1(int32_t v) { return _mm512_set1_epi32(v); }
  static I zero() { return _mm512_setzero_si512(); }
  static I dpbusd(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I mullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static F fma_step(I isum, const int32_t* dy, float d, F acc) {
    return _mm512_fmadd_ps(
        _mm512_cvtepi32_ps(isum),
        _mm512_mul_ps(_mm512_load_ps(reinterpret_cast<const float*>(dy)), _mm512_set1_ps(d)), acc);
  }
  static F fzero() { return _mm512_setzero_ps(); }
  static void store_scaled(float* out, F acc) {
    _mm512_store_ps(out, _mm512_mul_ps(acc, _mm512_set1_ps(0.125f)));
  }
};

struct Lanes8 {
  using I = __m256i;
  using F = __m256;
  static constexpr int kN = 8;
  static I load(const int32_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
  static I set1(int32_t v) { return _mm256_set1_epi32(v); }
  static I zero() { return _mm256_setzero_si256(); }
  static I dpbusd(I acc, I u, I s) { return _mm256_dpbusd_epi32(acc, u, s); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I mullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static F fma_step(I isum, const int32_t* dy, float d, F acc) {
    return _mm256_fmadd_ps(
        _mm256_cvtepi32_ps(isum),
        _mm256_mul_ps(_mm256_load_ps(reinterpret_cast<const float*>(dy)), _mm256_set1_ps(d)), acc);
  }
  static F fzero() { return _mm256_setzero_ps(); }
  static void store_scaled(float* out, F acc) {
    _mm256_store_ps(out, _mm256_mul_ps(acc, _mm256_set1_ps(0.125f)));
  }
};

// R decoded rows against one tile: out[r·16 + l] = row r's dot with the tile's token l. The R
// rows share every load of an activation line.
template <class V, int G, int R>
inline void rows_tile(int64_t nsb, const RowBuf* rows, const int32_t* tile, float* out) {
  typename V::F acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = V::fzero();
  for (int64_t s = 0; s < nsb; ++s) {
    const int32_t* lines = tile + s * kTileSuperblockInts;
    const int32_t* bias = lines + kLines * kLanes;
    typename V::I isum[R];
    K3_UNROLL for (int r = 0; r < R; ++r) isum[r] = V::zero();
    K3_UNROLL for (int g = 0; g < 256 / G; ++g) {
      typename V::I sg[R];
      const typename V::I b = V::load(bias + g * kLanes);
      K3_UNROLL for (int r = 0; r < R; ++r) sg[r] = b;
      K3_UNROLL for (int k = 0; k < G / 4; ++k) {
        const int line = g * (G / 4) + k;
        const typename V::I a = V::load(lines + line * kLanes);
        K3_UNROLL for (int r = 0; r < R; ++r) {
          int32_t wq;
          std::memcpy(&wq, rows[r].w + 256 * s + 4 * line, 4);
          sg[r] = V::dpbusd(sg[r], V::set1(wq), a);
        }
      }
      K3_UNROLL for (int r = 0; r < R; ++r) isum[r] =
          V::add(isum[r], V::mullo(sg[r], V::set1(rows[r].mult[16 * s + g])));
    }
    K3_UNROLL for (int r = 0; r < R; ++r) acc[r] =
        V::fma_step(isum[r], bias + kBiasLines * kLanes, rows[r].d[s], acc[r]);
  }
  K3_UNROLL for (int r = 0; r < R; ++r) V::store_scaled(out + r * kLanes, acc[r]);
}

// R decoded rows (starting at row r0 of the output) against every tile of the tokens.
template <int G, int R>
void rows_all_tiles(int64_t nsb, const RowBuf* rows, const int32_t* base, int64_t n_tok, int64_t r0, float* y,
                    size_t y_stride) {
  for (int64_t i = 0; i * kLanes < n_tok; ++i) {
    const int64_t nl = n_tok - i * kLanes < kLanes ? n_tok - i * kLanes : kLanes;
    alignas(64) float out[R * kLanes];
    const int32_t* tile = base + i * nsb * kTileSuperblockInts;
    if (nl > Lanes8::kN) rows_tile<Lanes16, G, R>(nsb, rows, tile, out);
    else rows_tile<Lanes8, G, R>(nsb, rows, tile, out);
    K3_UNROLL for (int r = 0; r < R; ++r) for (int64_t l = 0; l < nl; ++l)
        y[(i * kLanes + l) * y_stride + r0 + r] = out[r * kLanes + l];
  }
}

template <class T>
void gemm_tiles(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const int32_t* sums,
                int64_t n_tok, float* y, size_t y_stride, void* panel) {
  constexpr int kRowsPerPass = 4;
  const int64_t nsb = n / 256;
  const int32_t* base = align64(sums);
  // Four row buffers in the caller's scratch (gemm_panel_bytes(n) ≥ 4·(n + 68·n/256) + 64 bytes).
  uint8_t* pw = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(panel) + 63) & ~uintptr_t{63});
  const size_t row_bytes = static_cast<size_t>(n + 68 * nsb + 63) & ~size_t{63};
  RowBuf rows[kRowsPerPass];
  for (int r = 0; r < kRowsPerPass; ++r) {
    uint8_t* p = pw + r * row_bytes;
    rows[r] = RowBuf{p, reinterpret_cast<int32_t*>(p + n), reinterpret_cast<float*>(p + n + 64 * nsb)};
  }
  const uint8_t* wr = static_cast<const uint8_t*>(w);
  const T dec;
  int64_t r = 0;
  for (; r + kRowsPerPass <= n_rows; r += kRowsPerPass) {
    for (int k = 0; k < kRowsPerPass; ++k) dec.decode(wr + (r + k) * row_stride, nsb, rows[k]);
    rows_all_tiles<T::kGroup, kRowsPerPass>(nsb, rows, base, n_tok, r, y, y_stride);
  }
  for (; r < n_rows; ++r) {
    dec.decode(wr + r * row_stride, nsb, rows[0]);
    rows_all_tiles<T::kGroup, 1>(nsb, rows, base, n_tok, r, y, y_stride);
  }
}

}  // namespace

void act_sums_iq2_xxs_avx512(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums) {
  act_tiles<Iq2xxsRow<true>::kGroup>(n, act, act_stride, n_tok, sums);
}

void act_sums_iq1_m_avx512(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums) {
  act_tiles<Iq1mRow::kGroup>(n, act, act_stride, n_tok, sums);
}

void gemm_iq2_xxs_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void*, size_t,
                         const int32_t* sums, int64_t n_tok, float* y, size_t y_stride, void* panel) {
  if (cpu_iq_lookup() == IqLookup::codes)
    gemm_tiles<Iq2xxsRow<true>>(n, w, row_stride, n_rows, sums, n_tok, y, y_stride, panel);
  else gemm_tiles<Iq2xxsRow<false>>(n, w, row_stride, n_rows, sums, n_tok, y, y_stride, panel);
}

void gemm_iq1_m_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void*, size_t,
                       const int32_t* sums, int64_t n_tok, float* y, size_t y_stride, void* panel) {
  gemm_tiles<Iq1mRow>(n, w, row_stride, n_rows, sums, n_tok, y, y_stride, panel);
}

}  // namespace k3::kernels::impl
