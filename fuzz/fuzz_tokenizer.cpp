// libFuzzer target for the tokenizer: every input must pre-tokenize into pieces that tile
// it exactly (all kinds), encode without crashing, decode back to the same bytes, and
// stream-decode to the same bytes. The vocabularies are the test copies in tests/data/text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "text/pretokenizer.h"
#include "text/tokenizer.h"

namespace {

using namespace k3::text;

const Tokenizer& kimi() {
  static auto t = Tokenizer::from_gguf_path(K3_FUZZ_DATA_DIR "/text/k3-synth-vocab.gguf");
  return *t;
}
const Tokenizer& gpt2() {
  static auto t = Tokenizer::from_gguf_path(K3_FUZZ_DATA_DIR "/text/ggml-vocab-gpt-2.gguf");
  return *t;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  constexpr PreTokenizer kinds[] = {
      PreTokenizer::KimiK2,        PreTokenizer::Gpt2,      PreTokenizer::Llama3, PreTokenizer::DeepseekLlm,
      PreTokenizer::DeepseekCoder, PreTokenizer::Starcoder, PreTokenizer::Falcon};
  const PreTokenizer kind = kinds[mode % 7];
  size_t total = 0;
  for (auto p : pretokenize(kind, text)) {
    check(!p.empty(), "empty piece");
    check(p.data() == text.data() + total, "pieces do not tile the input");
    total += p.size();
  }
  check(total == text.size(), "pieces do not cover the input");

  const Tokenizer& tok = (mode & 0x80) ? gpt2() : kimi();
  const bool special = mode & 0x40;
  auto ids = tok.encode(text, special);
  check(tok.decode(ids) == text, "decode(encode(x)) != x");
  StreamingDetokenizer st(tok);
  std::string streamed;
  for (auto id : ids) streamed += st.push(id);
  streamed += st.flush();
  check(streamed == text, "streamed decode differs");
  return 0;
}
