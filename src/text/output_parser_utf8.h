// text/output_parser_utf8: incremental UTF-8 decoding for streamed model output.
// Contract: Utf8Stream::push() returns only complete, valid UTF-8; it holds back an
// incomplete trailing sequence (byte-level BPE splits code points across tokens) and replaces
// invalid bytes with U+FFFD exactly as Python's bytes.decode("utf-8", "replace") does (one
// U+FFFD per maximal invalid subpart). The concatenation of all push() results plus flush()
// equals decoding the whole byte stream at once, however it was split.
#pragma once

#include <string>
#include <string_view>

namespace k3::text {

class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  std::string flush();  // an incomplete tail becomes U+FFFD
  bool has_partial() const { return !held_.empty(); }

 private:
  std::string held_;
};

// Whole-buffer decode with replacement (Python "replace" semantics).
std::string utf8_sanitize(std::string_view bytes);

// What a byte string holds for the "is this just whitespace?" question asked between
// channels: Blank (only complete whitespace code points, possibly followed by an incomplete
// sequence that is still undecided), or NonBlank (a non-whitespace code point or invalid byte).
enum class Blankness { Blank, BlankWithPartialTail, NonBlank };
Blankness classify_blank(std::string_view bytes);

}  // namespace k3::text
