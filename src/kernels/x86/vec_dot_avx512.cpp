// AVX-512 builds of the one-token (decode) dot products of the expert weight types IQ2_XXS,
// IQ2_XS, IQ1_M, IQ1_S, MXFP4 and Q3_K, and their multi-row forms, where the AVX2 kernels are bound by uops,
// not by memory (each section below says what it saves). For the IQ types each 32-weight
// group there costs four broadcast loads and three blends per table, plus psignb, maddubs and
// madd.
// Here one 64-bit-index gather fetches the eight grid entries of 64 weights from the
// L1-resident table, and every other step works on 64 weights per uop:
// - IQ2_XXS signs: the 7-bit sign indices of a super-block go through the 128-byte ksigns
//   table in one vpermt2b (the parity bit comes with the table), giving a 64-bit k-mask per
//   64 weights that negates the activations with one masked subtract. That equals psignb with
//   ±1 bytes exactly (0 − a wraps −128 to −128 as psignb does; Q8_K never holds −128 anyway).
// - IQ1_M: the 32 table indices are assembled once per super-block in one register
//   (vpermb + vpmultishiftqb) and zero-extended to the gather's qword lanes with one vpermw.
//   IQ1_S builds the same index and scale registers from its own layout and shares the rest.
// - madd + add is one vpdpwssd (exact, wrapping int32 like the pair it replaces).
// Measured on a Sapphire-Rapids-class core: a zmm gather occupies ports 0 and 5 for about
// three cycles, and 512-bit uops only run there, so the loops are bound by port-0/5 uops
// (~31 cycles per super-block against 45–55 for AVX2); hence the single-uop choices below.
// Contract: the integer sums are the AVX2 kernels' to the bit (the two 256-bit halves of the
// 16 int32 lanes are added as integers before the unchanged 8-lane float step), so the
// results are identical bit for bit. nt > 1 goes to the AVX2 kernels: with several tokens the
// lookups are shared and the AVX2 loop is no longer limited by them. Only called where
// cpu_has_avx512_iq(); this file alone is compiled for AVX-512 (its own -m flags in CMakeLists.txt), the rest
// stays plain AVX2.

// GCC 12's AVX-512 intrinsics seed their unused merge operand with a self-initialised
// _mm512_undefined_epi32(), which -W(maybe-)uninitialized reports at every inlined use; the
// warning has to be off where the header is first read, so for this whole file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <cstring>

#include "kernels/act_quant.h"
#include "kernels/decode_layout.h"
#include "quant/blocks.h"
#include "kernels/x86/iq_unpack_avx512.h"
#include "kernels/x86/q3k_scales.h"
#include "kernels/x86/rows_group.h"
#include "kernels/x86/simd.h"
#include "kernels/vec_dot_impl.h"
#include "quant/codebooks.h"

