// quant/iq_one_bit: internals of the IQ1_M quantizer exposed for its twin test (internal to
// k3_quant and tests/quant).
// Contract: iq1m_split_search is IQ1_M's exhaustive split search over the 16 values of a
// sub-block sorted by idx (ascending value, stable): for every (i1 <= i2) the first i1 sorted
// values get level 0, the next i2−i1 level 1, the rest level 2, and for each of the four
// delta-sign hypotheses k = (+,+), (+,−), (−,+), (−,−) (first 8 values, last 8) the fit
// Σw·v·x / Σw·v² is scored; the best candidate in (i1, i2, k) order with strict improvement
// wins. Each candidate's sums are accumulated in sorted order, term by term, (w·v)·x and
// (w·v)·v, without fused operations. On return scale, besti1, besti2, best_k hold the winner;
// they are left as they were when no candidate has Σw·v² > 0 and a better score than −FLT_MAX.
// With K3_SIMD_X86 iq1m_split_search is the AVX2 form (eight i2 per vector), else the scalar
// twin; the two agree bit for bit.
#pragma once

namespace k3::quant::iq {

void iq1m_split_search_scalar(const float* xb, const float* weight, const int* idx, float& scale, int& besti1,
                              int& besti2, int& best_k);
#if defined(K3_SIMD_X86)
void iq1m_split_search_avx2(const float* xb, const float* weight, const int* idx, float& scale, int& besti1,
                            int& besti2, int& best_k);
#endif

inline void iq1m_split_search(const float* xb, const float* weight, const int* idx, float& scale, int& besti1,
                              int& besti2, int& best_k) {
#if defined(K3_SIMD_X86)
  iq1m_split_search_avx2(xb, weight, idx, scale, besti1, besti2, best_k);
#else
  iq1m_split_search_scalar(xb, weight, idx, scale, besti1, besti2, best_k);
#endif
}

}  // namespace k3::quant::iq
