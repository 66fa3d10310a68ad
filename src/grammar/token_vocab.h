// grammar/token_vocab: a vocabulary as the grammar matcher sees it, with its byte trie.
// Contract: every token is text (matched by its bytes), special (matched only where a
// grammar names it as `<|name|>`) or end-of-generation (allowed where the grammar may end,
// or where it names it). The trie holds the text tokens in depth-first order with the end
// of each subtree, so one linear pass with skips visits exactly the prefixes a grammar state
// lets through. Built once per vocabulary and shared read-only by every matcher.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace k3::text {
class Tokenizer;
}

namespace k3::grammar {

enum class TokenClass : uint8_t { Text, Special, Eog };

class TokenVocab {
 public:
  // pieces[i]: the bytes of text token i, or the text (`<|open|>`) of a special/EOG token.
  TokenVocab(std::vector<std::string> pieces, std::vector<TokenClass> classes);
  // Control tokens are special (EOG when the tokenizer says so, or when listed in extra_eog).
  static std::shared_ptr<const TokenVocab> from_tokenizer(const text::Tokenizer& tok,
                                                          const std::vector<int32_t>& extra_eog = {});

  size_t size() const { return classes_.size(); }
  TokenClass token_class(int32_t id) const { return classes_[static_cast<size_t>(id)]; }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  // The id of the special or EOG token whose text is `name`, or -1.
  int32_t find_special(const std::string& name) const;
  const std::vector<int32_t>& eog_ids() const { return eog_; }

  // Trie in depth-first order: node i has byte[i] at depth[i] (1 = first byte); its subtree
  // ends before skip[i]; tokens ending there are ids[tok_begin[i] .. tok_begin[i + 1]).
  struct Trie {
    std::vector<uint8_t> byte;
    std::vector<uint16_t> depth;
    std::vector<uint32_t> skip;
    std::vector<uint32_t> tok_begin;  // size nodes + 1
    std::vector<int32_t> ids;
    uint16_t max_depth = 0;
  };
  const Trie& trie() const { return trie_; }

 private:
  std::vector<std::string> pieces_;
  std::vector<TokenClass> classes_;
  std::unordered_map<std::string, int32_t> special_;
  std::vector<int32_t> eog_;
  Trie trie_;
};

}  // namespace k3::grammar
