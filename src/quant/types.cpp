// Type table: ids, block sizes and bytes of ggml's enum ggml_type and type_traits (GGUF facts).
#include "quant/types.h"

#include <cctype>
#include <string>

#include "core/error.h"

namespace k3::quant {

const TypeInfo* type_info(uint32_t id) {
  for (const TypeInfo& t : detail::kTypeTable)
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
  for (const TypeInfo& t : detail::kTypeTable)
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