namespace k3::kernels::impl {

namespace {

// The shared unpacking (x86/iq_unpack_avx512.h).
using iq512::Bytes64;
using iq512::qword_lanes_from_words;

// A vpermw control spreading int16 scales: lane i ← lane first + step·(i / span).
inline __m512i spread_words(int first, int step, int span) {
  alignas(64) int16_t c[32];
  for (int i = 0; i < 32; ++i) c[i] = static_cast<int16_t>(first + step * (i / span));
  return _mm512_load_si512(c);
}

// One Q8_K super-block in registers, loaded once for all the rows of a group.
struct Q8KRegs {
  __m512i qs[4];
  __m256i bsums;
  float d;
};

inline Q8KRegs load_q8k(const BlockQ8KA& y) {
  Q8KRegs a;
  K3_UNROLL for (int p = 0; p < 4; ++p) a.qs[p] = _mm512_loadu_si512(y.qs + 64 * p);
  a.bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
  a.d = y.d;
  return a;
}

// Σ over the four pairs p of prod[p] · (the int16 scales of ls spread by lsel[p]), on top of
// init, as 8 int32 lanes: the two 256-bit halves (one 32-weight group each) added as integers,
// which is the AVX2 kernels' sumi exactly. Two short chains instead of one of four.
inline __m256i scaled_sum(const __m512i (&prod)[4], __m512i ls, const __m512i (&lsel)[4], __m512i init) {
  __m512i s0 = _mm512_dpwssd_epi32(init, prod[0], _mm512_permutexvar_epi16(lsel[0], ls));
  __m512i s1 = _mm512_madd_epi16(prod[1], _mm512_permutexvar_epi16(lsel[1], ls));
  s0 = _mm512_dpwssd_epi32(s0, prod[2], _mm512_permutexvar_epi16(lsel[2], ls));
  s1 = _mm512_dpwssd_epi32(s1, prod[3], _mm512_permutexvar_epi16(lsel[3], ls));
  const __m512i s = _mm512_add_epi32(s0, s1);
  return _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
}

// R rows of a 256-blocked type against one Q8_K activation row. F is the type: its constants
// (built once per call), F::Block, F::kScale (applied to the final sum) and the per-super-block
// step f.block<kLast>(x, y, acc), kLast marking the row's last block (for the types whose wide
// load would pass the row's end). R = 1 is the single-row kernel, and each row of a group takes
// exactly its steps, so every group row equals it bit for bit.
// The activation registers a type's block step takes: Q8KRegs, or what F::load makes of the
// block where F wants more (shared by the group's rows).
template <class F>
auto load_act(const F& f, const BlockQ8KA& y) {
  if constexpr (requires { f.load(y); }) return f.load(y);
  else return load_q8k(y);
}

template <class F, int R>
void superblock_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out) {
  using Block = typename F::Block;
  const Block* x[R];
  K3_UNROLL for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const Block*>(w + r * rs);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  const F f;
  const size_t pf = prefetch_distance<R>(rs);
  __m256 acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  const int64_t nb = n / 256;
  for (int64_t b = 0; b + 1 < nb; ++b) {
    const auto a = load_act(f, y[b]);
    K3_UNROLL for (int r = 0; r < R; ++r) {
      prefetch_at(x[r] + b, pf);
      acc[r] = f.template block<false>(x[r][b], a, acc[r]);
    }
  }
  if (nb > 0) {
    const auto a = load_act(f, y[nb - 1]);
    K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = f.template block<true>(x[r][nb - 1], a, acc[r]);
  }
  K3_UNROLL for (int r = 0; r < R; ++r) out[r] = F::kScale * simd::hsum(acc[r]);
}

// ---------------------------------------------------------------------------------------------
// IQ2_XXS (layout and unpacking: iq_unpack_avx512.h).

// R rows against one activation row. Each row's integer sums and float steps are the same
// whatever R, so R = 1 is the single-row kernel and every group row equals it bit for bit.
// kLookup: how the grid bytes are fetched (vec_dot_impl.h: cpu_iq_lookup()); the bytes, hence
// the results, are the same every way.
template <int R, IqLookup kLookup>
void iq2_xxs_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out) {
  const blk::IQ2_XXS* x[R];
  K3_UNROLL for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const blk::IQ2_XXS*>(w + r * rs);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  const iq512::Iq2xxs u;
  [[maybe_unused]] const iq512::Iq2xxsCodesIf<kLookup == IqLookup::codes> by_codes;
  const __m512i zero = _mm512_setzero_si512();
  // The scale of group k is in int16 lane 4k of the scale vector, spread over the group's 16 lanes.
  __m512i lsel[4];
  K3_UNROLL for (int p = 0; p < 4; ++p) lsel[p] = spread_words(8 * p, 4, 16);
  const size_t pf = prefetch_distance<R>(rs);
  __m256 acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    __m512i a[4];
    K3_UNROLL for (int p = 0; p < 4; ++p) a[p] = _mm512_loadu_si512(y[b].qs + 64 * p);
    const float dy = y[b].d;
    K3_UNROLL for (int r = 0; r < R; ++r) {
      const blk::IQ2_XXS& xb = x[r][b];
      prefetch_at(&xb, pf);
      const __m512i q = _mm512_loadu_si512(xb.qs);
      const __m512i ls = u.scales(q);
      alignas(32) __mmask64 neg[4];
      u.sign_masks(q, neg);
      asm("" : "+m"(neg));
      [[maybe_unused]] __m512i codes;
      if constexpr (kLookup == IqLookup::codes) codes = by_codes.codes(q);
      __m512i prod[4];
      K3_UNROLL for (int p = 0; p < 4; ++p) {
        __m512i g;
        if constexpr (kLookup == IqLookup::codes) g = by_codes.grid_quarter(codes, p);
        else if constexpr (kLookup == IqLookup::loads) g = u.grid_pair_loads(xb, p);
        else g = u.grid_pair(q, p);
        prod[p] = _mm512_maddubs_epi16(g, _mm512_mask_sub_epi8(a[p], _load_mask64(&neg[p]), zero, a[p]));
      }
      const __m256i sumi = scaled_sum(prod, ls, lsel, zero);
      const float d = simd::f16(xb.d);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * dy), _mm256_cvtepi32_ps(sumi), acc[r]);
    }
  }
  K3_UNROLL for (int r = 0; r < R; ++r) out[r] = 0.125f * simd::hsum(acc[r]);
}

void iq2_xxs_1(int64_t n, const void* w, const void* act, float* out) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  switch (cpu_iq_lookup()) {
    case IqLookup::codes: return iq2_xxs_rows<1, IqLookup::codes>(n, wb, 0, act, out);
    case IqLookup::loads: return iq2_xxs_rows<1, IqLookup::loads>(n, wb, 0, act, out);
    case IqLookup::gather: return iq2_xxs_rows<1, IqLookup::gather>(n, wb, 0, act, out);
  }
}

