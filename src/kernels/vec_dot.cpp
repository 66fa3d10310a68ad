// The table of fast dot-product kernels per weight type (see vec_dot.h) and the activation
// row conversions they consume.
#include "kernels/vec_dot.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "kernels/act_quant.h"
#include "kernels/vec_dot_impl.h"

namespace k3::kernels {

namespace {

using quant::Type;
using A = ActFormat;

#if defined(K3_SIMD_X86)
// The build for a wider extension where the kernel path (vec_dot_impl.h: cpu_path, K3_CPU)
// includes it; the results are the same bit for bit (the gemms: within float rounding).
template <class Fn>
Fn pick_vnni(Fn avx2, Fn vnni) {
  return impl::use_avx_vnni() ? vnni : avx2;
}
template <class Fn>
Fn pick_avx512(Fn narrower, Fn avx512) {
  return impl::use_avx512() ? avx512 : narrower;
}

const DotKernel kKernels[] = {
    {Type::F32, A::F32, impl::dot_f32, impl::dot_f32_scalar},
    {Type::F16, A::F32, impl::dot_f16, impl::dot_f16_scalar},
    {Type::BF16, A::F32, impl::dot_bf16, impl::dot_bf16_scalar},
    {Type::Q8_0, A::Q8_0, pick_vnni(impl::dot_q8_0, impl::dot_q8_0_vnni), impl::dot_q8_0_scalar, nullptr,
     pick_avx512<ActSumsFn>(pick_vnni<ActSumsFn>(impl::act_sums_q8_0_avx2, impl::act_sums_q8_0_plus128),
                            impl::act_sums_q8_0_plus128),
     pick_avx512<GemmFn>(pick_vnni<GemmFn>(impl::gemm_q8_0_avx2, impl::gemm_q8_0_vnni),
                         impl::gemm_q8_0_avx512)},
    {Type::MXFP4, A::Q8_0,
     pick_avx512(pick_vnni(impl::dot_mxfp4, impl::dot_mxfp4_vnni), impl::dot_mxfp4_avx512),
     impl::dot_mxfp4_scalar, pick_avx512<DotRowsFn>(nullptr, impl::dot_rows_mxfp4_avx512)},
    {Type::Q2_K, A::Q8_K, impl::dot_q2_k, impl::dot_q2_k_scalar},
    {Type::Q3_K, A::Q8_K, pick_avx512(impl::dot_q3_k, impl::dot_q3_k_avx512), impl::dot_q3_k_scalar,
     pick_avx512<DotRowsFn>(nullptr, impl::dot_rows_q3_k_avx512)},
    {Type::Q4_K, A::Q8_K, impl::dot_q4_k, impl::dot_q4_k_scalar},
    {Type::Q6_K, A::Q8_K, impl::dot_q6_k, impl::dot_q6_k_scalar},
    {Type::IQ2_XXS, A::Q8_K, pick_avx512(impl::dot_iq2_xxs, impl::dot_iq2_xxs_avx512),
     impl::dot_iq2_xxs_scalar, pick_avx512(impl::dot_rows_iq2_xxs, impl::dot_rows_iq2_xxs_avx512),
     pick_avx512<ActSumsFn>(impl::act_sums_iq2_xxs_avx2, impl::act_sums_iq2_xxs_avx512),
     pick_avx512<GemmFn>(pick_vnni<GemmFn>(impl::gemm_iq2_xxs_avx2, impl::gemm_iq2_xxs_vnni),
                         impl::gemm_iq2_xxs_avx512),
     // AVX-512 decodes the file's layout about as fast as AVX2 the decode layout, without the
     // copy's memory (docs/kernels.md): no decode copy there.
     pick_avx512<DotRowsFn>(impl::dot_rows_iq2_xxs_decode, nullptr),
     pick_avx512<GemmFn>(pick_vnni<GemmFn>(impl::gemm_iq2_xxs_decode_avx2, impl::gemm_iq2_xxs_decode_vnni),
                         nullptr)},
    {Type::IQ2_XS, A::Q8_K, pick_avx512(impl::dot_iq2_xs, impl::dot_iq2_xs_avx512), impl::dot_iq2_xs_scalar,
     pick_avx512<DotRowsFn>(nullptr, impl::dot_rows_iq2_xs_avx512)},
    {Type::IQ1_S, A::Q8_K, pick_avx512(impl::dot_iq1_s, impl::dot_iq1_s_avx512), impl::dot_iq1_s_scalar,
     pick_avx512<DotRowsFn>(nullptr, impl::dot_rows_iq1_s_avx512), nullptr, nullptr,
     // IQ1_S rows rewritten into IQ1_M's decode layout (decode_layout.h) run IQ1_M's kernels
     pick_avx512<DotRowsFn>(impl::dot_rows_iq1_m_decode, impl::dot_rows_iq1_m_decode_avx512)},
    {Type::IQ1_M, A::Q8_K, pick_avx512(impl::dot_iq1_m, impl::dot_iq1_m_avx512), impl::dot_iq1_m_scalar,
     pick_avx512(impl::dot_rows_iq1_m, impl::dot_rows_iq1_m_avx512),
     pick_avx512<ActSumsFn>(impl::act_sums_iq1_m_avx2, impl::act_sums_iq1_m_avx512),
     pick_avx512<GemmFn>(pick_vnni<GemmFn>(impl::gemm_iq1_m_avx2, impl::gemm_iq1_m_vnni),
                         impl::gemm_iq1_m_avx512),
     pick_avx512<DotRowsFn>(impl::dot_rows_iq1_m_decode, impl::dot_rows_iq1_m_decode_avx512),
     pick_avx512<GemmFn>(pick_vnni<GemmFn>(impl::gemm_iq1_m_decode_avx2, impl::gemm_iq1_m_decode_vnni),
                         nullptr)},
};

#else
// The portable build: every type's kernel is its plain-C twin, token by token.
template <DotScalarFn F>
void dot_each_token(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out) {
  for (int t = 0; t < nt; ++t) out[t] = F(n, w, static_cast<const uint8_t*>(act) + t * act_stride);
}
#define K3_TWIN(name) dot_each_token<impl::dot_##name##_scalar>, impl::dot_##name##_scalar
const DotKernel kKernels[] = {
    {Type::F32, A::F32, K3_TWIN(f32)},        {Type::F16, A::F32, K3_TWIN(f16)},
    {Type::BF16, A::F32, K3_TWIN(bf16)},      {Type::Q8_0, A::Q8_0, K3_TWIN(q8_0)},
    {Type::MXFP4, A::Q8_0, K3_TWIN(mxfp4)},   {Type::Q2_K, A::Q8_K, K3_TWIN(q2_k)},
    {Type::Q3_K, A::Q8_K, K3_TWIN(q3_k)},     {Type::Q4_K, A::Q8_K, K3_TWIN(q4_k)},
    {Type::Q6_K, A::Q8_K, K3_TWIN(q6_k)},     {Type::IQ2_XXS, A::Q8_K, K3_TWIN(iq2_xxs)},
    {Type::IQ2_XS, A::Q8_K, K3_TWIN(iq2_xs)}, {Type::IQ1_S, A::Q8_K, K3_TWIN(iq1_s)},
    {Type::IQ1_M, A::Q8_K, K3_TWIN(iq1_m)},
};
#undef K3_TWIN
#endif

}  // namespace

const int g_decode_prefetch_bytes = [] {
  const char* force = std::getenv("K3_PREFETCH");
  if (force && std::string_view(force) == "3072") return kDecodePrefetchIntel;
  if (force && std::string_view(force) == "6144") return kDecodePrefetchAmd;
#if defined(K3_SIMD_X86)
  __builtin_cpu_init();  // may run before the runtime's own initialisation of the CPU model
  if (__builtin_cpu_is("amd")) return kDecodePrefetchAmd;
#endif
  return kDecodePrefetchIntel;
}();

const char* cpu_kernels() {
#if defined(K3_SIMD_X86)
  return impl::cpu_path_name(impl::cpu_path());
#else
  return "portable";
#endif
}

const DotKernel* dot_kernel(quant::Type t) {
  for (const DotKernel& k : kKernels)
    if (k.type == t) return &k;
  return nullptr;
}

size_t act_row_bytes(ActFormat f, int64_t n) {
  switch (f) {
    case A::F32: return static_cast<size_t>(n) * sizeof(float);
    case A::Q8_0: return static_cast<size_t>(n / 32) * sizeof(BlockQ8_0A);
    case A::Q8_K: return static_cast<size_t>(n / 256) * sizeof(BlockQ8KA);
  }
  return 0;
}

void quantize_act_row(ActFormat f, const float* x, void* dst, int64_t n) {
  switch (f) {
    case A::F32: std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float)); break;
    case A::Q8_0: quantize_act_q8_0(x, static_cast<BlockQ8_0A*>(dst), n); break;
    case A::Q8_K: quantize_act_q8_k(x, static_cast<BlockQ8KA*>(dst), n); break;
  }
}

}  // namespace k3::kernels
