// kernels/vec_dot_impl: the per-type entry points behind the DotKernel table (vec_dot.h).
// Contract: as DotFn / DotScalarFn in vec_dot.h. *_scalar are the plain-C twins; the others
// are AVX2 kernels handling 1..kMaxDotTokens tokens.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/vec_dot.h"
#include "quant/blocks.h"

namespace k3::kernels {
// The GGUF block layouts (quant/blocks.h), one set for the codecs and the kernels.
namespace blk = quant::blk;
}  // namespace k3::kernels

namespace k3::kernels::impl {

#define K3_DECLARE_DOT(name)                                                                         \
  void dot_##name(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out); \
  float dot_##name##_scalar(int64_t n, const void* w, const void* act);

K3_DECLARE_DOT(f32)
K3_DECLARE_DOT(f16)
K3_DECLARE_DOT(bf16)
K3_DECLARE_DOT(q8_0)
K3_DECLARE_DOT(mxfp4)
K3_DECLARE_DOT(q2_k)
K3_DECLARE_DOT(q3_k)
K3_DECLARE_DOT(q4_k)
K3_DECLARE_DOT(q6_k)
K3_DECLARE_DOT(iq2_xxs)
K3_DECLARE_DOT(iq2_xs)
K3_DECLARE_DOT(iq1_s)
K3_DECLARE_DOT(iq1_m)

#undef K3_DECLARE_DOT

// IQ1_M's integer sum over one super-block given its 256 weights as 8·grid ± 1 and its scales
// field: Σ over the 16 sub-blocks of (2s+1)·Σ value·a. Both IQ1_M scalar twins (the file
// layout's and the decode layout's, kernels/decode_layout.h) take it, so they agree by
// construction.
int iq1_m_isum_scalar(const int8_t* values, const uint8_t* scales, const int8_t* qs);

// Decode over several rows (DotRowsFn in vec_dot.h), AVX2 (vec_dot_iquants.cpp).
void dot_rows_iq2_xxs(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                      float* out);
void dot_rows_iq1_m(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act, float* out);
// IQ1_M and IQ2_XXS rows in their decode layouts (kernels/decode_layout.h): dot_rows_iq1_m's and
// dot_rows_iq2_xxs's results bit for bit.
void dot_rows_iq1_m_decode(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out);
void dot_rows_iq2_xxs_decode(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                             float* out);

// AVX-VNNI twins (vec_dot_vnni.cpp): same results bit for bit; call only where
// cpu_has_avx_vnni().
bool cpu_has_avx_vnni();
void dot_q8_0_vnni(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);
void dot_mxfp4_vnni(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);

// The kernel path this process runs: the widest the CPU has, or a narrower one that
// K3_CPU=avx2|avx-vnni|avx512 asks for (to measure or test it on a wider host; a request the CPU
// cannot run is refused on stderr). avx_vnni: the AVX2 kernels plus the ymm vpdpbusd ones;
// avx512: those plus the AVX-512 ones. use_* say whether a wider file's kernels are to be used
// (the CPU has them and the path includes them).
enum class CpuPath { avx2, avx_vnni, avx512 };
CpuPath cpu_path();
const char* cpu_path_name(CpuPath p);
bool use_avx_vnni();
bool use_avx512();

// AVX-512 (F/BW/VL/VBMI/VNNI, with GFNI) twins for the IQ types (vec_dot_avx512.cpp): the same results
// bit for bit; nt == 1 runs the AVX-512 loop, nt > 1 the AVX2 kernel. Call only where
// cpu_has_avx512_iq().
bool cpu_has_avx512_iq();
// How the AVX-512 IQ2_XXS decode kernels fetch grid entries: one zmm gather per 64 weights,
// eight scalar loads, or none (the grid's 2-bit codes from 512 bytes of vpermt2b tables,
// iq_unpack_avx512.h). IQ2_XXS decode on one EPYC (Zen 4) core, 256 MiB matrix: gather 4.6
// GB/s, loads 6.1, codes 8.5 (bench/RESULTS.md); on Intel the gather beat the loads, and the
// codes are unmeasured there, so Intel keeps the gather.
// Default: codes on AMD, gather elsewhere; K3_IQ_LOOKUP=gather|loads|codes overrides
// (comparisons, tests). Same results every way, bit for bit.
enum class IqLookup { gather, loads, codes };
IqLookup cpu_iq_lookup();
// The Q8_0 prefill product (gemm_q8_avx512.cpp, DotKernel::gemm; its act_sums is
// act_sums_q8_0_plus128).
void gemm_q8_0_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                      size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                      void* panel);
// The IQ2_XXS and IQ1_M prefill products (gemm_iq_avx512.cpp): act and act_stride unused (the
// tokens come repacked in sums).
void act_sums_iq2_xxs_avx512(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums);
void act_sums_iq1_m_avx512(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums);
void gemm_iq2_xxs_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                         size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                         void* panel);
void gemm_iq1_m_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                       size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                       void* panel);
// The 256-bit prefill products for hosts without AVX-512 (gemm_avx2.cpp, gemm_vnni.cpp; the
// loops in x86/gemm_q8_loops.h): the AVX2 forms, and the AVX-VNNI ones, called only where
// cpu_has_avx_vnni(). Each act_sums pairs with its own gemm (the AVX2 Q8_0 one writes nothing).
void act_sums_q8_0_avx2(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums);
void gemm_q8_0_avx2(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                    size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                    void* panel);
// IQ2_XXS and IQ1_M (x86/gemm_iq_loops.h): act and act_stride unused; the AVX-VNNI gemms take
// the AVX2 act_sums.
void act_sums_iq2_xxs_avx2(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums);
void act_sums_iq1_m_avx2(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums);
void gemm_iq2_xxs_avx2(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                       size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                       void* panel);
void gemm_iq1_m_avx2(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                     size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                     void* panel);
void gemm_iq2_xxs_vnni(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                       size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                       void* panel);
void gemm_iq1_m_vnni(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                     size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                     void* panel);
// Σa per token and block for the Q8_0 gemms whose panels hold w + 128 (AVX-VNNI, AVX-512).
void act_sums_q8_0_plus128(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums);
// The IQ gemms over rows in their decode layouts (kernels/decode_layout.h; DotKernel::gemm_decode):
// the file-layout gemms' results bit for bit, with the same act_sums.
void gemm_iq2_xxs_decode_avx2(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                              size_t act_stride, const int32_t* sums, int64_t n_tok, float* y,
                              size_t y_stride, void* panel);