// ---------------------------------------------------------------------------------------------
// IQ2_XS (74 bytes: d, qs[32] u16 = 9-bit grid index | 7-bit sign index << 9, scales[8] = two
// 4-bit scales per group, first 16 weights in the low nibble). As IQ2_XXS: one gather per 64
// weights, the signs as k-masks through the ksigns table, and the per-16 scales 2s+1 in int16
// lanes in sub-block order (nibble j at bits 4j), spread over each pair's lanes as for IQ1.

// vpermb control: byte k ← the high byte of qs word k (its sign index is that byte >> 1).
constexpr Bytes64 make_iq2xs_sign_bytes() {
  Bytes64 r{};
  for (int k = 0; k < 64; ++k) r.v[k] = static_cast<uint8_t>(2 * (k % 32) + 1);
  return r;
}
constexpr Bytes64 kIq2xsSignBytes = make_iq2xs_sign_bytes();

// vpmultishiftqb control for the 16 scales, one per int16 lane j: nibble j read one bit early,
// so the low byte is 2·s + a stray bit, which the ternary op replaces by the +1.
constexpr Bytes64 make_iq2xs_scale_shift() {
  Bytes64 r{};
  for (int j = 0; j < 16; ++j) r.v[2 * j] = static_cast<uint8_t>((4 * j + 63) % 64);
  return r;
}
constexpr Bytes64 kIq2xsScaleShift = make_iq2xs_scale_shift();

template <int R>
void iq2_xs_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out) {
  const blk::IQ2_XS* x[R];
  K3_UNROLL for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const blk::IQ2_XS*>(w + r * rs);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  const long long* grid = reinterpret_cast<const long long*>(quant::kIq2xsGrid);
  const __m512i ks_lo = _mm512_loadu_si512(quant::kKsignsIq2xs);
  const __m512i ks_hi = _mm512_loadu_si512(quant::kKsignsIq2xs + 64);
  const __m512i sign_bytes = _mm512_load_si512(kIq2xsSignBytes.v);
  const __m256i scale_shift = _mm256_load_si256(reinterpret_cast<const __m256i*>(kIq2xsScaleShift.v));
  const __m512i zero = _mm512_setzero_si512();
  // Pair p = groups 2p, 2p+1 = qs words 8p..8p+7 and sub-blocks 4p..4p+3.
  __m512i gsel[4], lsel[4];
  K3_UNROLL for (int p = 0; p < 4; ++p) {
    gsel[p] = qword_lanes_from_words(p);
    lsel[p] = spread_words(4 * p, 1, 8);
  }
  const size_t pf = prefetch_distance<R>(rs);
  __m256 acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    __m512i a[4];
    K3_UNROLL for (int p = 0; p < 4; ++p) a[p] = _mm512_loadu_si512(y[b].qs + 64 * p);
    const float dy = y[b].d;
    K3_UNROLL for (int r = 0; r < R; ++r) {
      const blk::IQ2_XS& xb = x[r][b];
      prefetch_at(&xb, pf);
      const __m512i q = _mm512_loadu_si512(xb.qs);
      const __m512i gidx = _mm512_and_si512(q, _mm512_set1_epi16(511));
      // vpermt2b reads the low 7 bits: the word shift's stray bit lands in bit 7.
      const __m512i sidx = _mm512_srli_epi16(_mm512_permutexvar_epi8(sign_bytes, q), 1);
      // The masks go through memory, as for IQ2_XXS (one load uop per kmov).
      alignas(32) __mmask64 neg[4];
      _mm256_store_si256(reinterpret_cast<__m256i*>(neg),
                         _mm512_castsi512_si256(_mm512_permutex2var_epi8(ks_lo, sidx, ks_hi)));
      asm("" : "+m"(neg));
      const __m256i sc = _mm256_castpd_si256(_mm256_broadcast_sd(reinterpret_cast<const double*>(xb.scales)));
      // (f2 & 30) | 1 in one ternary op
      const __m256i ls = _mm256_ternarylogic_epi32(_mm256_multishift_epi64_epi8(scale_shift, sc),
                                                   _mm256_set1_epi16(30), _mm256_set1_epi16(1), 0xEA);
      const __m512i ls512 = _mm512_zextsi256_si512(ls);
      __m512i prod[4];
      K3_UNROLL for (int p = 0; p < 4; ++p) {
        const __m512i gi = _mm512_maskz_permutexvar_epi16(0x11111111u, gsel[p], gidx);
        const __m512i g = _mm512_i64gather_epi64(gi, grid, 8);
        prod[p] = _mm512_maddubs_epi16(g, _mm512_mask_sub_epi8(a[p], _load_mask64(&neg[p]), zero, a[p]));
      }
      const __m256i sumi = scaled_sum(prod, ls512, lsel, zero);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(simd::f16(xb.d) * dy), _mm256_cvtepi32_ps(sumi), acc[r]);
    }
  }
  K3_UNROLL for (int r = 0; r < R; ++r) out[r] = 0.125f * simd::hsum(acc[r]);
}

void iq2_xs_1(int64_t n, const void* w, const void* act, float* out) {
  iq2_xs_rows<1>(n, static_cast<const uint8_t*>(w), 0, act, out);
}

