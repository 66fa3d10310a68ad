// llama.cpp's BPE vocab tests (test-tokenizer-0 format) for the other pre-tokenizers:
// encode with add_special=false, parse_special=false, compare ids exactly; decode back.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "text/tokenizer_test_util.h"

namespace k3::text::test {
namespace {

void run_vocab_file(const std::string& dir, const std::string& name, PreTokenizer expect_pre) {
  auto tok = Tokenizer::from_gguf_path(dir + "/" + name);
  EXPECT_EQ(tok->pre_tokenizer(), expect_pre);
  auto cases = read_vocab_cases(dir + "/" + name + ".inp", dir + "/" + name + ".out");
  EXPECT_EQ(cases.size(), 46u);
  size_t pass = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    auto ids = tok->encode(cases[i].text, false, false);
    if (ids == cases[i].ids) ++pass;
    else ADD_FAILURE() << name << " case " << i << " differs";
    EXPECT_EQ(tok->decode(ids), cases[i].text) << name << " case " << i;
  }
  EXPECT_EQ(pass, cases.size()) << name;
}

TEST(VocabFiles, Gpt2) {
  run_vocab_file(K3_TEST_DATA_DIR "/text", "ggml-vocab-gpt-2.gguf", PreTokenizer::Gpt2);
}

TEST(VocabFiles, DeepseekCoder) {
  run_vocab_file(K3_TEST_DATA_DIR "/text", "ggml-vocab-deepseek-coder.gguf", PreTokenizer::DeepseekCoder);
}

// The remaining vocabularies are too large to keep in the repository; they are checked when a
// folder holding them is found: $K3_VOCAB_TESTS_DIR if set (llama.cpp's models/ folder holds
// them, with their .inp/.out files), else shared/golden/text/vocab-tests next to the checkout
// (where tests/data/README.md says the two kept here came from). Skipped otherwise.
class SharedVocab : public ::testing::TestWithParam<std::pair<const char*, PreTokenizer>> {};

TEST_P(SharedVocab, MatchesLlamaCpp) {
  std::string dir;
  std::vector<std::string> candidates{K3_TEST_DATA_DIR "/../../../shared/golden/text/vocab-tests"};
  if (const char* env = std::getenv("K3_VOCAB_TESTS_DIR"); env && *env)
    candidates.insert(candidates.begin(), env);
  for (const std::string& d : candidates)
    if (dir.empty() && std::filesystem::exists(d + "/" + GetParam().first)) dir = d;
  if (dir.empty()) GTEST_SKIP() << GetParam().first << " not available (set K3_VOCAB_TESTS_DIR)";
  run_vocab_file(dir, GetParam().first, GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(
    Others, SharedVocab,
    ::testing::Values(std::make_pair("ggml-vocab-deepseek-llm.gguf", PreTokenizer::DeepseekLlm),
                      std::make_pair("ggml-vocab-falcon.gguf", PreTokenizer::Falcon),
                      std::make_pair("ggml-vocab-starcoder.gguf", PreTokenizer::Starcoder),
                      std::make_pair("ggml-vocab-refact.gguf", PreTokenizer::Starcoder),
                      std::make_pair("ggml-vocab-mpt.gguf", PreTokenizer::Gpt2)),
    [](const auto& info) {
      std::string n = info.param.first;
      n = n.substr(11, n.size() - 16);
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

}  // namespace
}  // namespace k3::text::test
