// tools/synth_vocab: byte-level vocabulary for synthetic models (see synth_vocab.h). The
// control-token names and offsets are those of the K3 tokenizer (the 256 control ids after the
// ranks, docs/convert.md) and of the golden small-* models' 272-token vocabulary.
#include "tools/synth/synth_vocab.h"

#include <fmt/format.h>

#include <set>

namespace k3::tools {

namespace {

void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Offsets (from the first control id) of the named K3 control tokens; other slots are
// "[reserved_<offset>]".
struct Named {
  uint32_t offset;
  const char* text;
};
constexpr Named kControl[] = {
    {0, "[BOS]"},
    {1, "[EOS]"},
    {2, "<|end_of_msg|>"},
    {3, "<|open|>"},
    {4, "<|close|>"},
    {5, "<|sep|>"},
    {6, "[start_header_id]"},
    {7, "[end_header_id]"},
    {9, "[EOT]"},
    {18, "<|media_begin|>"},
    {19, "<|media_content|>"},
    {20, "<|media_end|>"},
    {21, "<|media_pad|>"},
};

}  // namespace

std::string gpt2_byte_spelling(uint8_t b) {
  // Printable Latin-1 bytes spell themselves; the others map, in byte order, to U+0100 + n.
  auto printable = [](int c) {
    return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
  };
  std::string s;
  if (printable(b)) {
    append_utf8(s, b);
    return s;
  }
  uint32_t n = 0;
  for (int c = 0; c < b; ++c)
    if (!printable(c)) ++n;
  append_utf8(s, 0x100 + n);
  return s;
}

bool synth_vocab_printable(uint32_t n_vocab, uint32_t id) {
  if (n_vocab < 272) return true;
  const uint32_t first_control = n_vocab - (n_vocab >= 512 ? 256 : 16);
  if (id < 256) return (id >= 0x20 && id <= 0x7E) || id == '\n';
  if (id < first_control) return true;
  return id == first_control + 2;
}

void append_synth_vocab(uint32_t n_vocab, std::vector<std::pair<std::string, gguf::Value>>& kvs) {
  using gguf::Value;
  if (n_vocab < 272) {
    kvs.emplace_back("tokenizer.ggml.model", Value::string("no_vocab"));
    return;
  }
  const uint32_t n_control = n_vocab >= 512 ? 256 : 16;
  const uint32_t first_control = n_vocab - n_control;
  const uint32_t unk = n_vocab - 2, pad = n_vocab - 1;

  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  tokens.reserve(n_vocab);
  types.reserve(n_vocab);
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(gpt2_byte_spelling(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  // Ordinary multi-byte tokens: every string over " a…z" of length 2, then 3, … (spelled
  // as GPT-2 does, so a space is "Ġ"), enough to fill the gap up to the control block.
  const std::string alphabet = " abcdefghijklmnopqrstuvwxyz";
  std::vector<int> digits(2, 0);
  while (tokens.size() < first_control) {
    std::string t;
    for (int d : digits) t += gpt2_byte_spelling(static_cast<uint8_t>(alphabet[d]));
    tokens.push_back(std::move(t));
    types.push_back(1);
    size_t i = digits.size();
    while (i > 0 && ++digits[i - 1] == static_cast<int>(alphabet.size())) digits[--i] = 0;
    if (i == 0) digits.assign(digits.size() + 1, 0);
  }
  for (uint32_t off = 0; off < n_control; ++off) {
    uint32_t id = first_control + off;
    std::string name = fmt::format("[reserved_{}]", off);
    for (const Named& n : kControl)
      if (n.offset == off) name = n.text;
    if (id == unk) name = "[UNK]";
    if (id == pad) name = "[PAD]";
    tokens.push_back(std::move(name));
    types.push_back(3);
  }

  kvs.emplace_back("tokenizer.ggml.model", Value::string("gpt2"));
  kvs.emplace_back("tokenizer.ggml.pre", Value::string("kimi-k2"));
  kvs.emplace_back("tokenizer.ggml.tokens", Value::array_string(std::move(tokens)));
  kvs.emplace_back("tokenizer.ggml.token_type", Value::array_i32(types));
  kvs.emplace_back("tokenizer.ggml.bos_token_id", Value::u32(first_control));
  kvs.emplace_back("tokenizer.ggml.eos_token_id", Value::u32(first_control + 2));  // <|end_of_msg|>
  kvs.emplace_back("tokenizer.ggml.padding_token_id", Value::u32(pad));
  kvs.emplace_back("tokenizer.ggml.add_bos_token", Value::boolean(false));
}

}  // namespace k3::tools
