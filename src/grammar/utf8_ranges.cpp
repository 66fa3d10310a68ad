// grammar/utf8_ranges: see utf8_ranges.h.
#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace k3::grammar {

namespace {

constexpr uint32_t kMaxCp = 0x10FFFF;

// Encodes cp into exactly n bytes (n = its UTF-8 length).
void encode(uint32_t cp, int n, uint8_t* b) {
  static const uint8_t lead[] = {0, 0x00, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) {
    b[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  b[0] = static_cast<uint8_t>(lead[n] | cp);
}

int utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// [lo, hi] with both ends of one encoded length: split until every continuation position
// spans its full range or a single value, so the range is a product of byte ranges.
void split(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>& out) {
  const int n = utf8_len(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode(lo, n, a);
  encode(hi, n, b);
  ByteRangeSeq seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out.push_back(std::move(seq));
}

}  // namespace

std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> r) {
  std::vector<CodeRange> cut;
  for (CodeRange x : r) {
    if (x.lo > x.hi || x.lo > kMaxCp) continue;
    x.hi = std::min(x.hi, kMaxCp);
    if (x.lo < 0xD800 && x.hi >= 0xD800) {
      cut.push_back({x.lo, 0xD7FF});
      if (x.hi > 0xDFFF) cut.push_back({0xE000, x.hi});
    } else if (x.lo >= 0xD800 && x.lo <= 0xDFFF) {
      if (x.hi > 0xDFFF) cut.push_back({0xE000, x.hi});
    } else {
      cut.push_back(x);
    }
  }
  std::sort(cut.begin(), cut.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
  std::vector<CodeRange> out;
  for (CodeRange x : cut) {
    if (!out.empty() && x.lo <= out.back().hi + 1) out.back().hi = std::max(out.back().hi, x.hi);
    else out.push_back(x);
  }
  return out;
}

std::vector<CodeRange> complement_ranges(const std::vector<CodeRange>& r) {
  std::vector<CodeRange> n = normalize_ranges(r), out;
  uint32_t next = 0;
  for (CodeRange x : n) {
    if (x.lo > next) out.push_back({next, x.lo - 1});
    next = x.hi + 1;
  }
  if (next <= kMaxCp) out.push_back({next, kMaxCp});
  return normalize_ranges(out);
}

std::vector<ByteRangeSeq> utf8_sequences(const std::vector<CodeRange>& r) {
  std::vector<ByteRangeSeq> out;
  static const uint32_t kLenMax[] = {0x7F, 0x7FF, 0xFFFF, kMaxCp};
  for (CodeRange x : normalize_ranges(r)) {
    for (uint32_t top : kLenMax) {  // split at the encoded-length boundaries
      if (x.lo > top) continue;
      const uint32_t hi = std::min(x.hi, top);
      split(x.lo, hi, out);
      if (x.hi <= top) break;
      x.lo = top + 1;
    }
  }
  return out;
}

void append_utf8(std::vector<uint8_t>& out, uint32_t cp) {
  uint8_t b[4];
  const int n = utf8_len(cp);
  encode(cp, n, b);
  out.insert(out.end(), b, b + n);
}

}  // namespace k3::grammar
