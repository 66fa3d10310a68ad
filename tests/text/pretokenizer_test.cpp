// Pre-tokenizer behaviour of the reference kimi-k2 regex (docs/tokenize.md, "The kimi-k2
// split") and the error path for unknown kinds.
#include <gtest/gtest.h>

#include "core/error.h"
#include "text/pretokenizer.h"

namespace k3::text {
namespace {

std::vector<std::string> split(PreTokenizer k, std::string_view s) {
  auto v = pretokenize(k, s);
  return {v.begin(), v.end()};
}
using V = std::vector<std::string>;

TEST(KimiPreTokenizer, SpecExamples) {
  const auto K = PreTokenizer::KimiK2;
  EXPECT_EQ(split(K, "HelloWorld"), (V{"Hello", "World"}));
  EXPECT_EQ(split(K, "camelCaseJSONParser x"), (V{"camel", "Case", "JSONParser", " x"}));
  EXPECT_EQ(split(K, "Don't STOP'S"), (V{"Don't", " STOP'S"}));
  EXPECT_EQ(split(K, "word   x"), (V{"word", "  ", " x"}));
  EXPECT_EQ(split(K, "word   "), (V{"word", "   "}));
  EXPECT_EQ(split(K,
                  "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C"
                  "abc"),
            (V{"\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C", "abc"}));
  EXPECT_EQ(split(K, "1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(split(K, "e\xCC\x81te\xCC\x81"), (V{"e\xCC\x81te\xCC\x81"}));
  EXPECT_EQ(split(K, "message role=\"user\""), (V{"message", " role", "=\"", "user", "\""}));
  EXPECT_EQ(split(K,
                  "E\xCC\x81"
                  "COLE"),
            (V{"E\xCC\x81", "COLE"}));                                               // leftmost-first
  EXPECT_EQ(split(K, "\xE4\xBA\xBA\xE3\x80\x85"), (V{"\xE4\xBA\xBA\xE3\x80\x85"}));  // 人々
  EXPECT_EQ(split(K, "it'\xC5\xBF"), (V{"it'\xC5\xBF"}));                            // 'ſ folds to 's
  EXPECT_EQ(split(K, "\xC2\xA9t _baz"), (V{"\xC2\xA9t", " _", "baz"}));
  EXPECT_EQ(split(K, "a\r\n\r\nb"), (V{"a", "\r\n\r\n", "b"}));
  EXPECT_EQ(split(K, ""), V{});
}

TEST(KimiPreTokenizer, ChunkingCutsLongRuns) {
  std::string s = "x";
  for (int i = 0; i < 13000; ++i) s += "ab";
  auto v = split(PreTokenizer::KimiK2, s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].size(), 25000u);
}

TEST(OtherPreTokenizers, Basics) {
  EXPECT_EQ(split(PreTokenizer::Gpt2, "Hello world's 123  x\n"),
            (V{"Hello", " world", "'s", " 123", " ", " x", "\n"}));
  EXPECT_EQ(split(PreTokenizer::Llama3, "I'M 12345 ok!\n\n"),
            (V{"I", "'M", " ", "123", "45", " ok", "!\n\n"}));
  EXPECT_EQ(split(PreTokenizer::DeepseekCoder, "foo(12)\n"), (V{"foo", "(", "1", "2", ")", "\n"}));
  EXPECT_EQ(split(PreTokenizer::Starcoder, "x 42"), (V{"x", " ", "4", "2"}));
}

TEST(OtherPreTokenizers, UnknownNameIsAnError) {
  EXPECT_EQ(pretokenizer_from_name("kimi-k2"), PreTokenizer::KimiK2);
  EXPECT_EQ(pretokenizer_from_name("deepseek-llm"), PreTokenizer::DeepseekLlm);
  try {
    pretokenizer_from_name("qwen2");
    FAIL();
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("qwen2"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("kimi-k2"), std::string::npos);
  }
}

}  // namespace
}  // namespace k3::text