// ---------------------------------------------------------------------------------------------
// IQ1_M and IQ1_S: 32 table indices into the offset grid of vec_dot_iquants.cpp (weights + 9 as
// unsigned bytes; the 9·Σa is taken back with bsums). IQ1_M's unpacking: iq_unpack_avx512.h.

// −9·Σ ls·bsum, the offset grid's +9 taken back (IQ1 in both layouts): the AVX2 kernel's
// 0 − madd(9·ls, bsums), as the same exact integers. The opaque constant keeps GCC from
// turning the one multiply into shift, add and negate.
inline __m256i minus9_bsums(__m256i ls, __m256i bsums) {
  __m256i minus9 = _mm256_set1_epi16(-9);
  asm("" : "+v"(minus9));
  return _mm256_madd_epi16(_mm256_mullo_epi16(ls, minus9), bsums);
}

// The part both IQ1 formats share, per super-block and row: the 32 table indices (int16 lane g:
// grid index | delta sign << 11, into the offset grid), the 16 sub-block scales 2s+1 (int16
// lanes in bsums order) and the super-block scale d. Few port-0/5 uops (see the top).
struct Iq1 {
  static constexpr float kScale = 0.125f;
  const long long* grid = reinterpret_cast<const long long*>(iq1_offset_grid());
  // Pair p = sub-blocks 4p..4p+3 (16 weights, 8 int16 maddubs lanes each).
  __m512i gsel[4], lsel[4];
  Iq1() {
    K3_UNROLL for (int p = 0; p < 4; ++p) {
      gsel[p] = qword_lanes_from_words(p);
      lsel[p] = spread_words(4 * p, 1, 8);
    }
  }

  __m256 finish(__m512i idx, __m256i ls, float d, const Q8KRegs& y, __m256 acc) const {
    const __m256i init = minus9_bsums(ls, y.bsums);
    __m512i prod[4];
    K3_UNROLL for (int p = 0; p < 4; ++p) {
      const __m512i gi = _mm512_maskz_permutexvar_epi16(0x11111111u, gsel[p], idx);
      const __m512i g = _mm512_i64gather_epi64(gi, grid, 8);
      prod[p] = _mm512_maddubs_epi16(g, y.qs[p]);
    }
    const __m256i sumi = scaled_sum(prod, _mm512_zextsi256_si512(ls), lsel, _mm512_zextsi256_si512(init));
    return _mm256_fmadd_ps(_mm256_set1_ps(d * y.d), _mm256_cvtepi32_ps(sumi), acc);
  }
};

struct Iq1m : Iq1 {
  using Block = blk::IQ1_M;
  template <bool kLast>
  __m256 block(const Block& x, const Q8KRegs& y, __m256 acc) const {
    const iq512::Iq1mFields f = iq512::iq1m_fields<kLast>(x);
    return finish(f.idx, f.ls, f.d, y, acc);
  }
};

// IQ1_S (50 bytes: d, qs[32], qh[8]): index g = qs[g] | bits 3(g%4)..+2 of qh[g/4] << 8 |
// bit 15 of qh[g/4] << 11; the scale of sub-block j (16 weights) is bits 12..14 of qh[j/2].
// vpermb controls: qs byte g into int16 lane g; qh word g/4 into lane g; qh word j/2 into lane j.
constexpr Bytes64 make_iq1s_bytes(int kind) {
  Bytes64 r{};
  for (int g = 0; g < 32; ++g) {
    const int word = kind == 1 ? g / 4 : g / 2;
    r.v[2 * g] = static_cast<uint8_t>(kind == 0 ? 2 + g : 34 + 2 * word);
    r.v[2 * g + 1] = static_cast<uint8_t>(kind == 0 ? 0 : 35 + 2 * word);
  }
  return r;
}
constexpr Bytes64 kIq1sQsBytes = make_iq1s_bytes(0), kIq1sQhBytes = make_iq1s_bytes(1),
                  kIq1sScaleBytes = make_iq1s_bytes(2);

