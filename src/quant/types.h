// quant/types: the ggml tensor type table (ids, block sizes, bytes per block).
// Contract: ids and sizes are those of ggml's type_traits table (the GGUF on-disk
// facts). type_info() returns nullptr for ids that are removed, activation-only where a file
// cannot hold them, or unknown, so a reader can reject them with its own context. The table is
// constexpr: block_bytes(t) is a constant expression (quant/blocks.h asserts against it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace k3::quant {

enum class Type : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
};

struct TypeInfo {
  Type type;
  const char* name;     // ggml's spelling, e.g. "IQ2_XXS"
  int64_t block_elems;  // elements per block
  size_t block_bytes;   // bytes per block
  bool quantized;       // block-quantized (not a plain scalar type)
  bool file_type;       // may appear in a GGUF file
};

namespace detail {

// The table itself, in the header so that block sizes are constant expressions (quant/blocks.h
// asserts its layouts against it). Columns: type, name, block_elems, block_bytes, quantized,
// file_type.
inline constexpr TypeInfo kTypeTable[] = {
    {Type::F32, "F32", 1, 4, false, true},
    {Type::F16, "F16", 1, 2, false, true},
    {Type::Q4_0, "Q4_0", 32, 18, true, true},
    {Type::Q4_1, "Q4_1", 32, 20, true, true},
    {Type::Q5_0, "Q5_0", 32, 22, true, true},
    {Type::Q5_1, "Q5_1", 32, 24, true, true},
    {Type::Q8_0, "Q8_0", 32, 34, true, true},
    {Type::Q8_1, "Q8_1", 32, 36, true, false},
    {Type::Q2_K, "Q2_K", 256, 84, true, true},
    {Type::Q3_K, "Q3_K", 256, 110, true, true},
    {Type::Q4_K, "Q4_K", 256, 144, true, true},
    {Type::Q5_K, "Q5_K", 256, 176, true, true},
    {Type::Q6_K, "Q6_K", 256, 210, true, true},
    {Type::Q8_K, "Q8_K", 256, 292, true, false},
    {Type::IQ2_XXS, "IQ2_XXS", 256, 66, true, true},
    {Type::IQ2_XS, "IQ2_XS", 256, 74, true, true},
    {Type::IQ3_XXS, "IQ3_XXS", 256, 98, true, true},
    {Type::IQ1_S, "IQ1_S", 256, 50, true, true},
    {Type::IQ4_NL, "IQ4_NL", 32, 18, true, true},
    {Type::IQ3_S, "IQ3_S", 256, 110, true, true},
    {Type::IQ2_S, "IQ2_S", 256, 82, true, true},
    {Type::IQ4_XS, "IQ4_XS", 256, 136, true, true},
    {Type::I8, "I8", 1, 1, false, true},
    {Type::I16, "I16", 1, 2, false, true},
    {Type::I32, "I32", 1, 4, false, true},
    {Type::I64, "I64", 1, 8, false, true},
    {Type::F64, "F64", 1, 8, false, true},
    {Type::IQ1_M, "IQ1_M", 256, 56, true, true},
    {Type::BF16, "BF16", 1, 2, false, true},
    {Type::TQ1_0, "TQ1_0", 256, 54, true, true},
    {Type::TQ2_0, "TQ2_0", 256, 66, true, true},
    {Type::MXFP4, "MXFP4", 32, 17, true, true},
    {Type::NVFP4, "NVFP4", 64, 36, true, true},
    {Type::Q1_0, "Q1_0", 128, 18, true, true},
    {Type::Q2_0, "Q2_0", 64, 18, true, true},
};

}  // namespace detail

// Bytes per block of t (0 for a type the table lacks); usable in constant expressions.
constexpr size_t block_bytes(Type t) {
  for (const TypeInfo& info : detail::kTypeTable)
    if (info.type == t) return info.block_bytes;
  return 0;
}

// nullptr for removed/unknown ids.
const TypeInfo* type_info(uint32_t id);
const TypeInfo& type_info(Type t);
const char* type_name(Type t);
// Case-insensitive lookup by name ("q8_0", "IQ1_M", "f16"...).
std::optional<Type> type_from_name(std::string_view name);

// Bytes of n elements of type t; n must be a multiple of the block size (checked: throws).
size_t row_bytes(Type t, int64_t n);
// Bits per weight (block_bytes*8 / block_elems).
double bits_per_weight(Type t);

}  // namespace k3::quant
