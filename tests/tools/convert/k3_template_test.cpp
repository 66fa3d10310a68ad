// The chat template k3 convert embeds when a checkpoint has none is Kimi-K3.jinja byte for
// byte (the golden copy), is recognised as K3's own, and is used only when the checkpoint
// (or --chat-template) provides no template.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "tools/convert/test_util.h"
#include "text/chat_template.h"
#include "tools/convert/hf_k3_template.h"
#include "tools/convert/hf_tokenizer.h"

namespace k3::test {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string template_kv(const tools::HfTokenizerResult& r) {
  for (const auto& [k, v] : r.kvs)
    if (k == "tokenizer.chat_template") return v.as_string();
  return "<absent>";
}

TEST(K3Template, EmbeddedTextIsTheGoldenKimiK3Jinja) {
  const std::string golden = slurp(data_path("text/Kimi-K3.jinja"));
  ASSERT_EQ(golden.size(), 14909u);
  EXPECT_EQ(std::string(tools::kimi_k3_chat_template()), golden);
  const text::TemplateCheck c = text::check_chat_template(tools::kimi_k3_chat_template());
  EXPECT_EQ(c.kind, text::TemplateKind::K3Exact) << c.message;
  EXPECT_EQ(c.fingerprint, text::kK3TemplateFingerprint);
}

TEST(K3Template, UsedOnlyWhenTheCheckpointHasNone) {
  TempDir tmp("tmpl");
  fs::copy_file(data_path("convert/k3-synth.tiktoken"), tmp.path / "tiktoken.model");
  nlohmann::json specials;
  std::ifstream(data_path("convert/k3-synth-specials.json")) >> specials;
  nlohmann::json added = nlohmann::json::object();
  for (auto it = specials.begin(); it != specials.end(); ++it)
    added[it.key()] = {{"content", it.value()}, {"special", true}};
  std::ofstream(tmp.str("tokenizer_config.json")) << nlohmann::json({{"added_tokens_decoder", added}}).dump();
  tools::HfTokenizerInput in;
  in.dir = tmp.str();
  in.vocab_size = 8192;

  tools::HfTokenizerResult none = tools::hf_tokenizer_kvs(in);
  EXPECT_TRUE(none.has_template);
  EXPECT_TRUE(none.builtin_template);
  EXPECT_EQ(template_kv(none), std::string(tools::kimi_k3_chat_template()));

  std::ofstream(tmp.str("chat_template.jinja")) << "{{ messages }}";
  tools::HfTokenizerResult own = tools::hf_tokenizer_kvs(in);
  EXPECT_FALSE(own.builtin_template);
  EXPECT_EQ(template_kv(own), "{{ messages }}");
}

}  // namespace
}  // namespace k3::test
