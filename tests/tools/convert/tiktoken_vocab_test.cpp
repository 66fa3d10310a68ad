// The synthetic K3 tiktoken vocabulary (tests/data/convert/k3-synth.tiktoken) converts to exactly
// the GGUF vocabulary llama.cpp's converter made from it: tokens, types, merges, special ids, flags
// and the embedded chat template of tests/data/text/k3-synth-vocab.gguf.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tools/convert/test_util.h"
#include "core/error.h"
#include "gguf/file.h"
#include "tools/convert/hf_tokenizer.h"
#include "tools/convert/tiktoken.h"

namespace k3::test {
namespace {

namespace fs = std::filesystem;

const gguf::Value* find_kv(const std::vector<std::pair<std::string, gguf::Value>>& kvs,
                           const std::string& k) {
  for (const auto& [key, v] : kvs)
    if (key == k) return &v;
  return nullptr;
}

TEST(TiktokenVocab, MatchesTheGoldenGgufVocabulary) {
  TempDir tmp("vocab");
  fs::copy_file(data_path("convert/k3-synth.tiktoken"), tmp.path / "tiktoken.model");
  fs::copy_file(data_path("text/Kimi-K3.jinja"), tmp.path / "chat_template.jinja");
  // tokenizer_config.json as a K3 checkpoint has it: added_tokens_decoder + the named roles.
  nlohmann::json specials;
  std::ifstream(data_path("convert/k3-synth-specials.json")) >> specials;
  nlohmann::json added = nlohmann::json::object();
  for (auto it = specials.begin(); it != specials.end(); ++it)
    added[it.key()] = {{"content", it.value()}, {"special", true}};
  nlohmann::json cfg = {{"added_tokens_decoder", added},
                        {"bos_token", "[BOS]"},
                        {"eos_token", "[EOS]"},
                        {"unk_token", "[UNK]"},
                        {"pad_token", "[PAD]"}};
  std::ofstream(tmp.str("tokenizer_config.json")) << cfg.dump();

  tools::HfTokenizerInput in;
  in.dir = tmp.str();
  in.vocab_size = 8192;
  in.config_eos = 7938;  // config.json eos_token_id = <|end_of_msg|>
  tools::HfTokenizerResult r = tools::hf_tokenizer_kvs(in);
  EXPECT_EQ(r.n_tokens, 8192u);
  EXPECT_EQ(r.n_merges, 7680u);

  auto golden = gguf::GgufFile::open(data_path("text/k3-synth-vocab.gguf"));
  size_t compared = 0;
  for (const auto& [k, v] : golden->kvs()) {
    if (k.rfind("tokenizer.", 0) != 0) continue;
    SCOPED_TRACE(k);
    const gguf::Value* o = find_kv(r.kvs, k);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(v.type, o->type);
    EXPECT_EQ(v.bits, o->bits);
    EXPECT_EQ(v.str, o->str);
    EXPECT_EQ(v.raw, o->raw);
    ASSERT_EQ(v.strs.size(), o->strs.size());
    for (size_t i = 0; i < v.strs.size(); ++i) ASSERT_EQ(v.strs[i], o->strs[i]) << k << "[" << i << "]";
    ++compared;
  }
  EXPECT_EQ(compared, 13u);
  EXPECT_EQ(r.kvs.size(), compared);  // and nothing extra
}

TEST(TiktokenVocab, MergesAreRebuiltFromRanks) {
  // "a"=0 "b"=1 "c"=2 "ab"=3 "abc"=4 "bc"=5: "abc" must merge as "ab c" (rank 3 < 5).
  const std::string text = "YQ== 0\nYg== 1\nYw== 2\nYWI= 3\nYWJj 4\nYmM= 5\n";
  std::vector<std::string> ranks = tools::parse_tiktoken(text, "t");
  tools::GgufBpeVocab v = tools::gguf_bpe_vocab(ranks, {{7, "<x>"}}, 9);
  EXPECT_EQ(v.merges, (std::vector<std::string>{"a b", "ab c", "b c"}));
  EXPECT_EQ(v.tokens[6], "[PAD6]");
  EXPECT_EQ(v.types[6], tools::kTokUnused);
  EXPECT_EQ(v.tokens[7], "<x>");
  EXPECT_EQ(v.types[7], tools::kTokControl);
  EXPECT_EQ(tools::gpt2_spelling(" \n"), "\xC4\xA0\xC4\x8A");  // Ġ Ċ
}

TEST(TiktokenVocab, RejectsBadFiles) {
  auto err = [](const std::string& text) {
    try {
      tools::parse_tiktoken(text, "f.tiktoken");
    } catch (const Error& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  EXPECT_NE(err("YQ== 0\nYQ== 1\n").find("repeat"), std::string::npos);
  EXPECT_NE(err("YQ== 0\nYg== 0\n").find("twice"), std::string::npos);
  EXPECT_NE(err("YQ== 0\nYg== 2\n").find("dense"), std::string::npos);
  EXPECT_NE(err("Y!== 0\n").find("base64"), std::string::npos);
  EXPECT_NE(err("YQ== x\n").find("rank"), std::string::npos);
  // A token that is not the merge of two lower ranks.
  std::vector<std::string> ranks = tools::parse_tiktoken("YWJj 0\nYQ== 1\nYg== 2\nYw== 3\n", "t");
  EXPECT_THROW(tools::gguf_bpe_vocab(ranks, {}, 4), Error);
}

}  // namespace
}  // namespace k3::test
