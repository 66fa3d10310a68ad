// store/memory_options: size and policy parsing (see memory_options.h).
#include "store/memory_options.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <string>

#include "core/error.h"

namespace k3::store {

uint64_t parse_size(std::string_view text, std::string_view flag) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)))
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "unlimited" || s == "max" || s == "inf") return kUnlimited;
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string num = s.substr(0, i);
  std::string unit = s.substr(i);
  double v = 0;
  try {
    size_t used = 0;
    v = num.empty() ? -1 : std::stod(num, &used);
    if (used != num.size()) v = -1;
  } catch (const std::exception&) { v = -1; }
  if (unit.size() > 1 && unit.back() == 'b') unit.pop_back();
  if (unit.size() == 2 && unit.back() == 'i') unit.pop_back();
  double mul = 0;
  if (unit.empty()) mul = 1;
  else if (unit == "k") mul = 1024.0;
  else if (unit == "m") mul = 1024.0 * 1024;
  else if (unit == "g") mul = 1024.0 * 1024 * 1024;
  else if (unit == "t") mul = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "b") mul = 1;
  if (!(v >= 0) || mul == 0 || !std::isfinite(v * mul) || v * mul >= 1.8e19)
    fail("{} '{}': expected a size such as 5G, 512M, 1.5GiB or 'unlimited'", flag, text);
  return static_cast<uint64_t>(std::llround(v * mul));
}

std::string format_size(uint64_t b) {
  if (b == kUnlimited) return "unlimited";
  const double d = static_cast<double>(b);
  if (d >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", d / (1024.0 * 1024 * 1024));
  if (d >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", d / (1024.0 * 1024));
  if (d >= 1024.0) return fmt::format("{:.1f} KiB", d / 1024.0);
  return fmt::format("{} B", b);
}

Eviction parse_eviction(std::string_view text) {
  if (text == "lru") return Eviction::LRU;
  if (text == "lfu") return Eviction::LFU;
  fail("--expert-eviction '{}': expected lru or lfu", text);
}

const char* eviction_name(Eviction e) { return e == Eviction::LRU ? "lru" : "lfu"; }

}  // namespace k3::store
