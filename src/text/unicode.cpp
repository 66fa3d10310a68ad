// text/unicode: flags lookup over the generated run tables, and UTF-8 decoding.
// A flat byte per code point (1.1 MB, built once on first use) keeps the splitters' hot
// loop to one load; the run tables stay the compact, reviewable source of truth.
#include "text/unicode.h"

#include <algorithm>
#include <memory>

namespace k3::text::unicode_detail {
extern const char* const kUnicodeVersion;
extern const size_t kRunCount;
extern const uint32_t kRunStart[];
extern const uint8_t kRunFlags[];
}  // namespace k3::text::unicode_detail

namespace k3::text::unicode {
namespace {

constexpr uint32_t kMaxCp = 0x110000;

const uint8_t* flat_table() {
  static const std::unique_ptr<uint8_t[]> table = [] {
    using namespace unicode_detail;
    std::unique_ptr<uint8_t[]> t(new uint8_t[kMaxCp]);
    for (size_t i = 0; i < kRunCount; ++i) {
      uint32_t end = i + 1 < kRunCount ? kRunStart[i + 1] : kMaxCp;
      std::fill(t.get() + kRunStart[i], t.get() + end, kRunFlags[i]);
    }
    return t;
  }();
  return table.get();
}

}  // namespace

uint8_t flags(uint32_t cp) { return cp < kMaxCp ? flat_table()[cp] : 0; }

const char* version() { return unicode_detail::kUnicodeVersion; }

Decoded decode_utf8(const char* p, size_t n) {
  const auto b0 = static_cast<uint8_t>(p[0]);
  if (b0 < 0x80) return {b0, 1};
  uint32_t need, cp, min;
  if ((b0 & 0xE0) == 0xC0) {
    need = 1, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    need = 2, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    need = 3, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {kReplacement, 1};
  }
  if (n <= need) return {kReplacement, 1};
  for (uint32_t i = 1; i <= need; ++i) {
    const auto b = static_cast<uint8_t>(p[i]);
    if ((b & 0xC0) != 0x80) return {kReplacement, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kReplacement, 1};
  return {cp, need + 1};
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    Decoded d = decode_utf8(s.data() + i, s.size() - i);
    if (d.len == 1 && d.cp == kReplacement) return false;  // a real U+FFFD is 3 bytes
    i += d.len;
  }
  return true;
}

size_t utf8_complete_prefix(std::string_view s) {
  const size_t n = s.size();
  // Find the last lead byte within the final 3 bytes; continuation bytes before it are
  // either part of it or already-complete/invalid data that passes through.
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto lead = static_cast<uint8_t>(s[n - back]);
    if ((lead & 0xC0) == 0x80) continue;
    size_t need = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) need = 2;
    else if (lead >= 0xE0 && lead <= 0xEF)
      need = 3, lo = lead == 0xE0 ? 0xA0 : 0x80, hi = lead == 0xED ? 0x9F : 0xBF;
    else if (lead >= 0xF0 && lead <= 0xF4)
      need = 4, lo = lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xF4 ? 0x8F : 0xBF;
    if (need <= back) return n;  // complete, or not a lead at all
    if (back >= 2) {
      const auto second = static_cast<uint8_t>(s[n - back + 1]);
      if (second < lo || second > hi) return n;  // can never become valid
    }
    return n - back;
  }
  return n;
}

}  // namespace k3::text::unicode
