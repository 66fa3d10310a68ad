// text/pretokenizer_kimi: the Kimi K2/K3 split pattern, written out by hand.
// The pattern (tokenization_kimi.py pat_str, docs/tokenize.md) needs class
// intersection (`&&`), which std::regex/PCRE2 lack, so each alternative is evaluated here
// with the exact leftmost-first, greedy-with-backtracking semantics of the regex engine:
//   1 [\p{Han}]+
//   2
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//   3
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//   4 \p{N}{1,3}
//   5  ?[^\s\p{L}\p{N}]+[\r\n]*
//   6 \s*[\r\n]+
//   7 \s+(?!\S)
//   8 \s+
// "Upper" below is the first class of 2/3 (Lu Lt Lm Lo M, not Han), "lower" the second
// (Ll Lm Lo M, not Han). They overlap on Lm, Lo and M, which is what makes backtracking
// matter: `E◌́COLE` splits as `E◌́` | `COLE` because the mark is "lower".
#include <algorithm>

#include "text/pretokenizer_detail.h"

namespace k3::text::pre {
namespace {

using GC = GeneralCategory;

bool upper(const CharSeq& s, size_t i) {
  if (s.han(i)) return false;
  const GC c = s.cat(i);
  return c == GC::Lu || c == GC::Lt || c == GC::Lm || c == GC::Lo || unicode::cat_is_mark(c);
}
bool lower(const CharSeq& s, size_t i) {
  if (s.han(i)) return false;
  const GC c = s.cat(i);
  return c == GC::Ll || c == GC::Lm || c == GC::Lo || unicode::cat_is_mark(c);
}
// [^\r\n\p{L}\p{N}]
bool lead(const CharSeq& s, size_t i) { return !s.crlf(i) && !s.letter(i) && !s.number(i); }
// [^\s\p{L}\p{N}]
bool other(const CharSeq& s, size_t i) { return !s.space(i) && !s.letter(i) && !s.number(i); }

// Full case folding of the contraction letters: only `ſ` (U+017F) folds onto one of
// s t r e v m l d besides the ASCII capitals.
uint32_t fold(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c == 0x17F) return 's';
  return c;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: its length, or 0.
size_t contraction(const CharSeq& s, size_t i, size_t e) {
  if (i + 1 >= e || s.cp[i] != '\'') return 0;
  const uint32_t a = fold(s.cp[i + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= e) return 0;
  const uint32_t b = fold(s.cp[i + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// Alternative 2 (need_lower) or 3 with the optional lead consumed or not; 0 if no match.
size_t letters(const CharSeq& s, size_t p, size_t e, bool alt2) {
  size_t a_end = p;
  while (a_end < e && upper(s, a_end)) ++a_end;
  size_t m;
  if (alt2) {
    if (a_end < e && lower(s, a_end)) {
      m = a_end;
      while (m < e && lower(s, m)) ++m;
    } else {
      // Backtrack the upper run to its last character that is also "lower".
      size_t q = a_end;
      while (q > p && !lower(s, q - 1)) --q;
      if (q == p) return 0;
      m = q;
    }
  } else {
    if (a_end == p) return 0;
    m = a_end;
    while (m < e && lower(s, m)) ++m;
  }
  return m + contraction(s, m, e);
}

}  // namespace

size_t match_kimi_k2(const CharSeq& s, size_t i, size_t, size_t e, size_t&) {
  if (s.han(i)) {  // 1
    size_t j = i + 1;
    while (j < e && s.han(j)) ++j;
    return j;
  }
  const bool has_lead = lead(s, i);
  for (bool alt2 : {true, false}) {  // 2, 3; each tries "lead present" first
    if (has_lead && i + 1 < e) {
      if (size_t m = letters(s, i + 1, e, alt2)) return m;
    }
    if (size_t m = letters(s, i, e, alt2)) return m;
  }
  if (s.number(i)) {  // 4
    size_t j = i + 1;
    while (j < e && j < i + 3 && s.number(j)) ++j;
    return j;
  }
  size_t j = i;  // 5
  if (s.cp[i] == ' ' && i + 1 < e && other(s, i + 1)) j = i + 1;
  if (other(s, j)) {
    while (j < e && other(s, j)) ++j;
    while (j < e && s.crlf(j)) ++j;
    return j;
  }
  if (s.space(i)) {
    size_t w = i + 1;
    while (w < e && s.space(w)) ++w;
    for (size_t q = w; q > i; --q)  // 6: \s* backs off to the last CR/LF of the run
      if (s.crlf(q - 1)) return q;
    if (w == e) return w;          // 7 at the end
    if (w - i >= 2) return w - 1;  // 7: leave the last space for the next piece
    return w;                      // 8
  }
  return i + 1;  // unreachable for valid flags: every character matches 2, 3, 4 or 5
}

void kimi_chunks(const CharSeq& s, Ranges& out) {
  constexpr size_t kSlice = 400000;
  constexpr size_t kMaxRun = 25000;
  const size_t n = s.size();
  for (size_t base = 0; base < n; base += kSlice) {
    const size_t end = std::min(n, base + kSlice);
    size_t start = base, run = 0;
    bool cur_space = s.fl[base] & unicode::kPySpace;
    for (size_t i = base; i < end; ++i) {
      const bool sp = s.fl[i] & unicode::kPySpace;
      if (sp != cur_space) {
        cur_space = sp;
        run = 1;
      } else if (++run > kMaxRun) {
        out.emplace_back(start, i);
        start = i;
        run = 1;
      }
    }
    out.emplace_back(start, end);
  }
}

}  // namespace k3::text::pre
