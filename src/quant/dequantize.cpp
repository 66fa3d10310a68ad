// quant/dequantize: dequantize_row, the single entry point that routes a row of any
// dequantizable type to its block decoder (block types) or converts scalars (F32, F16, BF16,
// F64 and the integer types, which decode to their numeric value).
// Contract: see quant/codec.h. Types with no decoder (Q8_1, Q8_K, unknown ids) throw k3::Error:
// that is a caller bug, but an exception names it instead of corrupting memory.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <cstring>

#include "core/error.h"
#include "quant/block_bits.h"
#include "quant/codec.h"
#include "quant/dequant_blocks.h"

namespace k3::quant {

namespace {

detail::DequantFn block_decoder(Type t) {
  using namespace detail;
  switch (t) {
    case Type::Q4_0: return dequant_q4_0;
    case Type::Q4_1: return dequant_q4_1;
    case Type::Q5_0: return dequant_q5_0;
    case Type::Q5_1: return dequant_q5_1;
    case Type::Q8_0: return dequant_q8_0;
    case Type::IQ4_NL: return dequant_iq4_nl;
    case Type::Q2_K: return dequant_q2_k;
    case Type::Q3_K: return dequant_q3_k;
    case Type::Q4_K: return dequant_q4_k;
    case Type::Q5_K: return dequant_q5_k;
    case Type::Q6_K: return dequant_q6_k;
    case Type::IQ2_XXS: return dequant_iq2_xxs;
    case Type::IQ2_XS: return dequant_iq2_xs;
    case Type::IQ2_S: return dequant_iq2_s;
    case Type::IQ3_XXS: return dequant_iq3_xxs;
    case Type::IQ3_S: return dequant_iq3_s;
    case Type::IQ1_S: return dequant_iq1_s;
    case Type::IQ1_M: return dequant_iq1_m;
    case Type::IQ4_XS: return dequant_iq4_xs;
    case Type::MXFP4: return dequant_mxfp4;
    case Type::NVFP4: return dequant_nvfp4;
    case Type::TQ1_0: return dequant_tq1_0;
    case Type::TQ2_0: return dequant_tq2_0;
    case Type::Q1_0: return dequant_q1_0;
    case Type::Q2_0: return dequant_q2_0;
    default: return nullptr;
  }
}

template <typename T>
void convert_numbers(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * int64_t(sizeof(T)), sizeof(T));
    dst[i] = static_cast<float>(v);
  }
}

}  // namespace

bool can_dequantize(Type t) {
  switch (t) {
    case Type::F32:
    case Type::F16:
    case Type::BF16:
    case Type::F64:
    case Type::I8:
    case Type::I16:
    case Type::I32:
    case Type::I64: return true;
    default: return block_decoder(t) != nullptr;
  }
}

void dequantize_row(Type t, const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  switch (t) {
    case Type::F32: std::memcpy(dst, p, size_t(n) * sizeof(float)); return;
    case Type::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(detail::load_u16(p + 2 * i));
      return;
    case Type::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(detail::load_u16(p + 2 * i));
      return;
    case Type::F64: convert_numbers<double>(p, dst, n); return;
    case Type::I8: convert_numbers<int8_t>(p, dst, n); return;
    case Type::I16: convert_numbers<int16_t>(p, dst, n); return;
    case Type::I32: convert_numbers<int32_t>(p, dst, n); return;
    case Type::I64: convert_numbers<int64_t>(p, dst, n); return;
    default: break;
  }
  const detail::DequantFn fn = block_decoder(t);
  if (!fn) fail("no dequantizer for tensor type {}", type_name(t));
  const int64_t block = type_info(t).block_elems;
  if (n % block != 0) fail("{} elements is not a multiple of the {} block size {}", n, type_name(t), block);
  fn(p, dst, n / block);
}

}  // namespace k3::quant
