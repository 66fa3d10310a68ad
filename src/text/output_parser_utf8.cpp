// text/output_parser_utf8: see output_parser_utf8.h.
#include "text/output_parser_utf8.h"

#include <cstdint>

namespace k3::text {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Expected length of a sequence starting with b0 and the valid range of its second byte
// (Unicode Table 3-7); 0 when b0 cannot start a sequence.
int seq_len(unsigned char b0, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return 2;
  if (b0 == 0xE0) {
    lo = 0xA0;
    return 3;
  }
  if (b0 >= 0xE1 && b0 <= 0xEC) return 3;
  if (b0 == 0xED) {
    hi = 0x9F;
    return 3;
  }
  if (b0 >= 0xEE && b0 <= 0xEF) return 3;
  if (b0 == 0xF0) {
    lo = 0x90;
    return 4;
  }
  if (b0 >= 0xF1 && b0 <= 0xF3) return 4;
  if (b0 == 0xF4) {
    hi = 0x8F;
    return 4;
  }
  return 0;
}

enum class Step { Valid, Invalid, Incomplete };

// Examines the sequence at s[i]: Valid (n = its length), Invalid (n = bytes to replace by one
// U+FFFD), or Incomplete (a valid prefix running to the end of s).
Step step_at(std::string_view s, size_t i, size_t& n, uint32_t* cp = nullptr) {
  auto b0 = static_cast<unsigned char>(s[i]);
  unsigned char lo, hi;
  int len = seq_len(b0, lo, hi);
  if (len == 0) {
    n = 1;
    return Step::Invalid;
  }
  uint32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
  for (int k = 1; k < len; ++k) {
    if (i + static_cast<size_t>(k) >= s.size()) {
      n = s.size() - i;
      return Step::Incomplete;
    }
    auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) {
      n = static_cast<size_t>(k);
      return Step::Invalid;
    }
    c = (c << 6) | (b & 0x3Fu);
  }
  n = static_cast<size_t>(len);
  if (cp) *cp = c;
  return Step::Valid;
}

bool is_py_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
  std::string buf = std::move(held_);
  held_.clear();
  buf.append(bytes);
  std::string out;
  out.reserve(buf.size());
  size_t i = 0;
  while (i < buf.size()) {
    size_t n;
    Step st = step_at(buf, i, n);
    if (st == Step::Valid) {
      out.append(buf, i, n);
    } else if (st == Step::Invalid) {
      out += kReplacement;
    } else {
      held_ = buf.substr(i);
      break;
    }
    i += n;
  }
  return out;
}

std::string Utf8Stream::flush() {
  std::string out = held_.empty() ? "" : std::string(kReplacement);
  held_.clear();
  return out;
}

std::string utf8_sanitize(std::string_view bytes) {
  Utf8Stream s;
  std::string out = s.push(bytes);
  return out + s.flush();
}

Blankness classify_blank(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t n;
    uint32_t cp = 0;
    Step st = step_at(s, i, n, &cp);
    if (st == Step::Invalid) return Blankness::NonBlank;
    if (st == Step::Incomplete) return Blankness::BlankWithPartialTail;
    if (!is_py_space(cp)) return Blankness::NonBlank;
    i += n;
  }
  return Blankness::Blank;
}

}  // namespace k3::text
