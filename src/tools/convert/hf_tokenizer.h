// tools/hf_tokenizer: the tokenizer.* GGUF keys of a Kimi-K3 Hugging Face checkpoint, built
// from its tiktoken.model, tokenizer_config.json and chat template
// (docs/convert.md, "Tokenizer").
// Contract: ids 0..n_base-1 are the tiktoken ranks (NORMAL); the next 256 ids are CONTROL
// tokens named by tokenizer_config.json's added_tokens_decoder, unnamed ones
// "<|reserved_token_ID|>"; further ids are "[PAD<id>]" (UNUSED) unless named. eos is the
// config's eos_token_id when given (K3: <|end_of_msg|>), else tokenizer_config's eos_token;
// bos/pad/unk come from tokenizer_config (falling back to [BOS]/[PAD]/[UNK] by name); eot is
// the token named [EOT]. The chat template is, in order of preference: the override file,
// tokenizer_config.json's chat_template, chat_template.jinja; with none, K3's own Kimi-K3.jinja
// (src/tools/convert/hf_k3_template.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"

namespace k3::tools {

struct HfTokenizerInput {
  std::string dir;                    // checkpoint directory
  uint32_t vocab_size = 0;            // config vocab_size (0: n_base + 256)
  std::optional<int64_t> config_eos;  // config eos_token_id
  std::string chat_template_file;     // optional override
};

struct HfTokenizerResult {
  std::vector<std::pair<std::string, gguf::Value>> kvs;
  uint32_t n_tokens = 0, n_merges = 0;
  bool has_template = false;
  bool builtin_template = false;  // none in the checkpoint: Kimi-K3.jinja was embedded
};

HfTokenizerResult hf_tokenizer_kvs(const HfTokenizerInput& in);

}  // namespace k3::tools
