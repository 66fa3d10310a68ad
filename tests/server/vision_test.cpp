// Images through k3 serve: k3-tiny (its vocabulary has the media tokens) with the synthetic vt-a
// tower (it projects into k3-tiny's 256-wide embedding; its answers mean nothing, the plumbing
// is what is checked): data URLs in chat requests, the prompt layout, the prompt cache keyed by
// image content, the embedding cache, /props and /v1/models, and the 400s.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "image/data_url.h"
#include "server/server_test_util.h"
#include "vision/embedding_cache.h"
#include "vision/tower.h"

namespace k3::server::test {
namespace {

const std::string kVision = std::string(K3_TEST_DATA_DIR) + "/vision/";

std::shared_ptr<model::Model> tiny() {
  static std::shared_ptr<model::Model> m =
      model::Model::load(std::string(K3_MODELS_DIR) + "/k3-tiny/k3-tiny-Q8_0.gguf");
  return m;
}

std::string data_url(const std::string& png) {
  std::ifstream f(kVision + png, std::ios::binary);
  const std::string b(std::istreambuf_iterator<char>(f), {});
  return "data:image/png;base64," +
         image::encode_base64({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
}

Json image_chat(const std::string& url, const std::string& question = "What colour is the circle?") {
  Json parts = Json::array();
  if (!url.empty()) parts.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
  parts.push_back({{"type", "text"}, {"text", question}});
  return Json{{"messages", Json::array({Json{{"role", "user"}, {"content", parts}}})},
              {"max_tokens", 2},
              {"temperature", 0},
              {"user", "vision-test"}};
}

struct VisionServer {
  std::shared_ptr<vision::EmbeddingCache> cache;
  std::unique_ptr<TestServer> s;
  explicit VisionServer(bool with_tower = true) {
    ServerOptions o = default_options();
    o.sched.n_slots = 1;
    o.model_alias = "k3-tiny";
    if (with_tower) {
      cache = std::make_shared<vision::EmbeddingCache>(vision::Tower::open(kVision + "mmproj-vt-a.gguf"),
                                                       64u << 20, 1);
      o.limits.vision = cache.get();
      o.mmproj_path = "mmproj-vt-a.gguf";
      o.limits.max_images = 3;
    }
    s = std::make_unique<TestServer>(tiny(), text::Tokenizer::from_gguf(tiny()->gguf()), o);
  }
};

TEST(ServerVision, AnImageTakesMediaBeginItsRowsAndMediaEnd) {
  VisionServer v;
  auto [st, j] = v.s->post("/v1/chat/completions", image_chat(data_url("sq56.png")));
  ASSERT_EQ(st, 200) << j.dump();
  auto [st2, j2] = v.s->post("/v1/chat/completions", image_chat(""));
  ASSERT_EQ(st2, 200) << j2.dump();
  // sq56 through vt-a: 56×56 → 4×4 patches → 2×2 = 4 tokens, plus <|media_begin|> and <|media_end|>.
  EXPECT_EQ(j["usage"]["prompt_tokens"].get<int64_t>() - j2["usage"]["prompt_tokens"].get<int64_t>(), 6);
  EXPECT_EQ(v.cache->misses(), 1u);
}

TEST(ServerVision, TheSamePictureAgainReusesThePromptAndTheEmbedding) {
  VisionServer v;
  const Json req = image_chat(data_url("big300x200.png"));
  auto [st, j] = v.s->post("/v1/chat/completions", req);
  ASSERT_EQ(st, 200) << j.dump();
  auto [st2, j2] = v.s->post("/v1/chat/completions", req);
  ASSERT_EQ(st2, 200) << j2.dump();
  // 300×200 → 12 image tokens; the history snapshot lies past them.
  EXPECT_GT(j2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 14);
  EXPECT_EQ(v.cache->misses(), 1u);
  EXPECT_EQ(v.cache->hits(), 1u);
  // Another picture of the same size is another prompt: the cache stops before its rows.
  const Json other = image_chat(data_url("sq96.png"));
  auto [st3, j3] = v.s->post("/v1/chat/completions", other);
  ASSERT_EQ(st3, 200) << j3.dump();
  EXPECT_LT(j3["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 12);
}

TEST(ServerVision, StreamingWithAnImage) {
  VisionServer v;
  Json req = image_chat(data_url("wide100x60.png"));
  req["stream"] = true;
  auto [st, body] = v.s->post_raw("/v1/chat/completions", req);
  ASSERT_EQ(st, 200) << body;
  const auto ev = sse_events(body);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back(), "[DONE]");
}

TEST(ServerVision, PropsAndModelsSayTheModelSees) {
  VisionServer v;
  auto c = v.s->client();
  auto props = Json::parse(c->Get("/props")->body);
  EXPECT_EQ(props["modalities"]["vision"], true);
  auto models = Json::parse(c->Get("/v1/models")->body);
  const Json& caps = models["data"][0]["capabilities"];
  EXPECT_NE(std::find(caps.begin(), caps.end(), "multimodal"), caps.end());
  EXPECT_EQ(models["data"][0]["meta"]["vision"]["mmproj"], "mmproj-vt-a.gguf");
  VisionServer blind(false);
  EXPECT_EQ(Json::parse(blind.s->client()->Get("/props")->body)["modalities"]["vision"], false);
}

void expect_400(const VisionServer& v, const Json& req, const std::string& says) {
  auto [st, j] = v.s->post("/v1/chat/completions", req);
  EXPECT_EQ(st, 400) << j.dump();
  EXPECT_NE(j["error"]["message"].get<std::string>().find(says), std::string::npos) << j.dump();
}

TEST(ServerVision, BadImagesAre400sNamingThePart) {
  VisionServer v;
  expect_400(v, image_chat("https://example.com/cat.png"), "only data: URLs are accepted");
  expect_400(v, image_chat("data:image/png;base64,@@@@"), "messages[0].content[0]");
  expect_400(v,
             image_chat("data:image/png;base64," +
                        image::encode_base64({reinterpret_cast<const uint8_t*>("not an image at all"), 19})),
             "image:");
  const std::string png = data_url("sq56.png");
  expect_400(v, image_chat(png.substr(0, png.size() / 2) + "===="), "messages[0].content[0]");
  Json many = image_chat(png);
  for (int i = 0; i < 3; ++i)
    many["messages"][0]["content"].insert(many["messages"][0]["content"].begin(),
                                          many["messages"][0]["content"][0]);
  expect_400(v, many, "at most 3 images");
  Json not_string = image_chat(png);
  not_string["messages"][0]["content"][0]["image_url"]["url"] = 7;
  expect_400(v, not_string, "must be a string");
  VisionServer blind(false);
  expect_400(blind, image_chat(png), "does not see images");
  // The server still answers after all of them.
  auto [st, j] = v.s->post("/v1/chat/completions", image_chat(png));
  EXPECT_EQ(st, 200) << j.dump();
}

// A text part that spells the placeholder is text, not an image.
TEST(ServerVision, ThePlaceholderTypedAsTextIsText) {
  VisionServer v;
  auto [st, j] =
      v.s->post("/v1/chat/completions", image_chat("", "<|kimi_image_placeholder|> what is this?"));
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(v.cache->misses(), 0u);
}

}  // namespace
}  // namespace k3::server::test
