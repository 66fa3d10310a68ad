// text/pretokenizer_multipass: the kinds that llama.cpp defines as a chain of regex passes,
// each pass splitting the pieces of the previous one (matches and gaps both kept).
// Their patterns use std::regex semantics as llama.cpp runs them: `\s` is White_Space (a
// non-ASCII space is seen as U+000B, so it never matches a literal class such as `　-。`),
// `\p{L}`/`\p{N}`/`\p{P}` are general categories, and `$` is the end of the piece.
//   deepseek-llm:   [\r\n] | \s?[cased letters]+ | \s?[!-/:-~！-／：-～‘-‟　-。]+ | \s+$
//                   | [一-龥ࠀ-一가-퟿]+ | \p{N}+
//   deepseek-coder: [\r\n] | \s?\p{L}+ | \s?\p{P}+ | [一-龥ࠀ-一가-퟿]+ | \p{N}
//   starcoder:      \p{N} | GPT-2
//   falcon:         [\p{P}\$\+<=>\^~\|`]+ | GPT-2 | [0-9][0-9][0-9]
#include <algorithm>
#include <iterator>

#include "text/pretokenizer_detail.h"

namespace k3::text::pre {
namespace {

struct CpRange {
  uint32_t lo, hi;
};

// DeepSeek LLM's letter class (its tokenizer.json pattern; the cased-letter ranges).
constexpr CpRange kDeepseekLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// DeepSeek LLM's punctuation class.
constexpr CpRange kDeepseekPunct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};
// [一-龥ࠀ-一가-퟿]
constexpr CpRange kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x800, 0x4E00}, {0xAC00, 0xD7FF}};

template <size_t N>
bool in(const CpRange (&set)[N], const CharSeq& s, size_t i) {
  const uint32_t c = s.cp[i];
  if (c > 0x7F && s.space(i)) return false;  // std::wregex saw U+000B here
  for (const auto& r : set)
    if (c >= r.lo && c <= r.hi) return true;
  return false;
}

using Pred = bool (*)(const CharSeq&, size_t);
bool p_letter(const CharSeq& s, size_t i) { return s.letter(i); }
bool p_punct(const CharSeq& s, size_t i) { return s.punct(i); }
bool p_number(const CharSeq& s, size_t i) { return s.number(i); }
bool p_ds_letter(const CharSeq& s, size_t i) { return in(kDeepseekLetters, s, i); }
bool p_ds_punct(const CharSeq& s, size_t i) { return in(kDeepseekPunct, s, i); }
bool p_ds_cjk(const CharSeq& s, size_t i) { return in(kDeepseekCjk, s, i); }
bool p_falcon(const CharSeq& s, size_t i) {
  const uint32_t c = s.cp[i];
  return s.punct(i) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' ||
         c == '|' || c == '`';
}

// X+
template <Pred X>
size_t m_run(const CharSeq& s, size_t i, size_t, size_t e, size_t&) {
  if (!X(s, i)) return i;
  size_t j = i + 1;
  while (j < e && X(s, j)) ++j;
  return j;
}
// \s?X+
template <Pred X>
size_t m_space_run(const CharSeq& s, size_t i, size_t b, size_t e, size_t& r) {
  if (s.space(i) && i + 1 < e && X(s, i + 1)) return m_run<X>(s, i + 1, b, e, r);
  return m_run<X>(s, i, b, e, r);
}
// X (one character)
template <Pred X>
size_t m_one(const CharSeq& s, size_t i, size_t, size_t, size_t&) {
  return X(s, i) ? i + 1 : i;
}
bool p_crlf(const CharSeq& s, size_t i) { return s.crlf(i); }
// \s+$
size_t m_trailing_space(const CharSeq& s, size_t i, size_t, size_t e, size_t& resume) {
  if (!s.space(i)) return i;
  size_t w = i + 1;
  while (w < e && s.space(w)) ++w;
  if (w == e) return w;
  resume = w;  // no later start inside this run can reach the end either
  return i;
}
// [0-9][0-9][0-9]
size_t m_digit3(const CharSeq& s, size_t i, size_t, size_t e, size_t&) {
  auto d = [&](size_t k) { return s.cp[k] >= '0' && s.cp[k] <= '9'; };
  return i + 2 < e && d(i) && d(i + 1) && d(i + 2) ? i + 3 : i;
}

void run_passes(const CharSeq& s, std::initializer_list<Matcher> passes, Ranges& out) {
  Ranges cur{{0, s.size()}}, next;
  for (Matcher m : passes) {
    next.clear();
    split_pass(s, m, cur, next);
    cur.swap(next);
  }
  out.insert(out.end(), cur.begin(), cur.end());
}

}  // namespace

void split_deepseek_llm(const CharSeq& s, Ranges& out) {
  run_passes(s,
             {m_one<p_crlf>, m_space_run<p_ds_letter>, m_space_run<p_ds_punct>, m_trailing_space,
              m_run<p_ds_cjk>, m_run<p_number>},
             out);
}

void split_deepseek_coder(const CharSeq& s, Ranges& out) {
  run_passes(
      s, {m_one<p_crlf>, m_space_run<p_letter>, m_space_run<p_punct>, m_run<p_ds_cjk>, m_one<p_number>}, out);
}

void split_starcoder(const CharSeq& s, Ranges& out) { run_passes(s, {m_one<p_number>, match_gpt2}, out); }

void split_falcon(const CharSeq& s, Ranges& out) {
  run_passes(s, {m_run<p_falcon>, match_gpt2, m_digit3}, out);
}

}  // namespace k3::text::pre
