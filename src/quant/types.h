// quant/types: the ggml tensor type table (ids, block sizes, bytes per block).
// Contract: ids and sizes are those of ggml's type_traits table (the GGUF on-disk
// facts). type_info() returns nullptr for ids that are removed, activation-only where a file
// cannot hold them, or unknown, so a reader can reject them with its own context.
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
