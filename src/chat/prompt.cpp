// chat/prompt: see prompt.h.
#include "chat/prompt.h"

#include <algorithm>

#include "chat/vocab_roles.h"
#include "core/error.h"

namespace k3::chat {

namespace {

bool opens_thinking(const std::vector<text::ChatSegment>& segs) {
  const size_t n = segs.size();
  return n >= 3 && segs[n - 1].special && segs[n - 1].text == "<|sep|>" && !segs[n - 2].special &&
         segs[n - 2].text == "think" && segs[n - 3].special && segs[n - 3].text == "<|open|>";
}

// Segments [b, e) appended to p.tokens, image segments as the next of `images`.
void append_segments(const text::Tokenizer& tok, std::vector<text::ChatSegment>::const_iterator b,
                     std::vector<text::ChatSegment>::const_iterator e, std::span<const ImageSlot> images,
                     ChatPrompt& p) {
  for (auto s = b; s != e; ++s) {
    if (s->image && !images.empty()) {
      p.image_at.push_back(append_image(p.tokens, tok, images[p.image_at.size()]));
      continue;
    }
    std::vector<int32_t> ids = tokenize_segments(tok, {*s});
    p.tokens.insert(p.tokens.end(), ids.begin(), ids.end());
  }
}

}  // namespace

ChatPrompt tokenize_chat(const text::Tokenizer& tok, const std::vector<text::ChatSegment>& segs,
                         const std::vector<text::ChatSegment>& history, std::span<const ImageSlot> images) {
  const bool split = history.size() < segs.size() && std::equal(history.begin(), history.end(), segs.begin());
  const auto mid = segs.begin() + static_cast<std::ptrdiff_t>(split ? history.size() : 0);
  if (!images.empty()) {
    const size_t n =
        static_cast<size_t>(std::count_if(segs.begin(), segs.end(), [](const auto& s) { return s.image; }));
    if (n != images.size())
      fail("the conversation has {} image parts and {} images were given", n, images.size());
  }
  ChatPrompt p;
  append_segments(tok, segs.begin(), mid, images, p);
  p.history_end = p.tokens.size();
  append_segments(tok, mid, segs.end(), images, p);
  if (p.history_end >= p.tokens.size()) p.history_end = 0;
  p.thinking = opens_thinking(segs);
  return p;
}

}  // namespace k3::chat
