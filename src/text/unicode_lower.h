// text/unicode_lower: Python's str.lower() on UTF-8 text.
// Contract: py_lower(s) is s.lower() as the Python that renders the reference templates
// computes it (tables generated from that interpreter, see unicode_lower_table.cpp): the full
// lowercase mapping of every code point, multi-code-point mappings included (U+0130 'İ' ->
// "i\u0307"), and the Final_Sigma rule: U+03A3 'Σ' lowers to U+03C2 'ς' when it is preceded by
// a cased letter and not followed by one (case-ignorable code points in between are skipped
// both ways), else to U+03C3 'σ'. Jinja2's dictsort sorts by this (KeyOrder::CaseInsensitive).
// Bytes that are not valid UTF-8 (never seen by Python) are copied unchanged and count as
// neither cased nor case-ignorable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace k3::text {

std::string py_lower(std::string_view s);
// The interpreter and Unicode version the tables were measured on ("3.11.2", "14.0.0").
const char* py_lower_python_version();
const char* py_lower_unicode_version();

namespace unicode_lower_detail {

// Code points first, first+stride, …, first+stride*(count-1) lowercase to cp + delta.
struct LowerRun {
  uint32_t first;
  uint16_t count;
  uint8_t stride;
  int32_t delta;
};
struct LowerSpecial {
  uint32_t cp;
  const char* utf8;  // the lowercase, more than one code point
};
enum CaseClass : uint8_t { kNeither = 0, kCased = 1, kCaseIgnorable = 2 };

extern const char* const kPythonVersion;
extern const char* const kUnicodeVersion;
extern const size_t kLowerRunCount;
extern const LowerRun kLowerRuns[];
extern const size_t kLowerSpecialCount;
extern const LowerSpecial kLowerSpecials[];
extern const size_t kCaseClassRunCount;
extern const uint32_t kCaseClassStart[];
extern const uint8_t kCaseClass[];

}  // namespace unicode_lower_detail
}  // namespace k3::text
