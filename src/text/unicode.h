// text/unicode: code-point properties and UTF-8 helpers for the tokenizer.
// Contract: properties come from the generated Unicode 15.0 tables (unicode_tables.cpp,
// scripts/gen_unicode_tables.py), the version the reference tokenizer's regex engine uses.
// UTF-8 decoding is total: every byte string decodes, an invalid or truncated sequence
// yields U+FFFD for exactly one byte, so callers can keep byte offsets exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace k3::text {

// General_Category values, in the table's encoding (bits 0-4 of the flags byte).
enum class GeneralCategory : uint8_t {
  Cn,
  Lu,
  Ll,
  Lt,
  Lm,
  Lo,
  Mn,
  Mc,
  Me,
  Nd,
  Nl,
  No,
  Pc,
  Pd,
  Ps,
  Pe,
  Pi,
  Pf,
  Po,
  Sm,
  Sc,
  Sk,
  So,
  Zs,
  Zl,
  Zp,
  Cc,
  Cf,
  Cs,
  Co,
};

namespace unicode {

constexpr uint32_t kReplacement = 0xFFFD;
constexpr uint8_t kCategoryMask = 0x1F;
constexpr uint8_t kWhiteSpace = 0x20;  // White_Space: what `\s` means in the splitters
constexpr uint8_t kHan = 0x40;         // Script=Han
constexpr uint8_t kPySpace = 0x80;     // Python str.isspace(): the Kimi chunker's notion

// The flags byte of a code point (0 = unassigned for cp > 0x10FFFF).
uint8_t flags(uint32_t cp);
const char* version();  // "15.0.0"

inline GeneralCategory category(uint32_t cp) {
  return static_cast<GeneralCategory>(flags(cp) & kCategoryMask);
}
inline bool cat_is_letter(GeneralCategory c) { return c >= GeneralCategory::Lu && c <= GeneralCategory::Lo; }
inline bool cat_is_mark(GeneralCategory c) { return c >= GeneralCategory::Mn && c <= GeneralCategory::Me; }
inline bool cat_is_number(GeneralCategory c) { return c >= GeneralCategory::Nd && c <= GeneralCategory::No; }
inline bool cat_is_punct(GeneralCategory c) { return c >= GeneralCategory::Pc && c <= GeneralCategory::Po; }
inline bool cat_is_symbol(GeneralCategory c) { return c >= GeneralCategory::Sm && c <= GeneralCategory::So; }

// One decoded character: code point and its length in bytes (1..4).
struct Decoded {
  uint32_t cp;
  uint32_t len;
};
// Decodes the character at p[0..n) (n >= 1). Rejects overlongs, surrogates, > U+10FFFF.
Decoded decode_utf8(const char* p, size_t n);
void append_utf8(std::string& out, uint32_t cp);
// True when s is entirely valid UTF-8.
bool is_valid_utf8(std::string_view s);
// Length of the longest prefix of s that does not end inside a character that could still
// be completed by more bytes: a trailing valid-but-incomplete sequence (1..3 bytes) is
// excluded, anything else (complete or invalid) is included.
size_t utf8_complete_prefix(std::string_view s);

}  // namespace unicode
}  // namespace k3::text
