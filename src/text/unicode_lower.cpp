// text/unicode_lower: Python's str.lower() (see unicode_lower.h). The tables are generated
// (unicode_lower_table.cpp); this file only looks them up and applies the Final_Sigma rule
// the way CPython's lower() does (handle_capital_sigma: scan back over case-ignorable code
// points to a cased one, and forward over case-ignorable ones to anything but a cased one).
#include "text/unicode_lower.h"

#include <algorithm>
#include <vector>

#include "text/unicode.h"

namespace k3::text {

namespace {

using namespace unicode_lower_detail;

constexpr uint32_t kCapitalSigma = 0x3A3, kSmallSigma = 0x3C3, kFinalSigma = 0x3C2;
constexpr uint32_t kInvalid = 0xFFFFFFFF;  // a byte that is not UTF-8: copied as it is

uint8_t case_class(uint32_t cp) {
  if (cp == kInvalid) return kNeither;
  const uint32_t* end = kCaseClassStart + kCaseClassRunCount;
  const uint32_t* it = std::upper_bound(kCaseClassStart, end, cp);
  return kCaseClass[it - kCaseClassStart - 1];  // kCaseClassStart[0] == 0
}

// The one-code-point lowercase of cp (cp itself when it has none or maps to several).
uint32_t lower_single(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  const LowerRun* end = kLowerRuns + kLowerRunCount;
  const LowerRun* it =
      std::upper_bound(kLowerRuns, end, cp, [](uint32_t c, const LowerRun& r) { return c < r.first; });
  if (it == kLowerRuns) return cp;
  const LowerRun& r = *(it - 1);
  uint32_t off = cp - r.first;
  if (off % r.stride != 0 || off / r.stride >= r.count) return cp;
  return static_cast<uint32_t>(static_cast<int64_t>(cp) + r.delta);
}

const char* lower_special(uint32_t cp) {
  for (size_t i = 0; i < kLowerSpecialCount; ++i)
    if (kLowerSpecials[i].cp == cp) return kLowerSpecials[i].utf8;
  return nullptr;
}

bool final_sigma(const std::vector<uint32_t>& cps, size_t i) {
  size_t j = i;
  uint8_t c = kNeither;
  while (j > 0) {
    c = case_class(cps[--j]);
    if (c != kCaseIgnorable) break;
  }
  if (c != kCased) return false;  // nothing cased before it (or only case-ignorable)
  for (size_t k = i + 1; k < cps.size(); ++k) {
    uint8_t f = case_class(cps[k]);
    if (f != kCaseIgnorable) return f != kCased;
  }
  return true;
}

}  // namespace

std::string py_lower(std::string_view s) {
  bool ascii = std::all_of(s.begin(), s.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x80; });
  std::string out;
  out.reserve(s.size());
  if (ascii) {
    for (char ch : s) out.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch + 32) : ch);
    return out;
  }
  std::vector<uint32_t> cps;
  std::vector<char> raw;  // the byte of each kInvalid entry
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unicode::Decoded d = unicode::decode_utf8(s.data() + i, s.size() - i);
    bool invalid = d.cp == unicode::kReplacement && d.len == 1;
    cps.push_back(invalid ? kInvalid : d.cp);
    if (invalid) raw.push_back(s[i]);
    i += d.len;
  }
  size_t next_raw = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    uint32_t cp = cps[i];
    if (cp == kInvalid) {
      out.push_back(raw[next_raw++]);
    } else if (cp == kCapitalSigma) {
      unicode::append_utf8(out, final_sigma(cps, i) ? kFinalSigma : kSmallSigma);
    } else if (const char* m = cp >= 0x80 ? lower_special(cp) : nullptr) {
      out += m;
    } else {
      unicode::append_utf8(out, lower_single(cp));
    }
  }
  return out;
}

const char* py_lower_python_version() { return kPythonVersion; }
const char* py_lower_unicode_version() { return kUnicodeVersion; }

}  // namespace k3::text
