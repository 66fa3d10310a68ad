// Type table: ids, block sizes and bytes of ggml's enum ggml_type and type_traits (GGUF facts).
#include "quant/types.h"

#include <cctype>
#include <string>

#include "core/error.h"

namespace k3::quant {

namespace {

using T = Type;
// quantized, file_type
const TypeInfo kTypes[] = {
    {T::F32, "F32", 1, 4, false, true},
    {T::F16, "F16", 1, 2, false, true},
    {T::Q4_0, "Q4_0", 32, 18, true, true},
    {T::Q4_1, "Q4_1", 32, 20, true, true},
    {T::Q5_0, "Q5_0", 32, 22, true, true},
    {T::Q5_1, "Q5_1", 32, 24, true, true},
    {T::Q8_0, "Q8_0", 32, 34, true, true},
    {T::Q8_1, "Q8_1", 32, 36, true, false},
    {T::Q2_K, "Q2_K", 256, 84, true, true},
    {T::Q3_K, "Q3_K", 256, 110, true, true},
    {T::Q4_K, "Q4_K", 256, 144, true, true},
    {T::Q5_K, "Q5_K", 256, 176, true, true},
    {T::Q6_K, "Q6_K", 256, 210, true, true},
    {T::Q8_K, "Q8_K", 256, 292, true, false},
    {T::IQ2_XXS, "IQ2_XXS", 256, 66, true, true},
    {T::IQ2_XS, "IQ2_XS", 256, 74, true, true},
    {T::IQ3_XXS, "IQ3_XXS", 256, 98, true, true},
    {T::IQ1_S, "IQ1_S", 256, 50, true, true},
    {T::IQ4_NL, "IQ4_NL", 32, 18, true, true},
    {T::IQ3_S, "IQ3_S", 256, 110, true, true},
    {T::IQ2_S, "IQ2_S", 256, 82, true, true},
    {T::IQ4_XS, "IQ4_XS", 256, 136, true, true},
    {T::I8, "I8", 1, 1, false, true},
    {T::I16, "I16", 1, 2, false, true},
    {T::I32, "I32", 1, 4, false, true},
    {T::I64, "I64", 1, 8, false, true},
    {T::F64, "F64", 1, 8, false, true},
    {T::IQ1_M, "IQ1_M", 256, 56, true, true},
    {T::BF16, "BF16", 1, 2, false, true},
    {T::TQ1_0, "TQ1_0", 256, 54, true, true},
    {T::TQ2_0, "TQ2_0", 256, 66, true, true},
    {T::MXFP4, "MXFP4", 32, 17, true, true},
    {T::NVFP4, "NVFP4", 64, 36, true, true},
    {T::Q1_0, "Q1_0", 128, 18, true, true},
    {T::Q2_0, "Q2_0", 64, 18, true, true},
};

}  // namespace

const TypeInfo* type_info(uint32_t id) {
  for (const TypeInfo& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return &t;
  return nullptr;
}

const TypeInfo& type_info(Type t) {
  const TypeInfo* info = type_info(static_cast<uint32_t>(t));
  if (!info) fail("unknown tensor type id {}", static_cast<uint32_t>(t));
  return *info;
}

const char* type_name(Type t) {
  const TypeInfo* info = type_info(static_cast<uint32_t>(t));
  return info ? info->name : "?";
}

std::optional<Type> type_from_name(std::string_view name) {
  std::string up(name);
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const TypeInfo& t : kTypes)
    if (up == t.name) return t.type;
  return std::nullopt;
}

size_t row_bytes(Type t, int64_t n) {
  const TypeInfo& info = type_info(t);
  if (n < 0 || n % info.block_elems != 0)
    fail("{} elements is not a multiple of the {} block size {}", n, info.name, info.block_elems);
  return static_cast<size_t>(n / info.block_elems) * info.block_bytes;
}

double bits_per_weight(Type t) {
  const TypeInfo& info = type_info(t);
  return static_cast<double>(info.block_bytes) * 8.0 / static_cast<double>(info.block_elems);
}

}  // namespace k3::quant
