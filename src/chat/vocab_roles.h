// chat/vocab_roles: what generation needs to know about a vocabulary's special tokens.
// Contract: VocabRoles::of() finds the three XTML markers (<|open|>, <|close|>, <|sep|>) and the
// end-of-generation set; kind() classifies any id for the output parser (markers by id only, so
// generated text that spells "<|close|>" stays text). A vocabulary without the markers can
// still complete raw text, not chat: require_chat() throws k3::Error naming the missing token.
// A model with no vocabulary at all (token ids in, ids out) has only its end-of-sequence id:
// without_vocab(). tokenize_segments() turns a rendered chat (text segments + marker segments)
// into ids: markers become their control ids, text is encoded with special tokens OFF
// (docs/CHAT-FORMAT.md, "Prompt rendering").
#pragma once

#include <cstdint>
#include <vector>

#include "text/chat_template.h"
#include "text/output_parser.h"
#include "text/tokenizer.h"

namespace k3::chat {

struct VocabRoles {
  int32_t open = -1, close = -1, sep = -1, end_of_msg = -1;
  int32_t eos = -1;  // without a vocabulary: the one end-of-generation id (-1: none)
  static VocabRoles of(const text::Tokenizer& tok);
  static VocabRoles without_vocab(int32_t eos);
  bool has_chat() const { return open >= 0 && close >= 0 && sep >= 0; }
  void require_chat() const;
  // tok: null for a model without a vocabulary (then only eos is special).
  text::TokenKind kind(const text::Tokenizer* tok, int32_t id) const;
  text::TokenKind kind(const text::Tokenizer& tok, int32_t id) const { return kind(&tok, id); }
  // The token that ends a turn (what a scripted output that runs out is ended with).
  int32_t end_token(const text::Tokenizer* tok) const;
  int32_t end_token(const text::Tokenizer& tok) const { return end_token(&tok); }
};

std::vector<int32_t> tokenize_segments(const text::Tokenizer& tok,
                                       const std::vector<text::ChatSegment>& segs);

}  // namespace k3::chat
