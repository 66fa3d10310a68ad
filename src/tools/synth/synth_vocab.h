// tools/synth_vocab: the byte-level vocabulary written into synthetic models.
// Contract: for n_vocab >= 272 the vocabulary is gpt2-style with pre-tokenizer "kimi-k2" and
// no merges: ids 0–255 are the single bytes in GPT-2's byte-to-unicode spelling (so any text
// tokenizes and any id detokenizes), then ordinary multi-byte tokens, then a block of
// CONTROL tokens at the end. With fewer than 512 ids that block is the 16-token table of the
// golden small-* models ([BOS] 256, [EOS] 257, <|end_of_msg|> 258 = eos, <|open|>,
// <|close|>, <|sep|>, ..., [EOT] 265, [UNK] 270, [PAD] 271 for n_vocab 272); otherwise it is
// the 256-token table of the real K3 vocabulary ([BOS] at n_vocab−256, ids of the real model
// when n_vocab = 163840). Below 272 ids the model is written as "no_vocab".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"

namespace k3::tools {

// Appends the tokenizer.* KVs (or tokenizer.ggml.model = "no_vocab").
void append_synth_vocab(uint32_t n_vocab, std::vector<std::pair<std::string, gguf::Value>>& kvs);

// Whether token `id` of the synthetic vocabulary of n_vocab ids decodes to visible text or
// ends a message: printable ASCII bytes, newline, the multi-byte filler tokens and the eos
// (<|end_of_msg|>). synth gives the other rows of output.weight zero weights so a random
// model prints readable text instead of terminal control bytes.
bool synth_vocab_printable(uint32_t n_vocab, uint32_t id);

// GPT-2's byte-to-unicode spelling of one byte, as UTF-8.
std::string gpt2_byte_spelling(uint8_t b);

}  // namespace k3::tools
