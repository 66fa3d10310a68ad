// chat/prompt: see prompt.h.
#include "chat/prompt.h"

#include <algorithm>

#include "chat/vocab_roles.h"

namespace k3::chat {

namespace {

bool opens_thinking(const std::vector<text::ChatSegment>& segs) {
  const size_t n = segs.size();
  return n >= 3 && segs[n - 1].special && segs[n - 1].text == "<|sep|>" && !segs[n - 2].special &&
         segs[n - 2].text == "think" && segs[n - 3].special && segs[n - 3].text == "<|open|>";
}

}  // namespace

ChatPrompt tokenize_chat(const text::Tokenizer& tok, const std::vector<text::ChatSegment>& segs,
                         const std::vector<text::ChatSegment>& history) {
  const bool split = history.size() < segs.size() && std::equal(history.begin(), history.end(), segs.begin());
  const auto mid = segs.begin() + static_cast<std::ptrdiff_t>(split ? history.size() : 0);
  ChatPrompt p;
  p.tokens = tokenize_segments(tok, {segs.begin(), mid});
  p.history_end = p.tokens.size();
  std::vector<int32_t> rest = tokenize_segments(tok, {mid, segs.end()});
  p.tokens.insert(p.tokens.end(), rest.begin(), rest.end());
  if (p.history_end >= p.tokens.size()) p.history_end = 0;
  p.thinking = opens_thinking(segs);
  return p;
}

}  // namespace k3::chat
