// tools/tiktoken: a tiktoken BPE vocabulary ("tiktoken.model": one "base64 rank" line per
// token) and its translation into GGUF byte-level BPE form.
// Contract: read_tiktoken() rejects bad base64, duplicate tokens and ranks that are not
// exactly 0..n-1 (the rank is the token id), naming the file and line. gguf_bpe_vocab()
// spells tokens in GPT-2 byte-to-unicode form and rebuilds the merge list from the ranks:
// for every multi-byte token, rank-BPE of its bytes limited to lower ranks must end in
// exactly two parts, which become that token's merge (in rank order) — so merge-rank BPE over
// the list reproduces tiktoken's rank BPE. A token that cannot be built that way is an error.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace k3::tools {

// Token bytes, indexed by rank.
std::vector<std::string> read_tiktoken(const std::string& path);
std::vector<std::string> parse_tiktoken(const std::string& text, const std::string& name);

// llama.cpp token types.
enum TokenType : int32_t {
  kTokNormal = 1,
  kTokUnknown = 2,
  kTokControl = 3,
  kTokUserDefined = 4,
  kTokUnused = 5,
  kTokByte = 6
};

struct GgufBpeVocab {
  std::vector<std::string> tokens;  // GGUF spelling
  std::vector<int32_t> types;
  std::vector<std::string> merges;  // "A B" in GGUF spelling
};

// ranks: the base vocabulary; specials: id -> name for ids >= ranks.size(); n_vocab: total
// size (ids that are neither become "[PAD<id>]", UNUSED).
GgufBpeVocab gguf_bpe_vocab(const std::vector<std::string>& ranks,
                            const std::map<uint32_t, std::string>& specials, uint32_t n_vocab);

// GPT-2 byte-to-unicode spelling of a byte string.
std::string gpt2_spelling(const std::string& bytes);

}  // namespace k3::tools