void gemm_iq1_m_decode_avx2(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                            size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                            void* panel);
void gemm_iq2_xxs_decode_vnni(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                              size_t act_stride, const int32_t* sums, int64_t n_tok, float* y,
                              size_t y_stride, void* panel);
void gemm_iq1_m_decode_vnni(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                            size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                            void* panel);
void gemm_q8_0_vnni(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                    size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                    void* panel);
void dot_iq2_xxs_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);
void dot_iq1_m_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);
void dot_iq1_s_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);
void dot_iq2_xs_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);
void dot_rows_iq2_xs_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                            float* out);
void dot_rows_iq1_s_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out);
void dot_rows_iq2_xxs_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                             float* out);
void dot_rows_iq1_m_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out);
// IQ1_M rows in the decode layout (kernels/decode_layout.h): dot_rows_iq1_m_avx512's results
// bit for bit, from the rewritten blocks.
void dot_rows_iq1_m_decode_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows,
                                  const void* act, float* out);
// MXFP4 (Q8_0 activations): nt == 1 runs the AVX-512 loop, nt > 1 the AVX-VNNI or AVX2
// kernel; the rows form has no AVX2 twin (null in the table without AVX-512).
void dot_mxfp4_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);
void dot_rows_mxfp4_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out);

// Q3_K (Q8_K activations): nt == 1 runs the AVX-512 loop, nt > 1 the AVX2 kernel; the rows
// form has no AVX2 twin (null in the table without AVX-512).
void dot_q3_k_avx512(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);
void dot_rows_q3_k_avx512(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                          float* out);

// The IQ1 offset grid of vec_dot_iquants.cpp: 4096 entries, index | (delta sign << 11) →
// eight bytes 8·grid + 9 ± 1 ∈ [0, 18] (built once, on first use).
const uint64_t* iq1_offset_grid();

}  // namespace k3::kernels::impl
