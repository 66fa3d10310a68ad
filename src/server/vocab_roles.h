// server/vocab_roles: what the server needs to know about a vocabulary's special tokens.
// Contract: VocabRoles::of() finds the three XTML markers (<|open|>, <|close|>, <|sep|>) and the
// end-of-generation set; kind() classifies any id for the output parser (markers by id only, so
// generated text that spells "<|close|>" stays text). tokenize_segments() turns a rendered chat
// (text segments + marker segments) into ids: markers become their control ids, text is encoded
// with special tokens OFF (docs/CHAT-FORMAT.md, "Prompt rendering"). A vocabulary without the
// markers cannot serve chat: of() throws k3::Error naming the missing token.
#pragma once

#include <cstdint>
#include <vector>

#include "text/chat_template.h"
#include "text/output_parser.h"
#include "text/tokenizer.h"

namespace k3::server {

struct VocabRoles {
  int32_t open = -1, close = -1, sep = -1, end_of_msg = -1;
  static VocabRoles of(const text::Tokenizer& tok);
  text::TokenKind kind(const text::Tokenizer& tok, int32_t id) const;
  // The token that ends a turn (what a scripted output that runs out is ended with).
  int32_t end_token(const text::Tokenizer& tok) const;
};

std::vector<int32_t> tokenize_segments(const text::Tokenizer& tok,
                                       const std::vector<text::ChatSegment>& segs);

}  // namespace k3::server
