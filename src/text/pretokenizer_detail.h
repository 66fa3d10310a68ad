// text/pretokenizer_detail: the shared machinery of the splitters (internal header).
// Text is decoded once into code points + property flags; a splitter works on character
// indices and appends [begin, end) character ranges that tile the span it was given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "text/unicode.h"

namespace k3::text::pre {

struct CharSeq {
  std::vector<uint32_t> cp;   // code point (U+FFFD for an invalid byte)
  std::vector<uint8_t> fl;    // unicode::flags(cp)
  std::vector<uint32_t> off;  // byte offset of each character, plus one past the end
  void decode(std::string_view text);
  size_t size() const { return cp.size(); }

  GeneralCategory cat(size_t i) const { return static_cast<GeneralCategory>(fl[i] & unicode::kCategoryMask); }
  bool letter(size_t i) const { return unicode::cat_is_letter(cat(i)); }
  bool number(size_t i) const { return unicode::cat_is_number(cat(i)); }
  bool mark(size_t i) const { return unicode::cat_is_mark(cat(i)); }
  bool punct(size_t i) const { return unicode::cat_is_punct(cat(i)); }
  bool space(size_t i) const { return fl[i] & unicode::kWhiteSpace; }
  bool han(size_t i) const { return fl[i] & unicode::kHan; }
  bool crlf(size_t i) const { return cp[i] == '\r' || cp[i] == '\n'; }
};

using Range = std::pair<size_t, size_t>;
using Ranges = std::vector<Range>;

// One regex pass: at character i of the span [b, e), return the end of the match (> i),
// or i when nothing matches there; may set `resume` past positions known not to match.
using Matcher = size_t (*)(const CharSeq& s, size_t i, size_t b, size_t e, size_t& resume);

// Leftmost-first scan of each input range with `m`; matches and the gaps between them both
// become output ranges (how llama.cpp chains its regex passes).
void split_pass(const CharSeq& s, Matcher m, const Ranges& in, Ranges& out);

// Whole-pattern splitters (every position matches some alternative).
size_t match_kimi_k2(const CharSeq& s, size_t i, size_t b, size_t e, size_t& resume);
size_t match_gpt2(const CharSeq& s, size_t i, size_t b, size_t e, size_t& resume);
size_t match_llama3(const CharSeq& s, size_t i, size_t b, size_t e, size_t& resume);

// Kimi's chunking: 400,000-character slices, then no run of more than 25,000 consecutive
// str.isspace() / non-space characters.
void kimi_chunks(const CharSeq& s, Ranges& out);

// The multi-pass kinds.
void split_deepseek_llm(const CharSeq& s, Ranges& ranges);
void split_deepseek_coder(const CharSeq& s, Ranges& ranges);
void split_starcoder(const CharSeq& s, Ranges& ranges);
void split_falcon(const CharSeq& s, Ranges& ranges);

}  // namespace k3::text::pre
