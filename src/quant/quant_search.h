// quant/quant_search: the scale/level search helpers of the k-quant reference quantizers
// (ggml-quants.c's make_qx_quants, make_q3_quants, make_qkx2/3_quants, make_qp_quants),
// internal to k3_quant.
// Contract: binary32 arithmetic evaluated in the reference's order (this code must not be built
// with FMA contraction or fast-math), so that callers reproduce ggml's bytes. Level arrays
// keep the reference's storage types: int8 for make_qx/make_q3, uint8 for the others (make_qp
// relies on uint8 wrap-around of negative levels).
#pragma once

#include <cstdint>

namespace k3::quant::detail {

// Below this, a group's values count as all zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// Symmetric signed levels L in [0, 2·nmax-1] (offset nmax); weights w, or x² when w is null.
float make_qx(int n, int nmax, const float* x, int8_t* L, const float* w);
// Q3_K reference search (weights x², coordinate descent); levels offset by nmax.
float make_q3(int n, int nmax, const float* x, int8_t* L);
// Asymmetric levels 0..nmax with a min; returns the scale and sets *the_min (≥ 0, subtracted at
// decode). qkx3 differs from qkx2 only in its degenerate-range test; w null means x².
float make_qkx2(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min, float rmin,
                float rdelta, int nstep, bool use_mad);
float make_qkx3(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min, float rmin,
                float rdelta, int nstep, bool use_mad);
// Non-negative values → levels 0..nmax (uint8, wrapping), weights w (required).
float make_qp(int n, int nmax, const float* x, uint8_t* L, const float* w);

}  // namespace k3::quant::detail