struct Iq1s : Iq1 {
  using Block = blk::IQ1_S;
  template <bool kLast>
  __m256 block(const Block& x, const Q8KRegs& y, __m256 acc) const {
    // 50-byte block: only the row's last one needs the mask (25 words).
    const __m512i bytes = kLast ? _mm512_maskz_loadu_epi16(0x1FFFFFF, &x) : _mm512_loadu_si512(&x);
    const __m512i qs =
        _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, _mm512_load_si512(kIq1sQsBytes.v), bytes);
    const __m512i qh = _mm512_permutexvar_epi8(_mm512_load_si512(kIq1sQhBytes.v), bytes);
    const __m512i shift = _mm512_set4_epi64(0x0009000600030000ll, 0x0009000600030000ll, 0x0009000600030000ll,
                                            0x0009000600030000ll);
    // bits 8..10: the group's three high index bits; bit 11: the delta sign (qh bit 15)
    const __m512i hi = _mm512_slli_epi16(_mm512_srlv_epi16(qh, shift), 8);
    const __m512i sign = _mm512_srli_epi16(qh, 4);
    const __m512i high =
        _mm512_ternarylogic_epi32(_mm512_set1_epi16(0x0700), hi, sign, 0xCA);  // m ? hi : sign
    const __m512i idx =
        _mm512_ternarylogic_epi32(high, _mm512_set1_epi16(0x0F00), qs, 0xEA);  // (high & m) | qs
    const __m256i sw =
        _mm512_castsi512_si256(_mm512_permutexvar_epi8(_mm512_load_si512(kIq1sScaleBytes.v), bytes));
    // 2·((w >> 12) & 7) + 1 = ((w >> 11) & 14) | 1 in one ternary op
    const __m256i ls = _mm256_ternarylogic_epi32(_mm256_srli_epi16(sw, 11), _mm256_set1_epi16(14),
                                                 _mm256_set1_epi16(1), 0xEA);
    return finish(idx, ls, simd::f16(x.d), y, acc);
  }
};

// IQ1_M in its decode layout (kernels/decode_layout.h): the offset-grid bytes 8·grid + 9 ± 1 =
// 8·code + (0 or 2) come from the 2-bit codes by one gf2p8affineqb (a bit matrix per 128-bit
// lane that moves the lane's code bits to bits 3 and 4; no gather, no table); per 4 weights (one
// dword) vpdpbusd adds Σ 8·code·a to an accumulator that starts, by one masked move, at the
// 2·Σa of those 4 weights where the delta is +1 and at 0 elsewhere (2·Σa is taken once per
// super-block for all the group's rows).
// The dword of quarter p and lane m covers weights 64p + 4m..+3, as the maddubs/dpwssd pair of
// Iq1m does, and its sum fits int16 (|Σ| ≤ 4·18·127), so one vpdpwssd against (ls, 0) word
// pairs scales it: the same int32 lanes as Iq1m::finish, hence the same floats bit for bit.
struct Iq1mDecode {
  static constexpr float kScale = 0.125f;
  using Block = Iq1mDecodeBlock;
  struct Act {
    Q8KRegs q;
    __m512i sum4x2[4];  // per quarter, dword m: 2·Σ a over weights 64p + 4m..+3
  };
  // The gf2p8affineqb matrix of 128-bit lane k (output bit i = parity(matrix byte 7 − i & the
  // input byte)): bit 3 ← bit 2k, bit 4 ← bit 2k + 1, every other bit 0, so each byte becomes
  // 8·(its lane's code) in one op.
  __m512i code_bits = _mm512_set_epi64(0x0000004080000000ll, 0x0000004080000000ll, 0x0000001020000000ll,
                                       0x0000001020000000ll, 0x0000000408000000ll, 0x0000000408000000ll,
                                       0x0000000102000000ll, 0x0000000102000000ll);
  __m512i lsel[4];  // quarter p: dword m ← (ls of sub-block 4p + m/4, 0)
  Iq1mDecode() { K3_UNROLL for (int p = 0; p < 4; ++p) lsel[p] = spread_words(4 * p, 1, 8); }
  Act load(const BlockQ8KA& y) const {
    Act a;
    a.q = load_q8k(y);
    const __m512i ones = _mm512_set1_epi8(1);
    K3_UNROLL for (int p = 0; p < 4; ++p) a.sum4x2[p] =
        _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, a.q.qs[p]), 1);
    return a;
  }
  template <bool kLast>
  __m256 block(const Block& x, const Act& y, __m256 acc) const {
    const iq512::Iq1mScales sc = iq512::iq1m_scales(x.scales);
    const __m256i init = minus9_bsums(sc.ls, y.q.bsums);
    const __m512i ls512 = _mm512_zextsi256_si512(sc.ls);
    __m512i s0 = _mm512_zextsi256_si512(init), s1 = _mm512_setzero_si512();
    K3_UNROLL for (int p = 0; p < 4; ++p) {
      const __m512i codes =
          _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.codes + 16 * p)));
      const __m512i grid8 = _mm512_gf2p8affine_epi64_epi8(codes, code_bits, 0);
      __m512i t = _mm512_maskz_mov_epi32(static_cast<__mmask16>(x.delta_plus >> (16 * p)), y.sum4x2[p]);
      t = _mm512_dpbusd_epi32(t, grid8, y.q.qs[p]);
      const __m512i l = _mm512_maskz_permutexvar_epi16(0x55555555u, lsel[p], ls512);
      if (p % 2 == 0) s0 = _mm512_dpwssd_epi32(s0, t, l);
      else s1 = _mm512_dpwssd_epi32(s1, t, l);
    }
    const __m512i s = _mm512_add_epi32(s0, s1);
    const __m256i sumi = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    return _mm256_fmadd_ps(_mm256_set1_ps(sc.d * y.q.d), _mm256_cvtepi32_ps(sumi), acc);
  }
};

