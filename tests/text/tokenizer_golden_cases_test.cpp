// The Kimi-K3 golden tokenizer cases (tests/data/text/tokenizer_cases.jsonl): pieces, ids with
// and without special parsing, and decode, for every case, against the reference tokenizer.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "gguf/file.h"
#include "text/tokenizer_test_util.h"

namespace k3::text::test {
namespace {

struct GoldenCase {
  std::string id, text;
  std::vector<std::string> pieces;
  std::vector<TokenId> ids, ids_special;
};

const std::vector<GoldenCase>& golden_cases() {
  static const std::vector<GoldenCase> cases = [] {
    std::vector<GoldenCase> v;
    std::istringstream in(read_file(data_path("tokenizer_cases.jsonl")));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto j = nlohmann::json::parse(line);
      v.push_back({j["id"], j["text"], j["ref_pieces"], j["ref_ids"], j["ref_ids_parse_special"]});
    }
    return v;
  }();
  return cases;
}

TEST(GoldenTokenizer, AllCasesLoaded) { EXPECT_EQ(golden_cases().size(), 475u); }

TEST(GoldenTokenizer, PiecesMatchReference) {
  auto tok = vocab("k3-synth-vocab.gguf");
  ASSERT_EQ(tok->pre_tokenizer(), PreTokenizer::KimiK2);
  size_t pass = 0;
  for (const auto& c : golden_cases()) {
    auto got = tok->pieces(c.text);
    std::vector<std::string> g(got.begin(), got.end());
    if (g == c.pieces) ++pass;
    else ADD_FAILURE() << c.id << ": pieces differ";
  }
  EXPECT_EQ(pass, golden_cases().size());
}

TEST(GoldenTokenizer, IdsMatchReference) {
  auto tok = vocab("k3-synth-vocab.gguf");
  size_t pass = 0;
  for (const auto& c : golden_cases()) {
    if (tok->encode(c.text, false) == c.ids) ++pass;
    else ADD_FAILURE() << c.id << ": ids differ";
  }
  EXPECT_EQ(pass, golden_cases().size());
}

TEST(GoldenTokenizer, ParseSpecialIdsMatchReference) {
  auto tok = vocab("k3-synth-vocab.gguf");
  size_t pass = 0;
  for (const auto& c : golden_cases()) {
    if (tok->encode(c.text, true) == c.ids_special) ++pass;
    else ADD_FAILURE() << c.id << ": parse_special ids differ";
  }
  EXPECT_EQ(pass, golden_cases().size());
}

TEST(GoldenTokenizer, DecodeGivesBackText) {
  auto tok = vocab("k3-synth-vocab.gguf");
  for (const auto& c : golden_cases()) {
    EXPECT_EQ(tok->decode(c.ids), c.text) << c.id;
    EXPECT_EQ(tok->decode(c.ids_special), c.text) << c.id;
  }
}

TEST(GoldenTokenizer, VocabTestFormatFile) {
  auto tok = vocab("k3-synth-vocab.gguf");
  auto cases = read_vocab_cases(data_path("k3-synth-vocab.gguf.inp"), data_path("k3-synth-vocab.gguf.out"));
  ASSERT_EQ(cases.size(), 475u);
  size_t pass = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (tok->encode(cases[i].text, false) == cases[i].ids) ++pass;
    else ADD_FAILURE() << "case " << i << " differs";
  }
  EXPECT_EQ(pass, cases.size());
}

// The loader checks the golden vocabulary was made for: 8192 tokens, <|open|> is 7939 and
// CONTROL, the named ids at K3's offsets from the first control id (163584 + k there, 7936 + k
// here), the EOG set {[EOS], <|end_of_msg|>, [EOT]}, no BOS added.
TEST(GoldenTokenizer, SyntheticVocabMetadata) {
  auto tok = vocab("k3-synth-vocab.gguf");
  EXPECT_EQ(tok->n_vocab(), 8192u);
  EXPECT_EQ(tok->token_text(7939), "<|open|>");
  EXPECT_EQ(tok->token_type(7939), TokenType::Control);
  EXPECT_EQ(tok->find("[BOS]"), 7936);
  EXPECT_EQ(tok->find("[EOS]"), 7937);
  EXPECT_EQ(tok->find("<|end_of_msg|>"), 7938);
  EXPECT_EQ(tok->find("<|close|>"), 7940);
  EXPECT_EQ(tok->find("<|sep|>"), 7941);
  EXPECT_EQ(tok->find("[EOT]"), 7945);
  EXPECT_EQ(tok->find("<|media_pad|>"), 7957);
  EXPECT_EQ(tok->find("[UNK]"), 8190);
  EXPECT_EQ(tok->find("[PAD]"), 8191);
  EXPECT_EQ(tok->bos(), 7936);
  EXPECT_EQ(tok->eos(), 7938);
  EXPECT_EQ(tok->eot(), 7945);
  EXPECT_EQ(tok->unk(), 8190);
  EXPECT_EQ(tok->pad(), 8191);
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->eog_ids(), (std::vector<TokenId>{7937, 7938, 7945}));
  EXPECT_TRUE(tok->is_eog(7938));
  EXPECT_FALSE(tok->is_eog(7939));
  EXPECT_EQ(tok->encode("<|open|>think<|sep|>", true), (std::vector<TokenId>{7939, 1004, 7941}));
  EXPECT_EQ(tok->encode("Hello world"), (std::vector<TokenId>{6676, 2170, 1671}));
}

// Merge-list BPE (llama.cpp's algorithm, no whole-piece shortcut) over the GGUF merges
// rebuilds every ordinary token from its bytes, so the merges agree with the ranks (the
// vocabulary was checked to satisfy the converter's rule: rank-BPE of each token's bytes with
// max_rank = its rank gives exactly two parts).
TEST(GoldenTokenizer, MergeListBpeRebuildsEveryToken) {
  VocabData d = Tokenizer::vocab_from_gguf(*gguf::GgufFile::open(data_path("k3-synth-vocab.gguf")));
  EXPECT_EQ(d.merges.size(), 7680u);
  d.pre = "gpt-2";  // any non-kimi kind selects merge-list BPE
  auto merges_tok = Tokenizer::build(std::move(d));
  auto rank_tok = vocab("k3-synth-vocab.gguf");
  for (TokenId id = 0; id < 7936; ++id) {
    std::vector<TokenId> out;
    merges_tok->encode_piece(rank_tok->token_bytes(id), out);
    ASSERT_EQ(out, std::vector<TokenId>{id}) << "token " << id;
  }
}

}  // namespace
}  // namespace k3::text::test
