// text/pretokenizer_gpt2: the GPT-2 and Llama-3 split patterns, written out by hand.
//   GPT-2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Llama-3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//            | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Llama-3's case-insensitive contractions fold ASCII only, as llama.cpp's adaptation does.
#include "text/pretokenizer_detail.h"

namespace k3::text::pre {
namespace {

bool other(const CharSeq& s, size_t i) { return !s.space(i) && !s.letter(i) && !s.number(i); }

uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

size_t contraction(const CharSeq& s, size_t i, size_t e, bool fold) {
  if (i + 1 >= e || s.cp[i] != '\'') return 0;
  auto f = [&](size_t k) { return fold ? ascii_lower(s.cp[k]) : s.cp[k]; };
  const uint32_t a = f(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= e) return 0;
  const uint32_t b = f(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

template <typename Pred>
size_t run(const CharSeq& s, size_t j, size_t e, Pred p) {
  while (j < e && p(s, j)) ++j;
  return j;
}
bool is_letter(const CharSeq& s, size_t i) { return s.letter(i); }
bool is_number(const CharSeq& s, size_t i) { return s.number(i); }

// \s*[\r\n]+ (optional), then \s+(?!\S), then \s+, at a whitespace character.
size_t spaces(const CharSeq& s, size_t i, size_t e, bool newline_alt) {
  size_t w = i + 1;
  while (w < e && s.space(w)) ++w;
  if (newline_alt)
    for (size_t q = w; q > i; --q)
      if (s.crlf(q - 1)) return q;
  if (w == e) return w;
  if (w - i >= 2) return w - 1;
  return w;
}

}  // namespace

size_t match_gpt2(const CharSeq& s, size_t i, size_t, size_t e, size_t&) {
  if (size_t c = contraction(s, i, e, false)) return i + c;
  const bool sp = s.cp[i] == ' ' && i + 1 < e;
  if (sp && s.letter(i + 1)) return run(s, i + 1, e, is_letter);
  if (s.letter(i)) return run(s, i, e, is_letter);
  if (sp && s.number(i + 1)) return run(s, i + 1, e, is_number);
  if (s.number(i)) return run(s, i, e, is_number);
  if (sp && other(s, i + 1)) return run(s, i + 1, e, other);
  if (other(s, i)) return run(s, i, e, other);
  return spaces(s, i, e, false);
}

size_t match_llama3(const CharSeq& s, size_t i, size_t, size_t e, size_t&) {
  if (size_t c = contraction(s, i, e, true)) return i + c;
  if (!s.crlf(i) && !s.letter(i) && !s.number(i) && i + 1 < e && s.letter(i + 1))
    return run(s, i + 1, e, is_letter);
  if (s.letter(i)) return run(s, i, e, is_letter);
  if (s.number(i)) {
    size_t j = i + 1;
    while (j < e && j < i + 3 && s.number(j)) ++j;
    return j;
  }
  size_t j = i;
  if (s.cp[i] == ' ' && i + 1 < e && other(s, i + 1)) j = i + 1;
  if (other(s, j)) {
    j = run(s, j, e, other);
    while (j < e && s.crlf(j)) ++j;
    return j;
  }
  return spaces(s, i, e, true);
}

}  // namespace k3::text::pre
