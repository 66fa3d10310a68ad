// text/pretokenizer: splits text into the pieces that byte-level BPE encodes one by one.
// Contract: the pieces are non-empty, in order, and concatenate to exactly the input bytes
// (valid UTF-8 or not: an invalid byte is one U+FFFD character for the splitter's purposes
// but keeps its own byte). Each kind reproduces one published split pattern; see
// docs/tokenize.md for the patterns and the reference each is checked against.
#pragma once

#include <string_view>
#include <vector>

namespace k3::text {

enum class PreTokenizer {
  KimiK2,         // Kimi K2/K3 tokenization_kimi.py pat_str + its 400k/25k chunking
  Gpt2,           // GPT-2 (also "mpt", "olmo")
  Llama3,         // Llama-3 (also "dbrx", "smaug-bpe")
  DeepseekLlm,    // DeepSeek LLM, as llama.cpp splits it (sequential regex passes)
  DeepseekCoder,  // DeepSeek Coder, likewise
  Starcoder,      // single digits, then GPT-2 (also "refact", "command-r", "smollm")
  Falcon,         // punctuation runs, GPT-2, then ASCII digit triples
};

// Maps a GGUF `tokenizer.ggml.pre` value; an empty name means "default" and maps to Gpt2.
// Throws k3::Error listing the supported names for anything else.
PreTokenizer pretokenizer_from_name(std::string_view name);
const char* pretokenizer_name(PreTokenizer kind);

// Appends the pieces of `text` to `out` (views into `text`).
void pretokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& out);
inline std::vector<std::string_view> pretokenize(PreTokenizer kind, std::string_view text) {
  std::vector<std::string_view> out;
  pretokenize(kind, text, out);
  return out;
}

}  // namespace k3::text
