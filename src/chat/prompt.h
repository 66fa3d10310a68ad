// chat/prompt: a rendered conversation as the tokens the model reads.
// Contract: tokenize_chat() takes the template's rendering of a conversation with its
// generation prompt (`segs`) and without it (`history`, empty when that rendering failed).
// Segments tokenize independently (markers by id, text with special tokens off:
// tokenize_segments), so when the history's segments are a proper prefix of `segs` its
// tokens are the prompt's first ones: history_end marks that point, where a follow-up turn
// (which repeats the history) can resume from a saved state; 0 when there is no such point.
// thinking: the generation prompt ends in <|open|>think<|sep|>, so the answer starts in the
// reasoning channel (docs/CHAT-FORMAT.md, "Prompt rendering").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "chat/image_tokens.h"
#include "text/chat_template.h"

namespace k3::text {
class Tokenizer;
}

namespace k3::chat {

struct ChatPrompt {
  std::vector<int32_t> tokens;
  size_t history_end = 0;
  bool thinking = false;
  std::vector<size_t> image_at;  // per image given: the index of its first row in tokens
};

// images: empty (a text-only prompt: image parts stay placeholder text, as the reference
// renders them without a tower), or one per image segment of `segs`, in order; each becomes
// the layout of chat/image_tokens.h. A count that differs is an error.
ChatPrompt tokenize_chat(const text::Tokenizer& tok, const std::vector<text::ChatSegment>& segs,
                         const std::vector<text::ChatSegment>& history,
                         std::span<const ImageSlot> images = {});

}  // namespace k3::chat