template <int R>
constexpr auto iq1_m_rows = &superblock_rows<Iq1m, R>;
template <int R>
constexpr auto iq1_m_decode_rows = &superblock_rows<Iq1mDecode, R>;
template <int R>
constexpr auto iq1_s_rows = &superblock_rows<Iq1s, R>;

void iq1_m_1(int64_t n, const void* w, const void* act, float* out) {
  iq1_m_rows<1>(n, static_cast<const uint8_t*>(w), 0, act, out);
}

void iq1_s_1(int64_t n, const void* w, const void* act, float* out) {
  iq1_s_rows<1>(n, static_cast<const uint8_t*>(w), 0, act, out);
}

// ---------------------------------------------------------------------------------------------
// MXFP4 against Q8_0 activations: two 32-weight blocks per zmm. Integer part, per pair:
// - one 64-byte load from the first block; vpermb puts each block's 16 code bytes twice
//   (qwords: qs[0..7], qs[8..15], qs[0..7], qs[8..15]); a masked vpsrlw by 4 on the second
//   copy brings the high nibbles (elements 16..31) down; vpermb through the value table
//   replicated to 64 entries reads the low 6 bits, so the bits above the nibble need no mask.
//   The result is the 64 weights in the activations' order, block b in the low 256 bits.
// - the table holds u = w + 12 ∈ [0, 24] (|w| ≤ 12), so one vpdpbusd multiplies unsigned by
//   signed bytes: Σ₄ w·a = Σ₄ u·a − 12·Σ₄ a, the init −12·Σ₄ a coming from the activations
//   alone (shared by the rows of a group). Each int32 lane is the exact sum the AVX2 kernel
//   forms for the same four weights, so lane j of block b is the same integer.
// Float part, per block and row, exactly the AVX2 loop's steps: acc[b % 4] = fmadd(cvt(8
// lanes), set1(d_w·d_a), acc[b % 4]) in four 8-lane chains, then (acc0 + acc2) + (acc1 +
// acc3) and simd::hsum. One chain (4-cycle latency per block) bounded a row.
alignas(64) constexpr uint8_t kMxfp4Arrange[64] = {
    1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 1,  2,  3,  4,  5,  6,
    7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
    30, 31, 32, 33, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33};
// int16 lanes holding the second copies (bytes 16..31 and 48..63).
constexpr __mmask32 kMxfp4HighWords = 0xFF00FF00u;

// blk::e8m0_half for every exponent byte, so the scale is a broadcast load.
struct E8m0Table {
  alignas(64) float v[256];
};
constexpr E8m0Table make_e8m0_table() {
  E8m0Table t{};
  for (int e = 0; e < 256; ++e) t.v[e] = blk::e8m0_half(static_cast<uint8_t>(e));
  return t;
}
constexpr E8m0Table kE8m0Half = make_e8m0_table();

// Activations of one pair (or of a last single block), shared by the rows of a group.
struct Q80Pair {
  __m512i a;
  __m512i init;  // −12·Σ₄ a per int32 lane
};

template <bool kTwo>
inline Q80Pair load_q80_pair(const BlockQ8_0A* y) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[0].qs));
  Q80Pair p;
  if constexpr (kTwo) {
    p.a = _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[1].qs)), 1);
  } else {
    p.a = _mm512_zextsi256_si512(lo);
  }
  p.init = _mm512_sub_epi32(_mm512_setzero_si512(),
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(12), p.a));
  return p;
}

// kFull: the 64-byte load stays inside the row (at least four blocks from b on); otherwise
// only the pair's (or block's) bytes are read.
template <bool kFull, bool kTwo>
inline __m512i mxfp4_pair_sums(const blk::MXFP4* x, const Q80Pair& y, __m512i arrange, __m512i table) {
  __m512i raw;
  if constexpr (kFull) raw = _mm512_loadu_si512(x);
  else raw = _mm512_maskz_loadu_epi8(kTwo ? 0x3FFFFFFFFull : 0x1FFFFull, x);
  const __m512i codes = _mm512_permutexvar_epi8(arrange, raw);
  const __m512i nib = _mm512_mask_srli_epi16(codes, kMxfp4HighWords, codes, 4);
  const __m512i u = _mm512_permutexvar_epi8(nib, table);
  return _mm512_dpbusd_epi32(y.init, u, y.a);
}

inline __m256 mxfp4_fma(__m256 acc, __m256i sumi, uint8_t e, float dy) {
  const __m256 d = _mm256_mul_ps(_mm256_set1_ps(kE8m0Half.v[e]), _mm256_set1_ps(dy));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), d, acc);
}

