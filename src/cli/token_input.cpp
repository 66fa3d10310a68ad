#include "cli/token_input.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/read_file.h"
#include "model/model.h"
#include "runtime/eval_logits.h"
#include "text/tokenizer.h"

namespace k3::cli {

CorpusTokens load_corpus_tokens(const model::Model& model, const std::string& text_file,
                                const std::string& tokens_file, const char* tool) {
  CorpusTokens out;
  if (text_file.empty()) {
    out.tokens = runtime::parse_token_list(read_file(tokens_file), tokens_file);
    return out;
  }
  auto tok = text::Tokenizer::from_gguf(model.gguf());
  out.tokens = tok->encode(read_file(text_file), false, true);
  if (tok->add_bos() && tok->bos() >= 0) out.bos = tok->bos();
  fmt::print(stderr, "{}: tokenized {} into {} tokens\n", tool, text_file, out.tokens.size());
  return out;
}

}  // namespace k3::cli
