// text/pretokenizer: decoding, the pass driver, and dispatch by kind.
#include "text/pretokenizer.h"

#include <fmt/format.h>

#include "core/error.h"
#include "text/pretokenizer_detail.h"

namespace k3::text {
namespace pre {

void CharSeq::decode(std::string_view text) {
  cp.clear();
  fl.clear();
  off.clear();
  cp.reserve(text.size());
  fl.reserve(text.size());
  off.reserve(text.size() + 1);
  size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<uint8_t>(text[i]);
    unicode::Decoded d =
        b < 0x80 ? unicode::Decoded{b, 1} : unicode::decode_utf8(text.data() + i, text.size() - i);
    cp.push_back(d.cp);
    fl.push_back(unicode::flags(d.cp));
    off.push_back(static_cast<uint32_t>(i));
    i += d.len;
  }
  off.push_back(static_cast<uint32_t>(text.size()));
}

void split_pass(const CharSeq& s, Matcher m, const Ranges& in, Ranges& out) {
  for (const auto& [b, e] : in) {
    size_t gap = b, i = b;
    while (i < e) {
      size_t resume = i + 1;
      const size_t end = m(s, i, b, e, resume);
      if (end > i) {
        if (gap < i) out.emplace_back(gap, i);
        out.emplace_back(i, end);
        gap = i = end;
      } else {
        i = resume > i ? resume : i + 1;
      }
    }
    if (gap < e) out.emplace_back(gap, e);
  }
}

}  // namespace pre

namespace {

struct Named {
  const char* name;
  PreTokenizer kind;
};
// GGUF `tokenizer.ggml.pre` values and the pattern family each one uses.
constexpr Named kNames[] = {
    {"kimi-k2", PreTokenizer::KimiK2},
    {"gpt-2", PreTokenizer::Gpt2},
    {"gpt2", PreTokenizer::Gpt2},
    {"mpt", PreTokenizer::Gpt2},
    {"olmo", PreTokenizer::Gpt2},
    {"jais", PreTokenizer::Gpt2},
    {"llama3", PreTokenizer::Llama3},
    {"llama-v3", PreTokenizer::Llama3},
    {"llama-bpe", PreTokenizer::Llama3},
    {"dbrx", PreTokenizer::Llama3},
    {"smaug-bpe", PreTokenizer::Llama3},
    {"deepseek-llm", PreTokenizer::DeepseekLlm},
    {"deepseek-coder", PreTokenizer::DeepseekCoder},
    {"starcoder", PreTokenizer::Starcoder},
    {"refact", PreTokenizer::Starcoder},
    {"command-r", PreTokenizer::Starcoder},
    {"smollm", PreTokenizer::Starcoder},
    {"codeshell", PreTokenizer::Starcoder},
    {"falcon", PreTokenizer::Falcon},
};

}  // namespace

PreTokenizer pretokenizer_from_name(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.kind;
  std::string known;
  for (const auto& n : kNames) known += fmt::format("{}{}", known.empty() ? "" : ", ", n.name);
  fail("unsupported pre-tokenizer '{}' (tokenizer.ggml.pre); supported: {}", name, known);
}

const char* pretokenizer_name(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::KimiK2: return "kimi-k2";
    case PreTokenizer::Gpt2: return "gpt-2";
    case PreTokenizer::Llama3: return "llama3";
    case PreTokenizer::DeepseekLlm: return "deepseek-llm";
    case PreTokenizer::DeepseekCoder: return "deepseek-coder";
    case PreTokenizer::Starcoder: return "starcoder";
    case PreTokenizer::Falcon: return "falcon";
  }
  return "?";
}

void pretokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& out) {
  if (text.empty()) return;
  thread_local pre::CharSeq s;
  thread_local pre::Ranges a, b;
  s.decode(text);
  a.clear();
  b.clear();
  const size_t n = s.size();
  switch (kind) {
    case PreTokenizer::KimiK2:
      pre::kimi_chunks(s, b);
      pre::split_pass(s, pre::match_kimi_k2, b, a);
      break;
    case PreTokenizer::Gpt2:
      b.emplace_back(0, n);
      pre::split_pass(s, pre::match_gpt2, b, a);
      break;
    case PreTokenizer::Llama3:
      b.emplace_back(0, n);
      pre::split_pass(s, pre::match_llama3, b, a);
      break;
    case PreTokenizer::DeepseekLlm: pre::split_deepseek_llm(s, a); break;
    case PreTokenizer::DeepseekCoder: pre::split_deepseek_coder(s, a); break;
    case PreTokenizer::Starcoder: pre::split_starcoder(s, a); break;
    case PreTokenizer::Falcon: pre::split_falcon(s, a); break;
  }
  for (const auto& [cb, ce] : a) out.emplace_back(text.substr(s.off[cb], s.off[ce] - s.off[cb]));
}

}  // namespace k3::text