// R rows against one activation row; R = 1 is the single-row kernel, and each row of a group
// takes exactly its steps.
template <int R>
void mxfp4_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out) {
  const blk::MXFP4* x[R];
  K3_UNROLL for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const blk::MXFP4*>(w + r * rs);
  const BlockQ8_0A* y = static_cast<const BlockQ8_0A*>(act);
  const __m512i arrange = _mm512_load_si512(kMxfp4Arrange);
  const __m512i table =
      _mm512_add_epi8(_mm512_maskz_broadcast_i32x4(
                          0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kValuesFp4))),
                      _mm512_set1_epi8(12));
  const size_t pf = prefetch_distance<R>(rs);
  __m256 acc[R][4];
  K3_UNROLL for (int r = 0; r < R; ++r) K3_UNROLL for (int c = 0; c < 4; ++c) acc[r][c] = _mm256_setzero_ps();
  const int64_t nb = n / 32;
  // Blocks b and b + 1 (b even) into chains kSlot and kSlot + 1, kSlot = b % 4.
  auto pair = [&]<bool kFull, bool kTwo, int kSlot>(int64_t b) {
    const Q80Pair a = load_q80_pair<kTwo>(y + b);
    K3_UNROLL for (int r = 0; r < R; ++r) {
      const blk::MXFP4* xb = x[r] + b;
      if constexpr (kFull) prefetch_at(xb, pf);
      const __m512i s = mxfp4_pair_sums<kFull, kTwo>(xb, a, arrange, table);
      acc[r][kSlot] = mxfp4_fma(acc[r][kSlot], _mm512_castsi512_si256(s), xb[0].e, y[b].d);
      if constexpr (kTwo)
        acc[r][kSlot + 1] =
            mxfp4_fma(acc[r][kSlot + 1], _mm512_extracti64x4_epi64(s, 1), xb[1].e, y[b + 1].d);
    }
  };
  // Where the 64-byte load stays inside the row (b + 4 ≤ nb), two pairs per step.
  int64_t b = 0;
  for (; b + 6 <= nb; b += 4) {
    pair.template operator()<true, true, 0>(b);
    pair.template operator()<true, true, 2>(b + 2);
  }
  if (b + 4 <= nb) {
    pair.template operator()<true, true, 0>(b);
    b += 2;
  }
  for (; b + 2 <= nb; b += 2) {
    if (b & 2) pair.template operator()<false, true, 2>(b);
    else pair.template operator()<false, true, 0>(b);
  }
  if (b < nb) {
    if (b & 2) pair.template operator()<false, false, 2>(b);
    else pair.template operator()<false, false, 0>(b);
  }
  K3_UNROLL for (int r = 0; r < R; ++r) out[r] =
      simd::hsum(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][2]), _mm256_add_ps(acc[r][1], acc[r][3])));
}

void mxfp4_1(int64_t n, const void* w, const void* act, float* out) {
  mxfp4_rows<1>(n, static_cast<const uint8_t*>(w), 0, act, out);
}

// ---------------------------------------------------------------------------------------------
// Q3_K against Q8_K. The AVX2 kernel spends ~11 uops per 32 weights rebuilding u = q3 + 4
// (shift, and, hmask compare, blend) on three ports; here zmm p holds groups 2p and 2p+1 (one
// per 256-bit half, as the activations lie), so each step covers 64 weights. Per half the int32
// lanes are the AVX2 kernel's for that group (maddubs, then the same int16 scale products, now
// one vpdpwssd), and the two halves are added as integers, so sumi is the AVX2 vector exactly;
// the −4·Σ s·bsums correction and the float step are its code unchanged.

// Per-zmm constants: group g = 2p + half reads qs[32·(g/4) + m] >> 2·(g%4) and hmask bit g.
struct Q3kConsts {
  __m512i shift[2];  // p even / odd: word shifts (0 | 2), (4 | 6) for the two halves
  __m512i bit[4];    // hmask bit of group 2p | 2p+1
  __m512i lsel[4];   // int16 lane i of zmm p ← scale 4p + i/8
};

inline Q3kConsts q3k_consts() {
  Q3kConsts c;
  K3_UNROLL for (int e = 0; e < 2; ++e) {
    c.shift[e] = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(static_cast<int16_t>(4 * e)),
                                         _mm512_set1_epi16(static_cast<int16_t>(4 * e + 2)));
  }
  K3_UNROLL for (int p = 0; p < 4; ++p) {
    c.bit[p] =
        _mm512_mask_blend_epi8(0xFFFFFFFF00000000ull, _mm512_set1_epi8(static_cast<char>(1 << (2 * p))),
                               _mm512_set1_epi8(static_cast<char>(1 << (2 * p + 1))));
    c.lsel[p] = spread_words(4 * p, 1, 8);
  }
  return c;
}

