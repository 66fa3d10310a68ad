// text/tokenizer_impl: the indexed vocabulary behind Tokenizer (internal header).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer.h"

namespace k3::text {

// Open-addressing map from a symbol pair (left id, right id) to (rank, merged id): the
// one lookup in the BPE inner loop.
class PairTable {
 public:
  void reserve(size_t n);
  // Keeps the first value inserted for a key (lowest rank when inserted in rank order).
  void insert(TokenId left, TokenId right, uint32_t rank, TokenId merged);
  // Returns false when the pair is not mergeable.
  bool find(TokenId left, TokenId right, uint32_t& rank, TokenId& merged) const {
    if (keys_.empty() || left < 0 || right < 0) return false;
    const uint64_t key = pack(left, right);
    for (size_t h = slot(key);; h = (h + 1) & mask_) {
      if (keys_[h] == key) {
        rank = static_cast<uint32_t>(vals_[h] >> 32);
        merged = static_cast<TokenId>(vals_[h] & 0xFFFFFFFFu);
        return true;
      }
      if (keys_[h] == kEmpty) return false;
    }
  }
  size_t size() const { return count_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(TokenId l, TokenId r) {
    return (uint64_t{static_cast<uint32_t>(l)} << 32) | static_cast<uint32_t>(r);
  }
  size_t slot(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  void grow();
  std::vector<uint64_t> keys_, vals_;
  size_t mask_ = 0, count_ = 0;
  int shift_ = 64;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIndex = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

struct Tokenizer::Impl {
  VocabData data;  // tokens, types, ids as loaded (merges dropped after use)
  PreTokenizer pre = PreTokenizer::Gpt2;
  std::vector<std::string> bytes;  // byte content of each token
  std::vector<TokenType> types;
  StringIndex by_text;                    // stored text -> id
  StringIndex by_bytes;                   // bytes of BPE-able (normal) tokens -> id
  std::array<TokenId, 256> byte_token{};  // -1: the byte has no token (dropped)
  bool complete_bytes = true;             // every byte has a token: encoding is lossless
  PairTable pairs;
  bool rank_bpe = false;           // tiktoken: rank of a pair = id of the concatenation
  bool whole_piece_first = false;  // a piece that is a token is emitted as is

  // Special-token matching: candidates by first byte, longest first.
  struct Special {
    std::string_view text;
    TokenId id;
    bool always;  // user-defined: matched even without parse_special
  };
  std::array<std::vector<Special>, 256> specials_by_byte;
  bool any_always = false, any_special = false;

  std::vector<TokenId> eog;
  std::vector<uint8_t> eog_flag;

  void bpe(std::string_view piece, std::vector<TokenId>& out) const;
};

// GPT-2's byte <-> printable code point mapping used to spell byte-level tokens.
uint32_t gpt2_byte_to_cp(uint8_t b);

}  // namespace k3::text
