// gguf/layout: overflow-checked size arithmetic (see layout.h).
#include "gguf/layout.h"

#include <fmt/format.h>

#include <limits>

#include "quant/types.h"

namespace k3::gguf {

bool align_up(uint64_t x, uint64_t a, uint64_t* out) {
  uint64_t r = x % a;
  if (r == 0) {
    *out = x;
    return true;
  }
  uint64_t add = a - r;
  if (x > std::numeric_limits<uint64_t>::max() - add) return false;
  *out = x + add;
  return true;
}

std::string tensor_nbytes(uint32_t type_id, const std::vector<int64_t>& ne, uint64_t* nbytes) {
  const quant::TypeInfo* info = quant::type_info(type_id);
  if (!info) return fmt::format("unknown or removed tensor type id {}", type_id);
  if (!info->file_type)
    return fmt::format("tensor type {} (id {}) is activation-only and cannot be stored in a file", info->name,
                       type_id);
  if (ne.size() > 4) return fmt::format("{} dimensions (at most 4 allowed)", ne.size());
  uint64_t elems = 1;
  for (size_t i = 0; i < ne.size(); ++i) {
    if (ne[i] < 0) return fmt::format("negative extent ne[{}] = {}", i, ne[i]);
    uint64_t e = static_cast<uint64_t>(ne[i]);
    if (e != 0 && elems > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / e)
      return "element count overflows int64";
    elems *= e;
  }
  int64_t ne0 = ne.empty() ? 1 : ne[0];
  if (ne0 % info->block_elems != 0)
    return fmt::format("ne[0] = {} is not a multiple of the {} block size {}", ne0, info->name,
                       info->block_elems);
  uint64_t blocks = elems / static_cast<uint64_t>(info->block_elems);
  if (info->block_bytes != 0 && blocks > std::numeric_limits<uint64_t>::max() / info->block_bytes)
    return "byte size overflows";
  *nbytes = blocks * info->block_bytes;
  return "";
}

bool parse_shard_name(const std::string& path, std::string* prefix, uint32_t* number, uint32_t* count) {
  static constexpr char kTail[] = "-00000-of-00000.gguf";
  const size_t n = sizeof kTail - 1;
  if (path.size() < n) return false;
  const char* s = path.data() + path.size() - n;
  auto digits = [](const char* p, uint32_t* out) {
    uint32_t v = 0;
    for (int i = 0; i < 5; ++i) {
      if (p[i] < '0' || p[i] > '9') return false;
      v = v * 10 + static_cast<uint32_t>(p[i] - '0');
    }
    *out = v;
    return true;
  };
  if (s[0] != '-' || std::string(s + 6, 4) != "-of-" || std::string(s + 15, 5) != ".gguf") return false;
  if (!digits(s + 1, number) || !digits(s + 10, count)) return false;
  *prefix = path.substr(0, path.size() - n);
  return true;
}

}  // namespace k3::gguf