inline __m256 q3_k_block(const blk::Q3_K& x, const Q8KRegs& y, __m256 acc, const Q3kConsts& c) {
  const __m512i m3 = _mm512_set1_epi8(3);
  const __m512i four = _mm512_set1_epi8(4);
  const __m128i sc = q3k_scales_vec(x.scales);
  const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
  const __m512i sc512 = _mm512_zextsi256_si512(sc16);
  const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.hmask)));
  __m512i q[2];
  K3_UNROLL for (int h = 0; h < 2; ++h) q[h] =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * h)));
  __m512i prod[4];
  K3_UNROLL for (int p = 0; p < 4; ++p) {
    // a word shift leaks the neighbour byte's bits only above bit 1, which the mask drops
    const __m512i lo = _mm512_and_si512(_mm512_srlv_epi16(q[p / 2], c.shift[p % 2]), m3);
    const __m512i u = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(hm, c.bit[p]), lo, four);
    prod[p] = _mm512_maddubs_epi16(u, y.qs[p]);
  }
  const __m256i sumi = scaled_sum(prod, sc512, c.lsel, _mm512_setzero_si512());
  const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(y.bsums, sc16), 2);
  const float d = simd::f16(x.d);
  return _mm256_fmadd_ps(_mm256_set1_ps(d * y.d), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi, corr)), acc);
}

struct Q3k : Q3kConsts {
  using Block = blk::Q3_K;
  static constexpr float kScale = 1.0f;
  Q3k() : Q3kConsts(q3k_consts()) {}
  template <bool kLast>
  __m256 block(const Block& x, const Q8KRegs& y, __m256 acc) const {
    return q3_k_block(x, y, acc, *this);
  }
};

template <int R>
constexpr auto q3_k_rows = &superblock_rows<Q3k, R>;

void q3_k_1(int64_t n, const void* w, const void* act, float* out) {
  q3_k_rows<1>(n, static_cast<const uint8_t*>(w), 0, act, out);
}

// Rows per group of the multi-row entry points; the rest go one at a time.
constexpr int kGroupRows = 4;

template <IqLookup kLookup>
void iq2_xxs_dot_rows(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                      float* out) {
  rows_by_group<kGroupRows, iq2_xxs_rows<kGroupRows, kLookup>, iq2_xxs_rows<1, kLookup>>(n, w, row_stride,
                                                                                         n_rows, act, out);
}

}  // namespace

void dot_iq2_xxs_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out) {
  if (nt == 1) iq2_xxs_1(n, w, act, out);
  else dot_iq2_xxs(n, w, act, act_stride, nt, out);
}

void dot_iq1_m_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out) {
  if (nt == 1) iq1_m_1(n, w, act, out);
  else dot_iq1_m(n, w, act, act_stride, nt, out);
}

void dot_iq2_xs_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out) {
  if (nt == 1) iq2_xs_1(n, w, act, out);
  else dot_iq2_xs(n, w, act, act_stride, nt, out);
}

void dot_rows_iq2_xs_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                            float* out) {
  rows_by_group<kGroupRows, iq2_xs_rows<kGroupRows>, iq2_xs_rows<1>>(n, w, row_stride, n_rows, act, out);
}

void dot_iq1_s_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out) {
  if (nt == 1) iq1_s_1(n, w, act, out);
  else dot_iq1_s(n, w, act, act_stride, nt, out);
}

void dot_rows_iq1_s_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out) {
  rows_by_group<kGroupRows, iq1_s_rows<kGroupRows>, iq1_s_rows<1>>(n, w, row_stride, n_rows, act, out);
}

void dot_mxfp4_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out) {
  if (nt == 1) mxfp4_1(n, w, act, out);
  else if (use_avx_vnni()) dot_mxfp4_vnni(n, w, act, act_stride, nt, out);
  else dot_mxfp4(n, w, act, act_stride, nt, out);
}

void dot_rows_mxfp4_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out) {
  rows_by_group<kGroupRows, mxfp4_rows<kGroupRows>, mxfp4_rows<1>>(n, w, row_stride, n_rows, act, out);
}

void dot_rows_iq2_xxs_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                             float* out) {
  switch (cpu_iq_lookup()) {
    case IqLookup::codes: return iq2_xxs_dot_rows<IqLookup::codes>(n, w, row_stride, n_rows, act, out);
    case IqLookup::loads: return iq2_xxs_dot_rows<IqLookup::loads>(n, w, row_stride, n_rows, act, out);
    case IqLookup::gather: return iq2_xxs_dot_rows<IqLookup::gather>(n, w, row_stride, n_rows, act, out);
  }
}

void dot_rows_iq1_m_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out) {
  rows_by_group<kGroupRows, iq1_m_rows<kGroupRows>, iq1_m_rows<1>>(n, w, row_stride, n_rows, act, out);
}

void dot_rows_iq1_m_decode_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows,
                                  const void* act, float* out) {
  rows_by_group<kGroupRows, iq1_m_decode_rows<kGroupRows>, iq1_m_decode_rows<1>>(n, w, row_stride, n_rows,
                                                                                 act, out);
}

void dot_q3_k_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out) {
  if (nt == 1) q3_k_1(n, w, act, out);
  else dot_q3_k(n, w, act, act_stride, nt, out);
}

void dot_rows_q3_k_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                          float* out) {
  rows_by_group<kGroupRows, q3_k_rows<kGroupRows>, q3_k_rows<1>>(n, w, row_stride, n_rows, act, out);
}

}  // namespace k3::kernels::impl
