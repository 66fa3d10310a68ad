// grammar/utf8_ranges: a set of code points → the UTF-8 byte sequences that encode them.
// Contract: utf8_sequences() returns byte-range sequences (each position a [lo, hi] byte
// range) whose union matches exactly the UTF-8 encodings of the given code points, surrogates
// (U+D800–U+DFFF) excluded, nothing overlong. Input ranges are inclusive, in any order, may
// overlap and are clipped to U+10FFFF.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace k3::grammar {

struct CodeRange {
  uint32_t lo, hi;
};
using ByteRangeSeq = std::vector<std::pair<uint8_t, uint8_t>>;

// Sorted, merged, surrogates removed, clipped to U+10FFFF.
std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> r);
// Complement within the Unicode scalar values.
std::vector<CodeRange> complement_ranges(const std::vector<CodeRange>& r);
std::vector<ByteRangeSeq> utf8_sequences(const std::vector<CodeRange>& r);
// Appends the UTF-8 encoding of cp (a scalar value).
void append_utf8(std::vector<uint8_t>& out, uint32_t cp);

}  // namespace k3::grammar
