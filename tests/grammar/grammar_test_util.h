// Helpers for the grammar tests: byte vocabularies and driving a matcher with text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"

namespace k3::grammar::test {

// Every single byte as a text token (ids 0..255), then `extra` text pieces, then the given
// special tokens, then one EOG token "<|eos|>" (the last id).
inline std::shared_ptr<const TokenVocab> byte_vocab(const std::vector<std::string>& extra = {},
                                                    const std::vector<std::string>& specials = {}) {
  std::vector<std::string> pieces;
  std::vector<TokenClass> cls;
  for (int b = 0; b < 256; ++b) {
    pieces.emplace_back(1, static_cast<char>(b));
    cls.push_back(TokenClass::Text);
  }
  for (const auto& e : extra) {
    pieces.push_back(e);
    cls.push_back(TokenClass::Text);
  }
  for (const auto& s : specials) {
    pieces.push_back(s);
    cls.push_back(TokenClass::Special);
  }
  pieces.emplace_back("<|eos|>");
  cls.push_back(TokenClass::Eog);
  return std::make_shared<const TokenVocab>(std::move(pieces), std::move(cls));
}

inline bool bit(std::span<const uint64_t> m, int32_t id) {
  return (m[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
}

// Feeds `text` byte by byte; true if every byte was allowed (by the mask and by allows()).
inline bool feed_bytes(GrammarMatcher& m, const std::string& text) {
  for (unsigned char b : text) {
    auto mask = m.allowed();
    if (!bit(mask, b) || !m.allows(b)) return false;
    m.accept(b);
  }
  return true;
}

// True if the whole text is a sentence of the grammar.
inline bool matches(const std::string& gbnf, const std::string& text) {
  auto g = std::make_shared<const Grammar>(parse_gbnf(gbnf));
  GrammarMatcher m(g, byte_vocab());
  return feed_bytes(m, text) && m.can_end();
}

}  // namespace k3::grammar::test
