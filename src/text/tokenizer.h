// text/tokenizer: byte-level BPE tokenizer built from a GGUF vocabulary (tokenizer.ggml.*).
// Contract:
//  - encode() reproduces the reference tokenizers: the pre-tokenizer named by
//    tokenizer.ggml.pre, then rank BPE (kimi-k2: tiktoken semantics, rank = token id) or
//    merge-list BPE (every other kind: llama.cpp semantics). Lowest rank first, leftmost on
//    ties, O(n log n) per piece.
//  - Control tokens are recognised in text only when parse_special is set (leftmost, then
//    longest match); user-defined tokens always. Everything else is ordinary text.
//  - decode() concatenates token bytes, so decode(encode(b)) == b for ANY byte string b
//    (invalid UTF-8 included). Control tokens decode to their names unless told otherwise.
//  - Building from bad metadata throws k3::Error naming the key or token at fault.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/pretokenizer.h"

namespace k3::gguf {
class GgufFile;
}

namespace k3::text {

using TokenId = int32_t;

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// The vocabulary as stored in GGUF metadata (the tokenizer.ggml.* keys).
struct VocabData {
  std::string model = "gpt2";        // tokenizer.ggml.model; only "gpt2" is supported
  std::string pre;                   // tokenizer.ggml.pre
  std::vector<std::string> tokens;   // GPT-2 byte-to-unicode spelling for normal tokens
  std::vector<int32_t> token_types;  // empty = all Normal
  std::vector<std::string> merges;   // "A B", in rank order
  TokenId bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1, sep = -1;
  bool add_bos = false, add_eos = false;
  std::string source = "vocabulary";  // for error messages (file path)
};

class Tokenizer {
 public:
  // Validates and indexes the vocabulary. Throws k3::Error on inconsistent data.
  static std::shared_ptr<const Tokenizer> build(VocabData data);
  // Reads the tokenizer.ggml.* keys of a GGUF file (vocab-only files included).
  static VocabData vocab_from_gguf(const gguf::GgufFile& file);
  static std::shared_ptr<const Tokenizer> from_gguf(const gguf::GgufFile& file);
  static std::shared_ptr<const Tokenizer> from_gguf_path(const std::string& path);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Text -> ids. add_special prepends BOS / appends EOS when the vocabulary asks for them.
  std::vector<TokenId> encode(std::string_view text, bool parse_special = false,
                              bool add_special = false) const;
  // Appends the ids of plain text (no special-token matching) to `out`.
  void encode_ordinary(std::string_view text, std::vector<TokenId>& out) const;
  // The pre-tokenizer pieces of plain text (for tests and `k3 tokenize --pieces`).
  std::vector<std::string_view> pieces(std::string_view text) const;
  // BPE of one piece (no pre-tokenization); appends ids.
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;

  // Ids -> bytes. render_control=false drops control tokens (what a chat client sees).
  // Throws k3::Error for an id outside the vocabulary.
  std::string decode(std::span<const TokenId> ids, bool render_control = true) const;
  // Bytes of one token: decoded byte-level text for normal tokens, the name otherwise.
  const std::string& token_bytes(TokenId id) const;
  // The stored token text (GPT-2 spelling for normal tokens).
  const std::string& token_text(TokenId id) const;
  TokenType token_type(TokenId id) const;

  size_t n_vocab() const;
  // True when every byte value has a token, so decode(encode(b)) == b for any bytes b;
  // otherwise bytes without a token are dropped (as llama.cpp does).
  bool byte_complete() const;
  PreTokenizer pre_tokenizer() const;
  // Exact stored token text -> id, or -1 (e.g. find("<|open|>")).
  TokenId find(std::string_view text) const;

  TokenId bos() const;
  TokenId eos() const;
  TokenId eot() const;
  TokenId unk() const;
  TokenId pad() const;
  bool add_bos() const;
  bool add_eos() const;
  // End of generation: eos, eot, eom, plus control tokens whose names mark an end
  // ([EOS], [EOT], <|eot_id|>, <|im_end|>, <|endoftext|>, ...), as llama.cpp derives it.
  bool is_eog(TokenId id) const;
  const std::vector<TokenId>& eog_ids() const;
  bool is_control(TokenId id) const { return token_type(id) == TokenType::Control; }

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental decoding for streamed generation: push() returns the bytes that are safe to
// show now, holding back a trailing incomplete UTF-8 sequence until a later token completes
// it. The concatenation of every push() and the final flush() equals decode(ids) exactly.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tok, bool render_control = true)
      : tok_(tok), render_control_(render_control) {}
  std::string push(TokenId id);
  std::string flush();  // whatever is held back (possibly an incomplete sequence)
  size_t pending() const { return held_.size(); }

 private:
  const Tokenizer& tok_;
  bool render_control_;
  std::string held_;
};

}  // namespace k3::text
