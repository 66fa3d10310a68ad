// cli/token_input: the "-f TEXT | --tokens-file F" input shared by the corpus tools
// (imatrix, perplexity). Text is tokenized with the model's own vocabulary, special tokens
// parsed; a token file is a comma/space-separated id list. Unreadable files throw k3::Error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::model {
class Model;
}

namespace k3::cli {

struct CorpusTokens {
  std::vector<int32_t> tokens;
  int32_t bos = -1;  // the vocabulary's BOS when it asks for one at chunk starts, else -1
};

// Exactly one of text_file / tokens_file is non-empty (the caller checks). `tool` prefixes
// the progress line.
CorpusTokens load_corpus_tokens(const model::Model& model, const std::string& text_file,
                                const std::string& tokens_file, const char* tool);

}  // namespace k3::cli
