// reap statistics and selection: routing counts agree with the independent imatrix coverage
// collector; doubling one expert's down projection doubles exactly its REAP score in that
// layer and nothing before it (the score is router weight × output norm); experts a router
// bias shuts out score 0, are the ones pruned, and the pruned model then reproduces the
// original's logits; chunking, max_tokens, tie-breaking and seeded random selection; chat
// calibration tokenizes exactly like the rendered prompt.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "model/model.h"
#include "tools/reap/reap_test_util.h"
#include "runtime/engine.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "tools/imatrix/imatrix.h"
#include "tools/reap/reap.h"
#include "tools/imatrix/chat_corpus.h"

using namespace k3;
using reap_test::data;
using reap_test::Scratch;

namespace {

tools::ReapCalibResult calibrate(const std::string& path, const std::vector<int32_t>& toks, int64_t n_ctx,
                                 int64_t max_tokens = -1) {
  auto m = model::Model::load(path);
  tools::ReapCalibOptions o;
  o.n_ctx = n_ctx;
  o.n_threads = 2;
  o.max_tokens = max_tokens;
  return tools::collect_reap_saliency(m, tools::chunk_calibration(toks, n_ctx), o);
}

}  // namespace

TEST(ReapSaliency, CountsMatchImatrixCoverage) {
  const auto toks = reap_test::golden_tokens("small-k3mix");  // 48 tokens
  const std::string path = data("golden/small-k3mix.gguf");
  const tools::ReapCalibResult r = calibrate(path, toks, 16);
  EXPECT_EQ(r.n_tokens, 48);
  EXPECT_EQ(r.n_sequences, 3);

  tools::ImatrixOptions io;
  io.n_ctx = 16;
  io.n_threads = 2;
  const tools::ImatrixResult im = tools::collect_imatrix(model::Model::load(path), toks, io);
  ASSERT_EQ(im.coverage.size(), r.layers.size());
  for (size_t i = 0; i < r.layers.size(); ++i) {
    EXPECT_EQ(r.layers[i].layer, im.coverage[i].layer);
    EXPECT_EQ(r.layers[i].count, im.coverage[i].tokens) << "layer " << r.layers[i].layer;
    int64_t sum = 0;
    for (size_t e = 0; e < r.layers[i].count.size(); ++e) {
      sum += r.layers[i].count[e];
      // Sigmoid scores, normalised over 3 picks: every weight is in (0, 1].
      if (r.layers[i].count[e] > 0) {
        EXPECT_GT(r.layers[i].mean_weight(e), 0.0);
        EXPECT_LE(r.layers[i].mean_weight(e), 1.0);
        EXPECT_GT(r.layers[i].reap(e), 0.0);
      }
    }
    EXPECT_EQ(sum, 48 * 3);  // every token reaches expert_used_count experts
  }
  // max_tokens cuts the run.
  const tools::ReapCalibResult cut = calibrate(path, toks, 16, 20);
  EXPECT_EQ(cut.n_tokens, 20);
  EXPECT_EQ(cut.n_sequences, 2);
  int64_t sum = 0;
  for (int64_t c : cut.layers[0].count) sum += c;
  EXPECT_EQ(sum, 20 * 3);
}

TEST(ReapSaliency, DoublingAnExpertOutputDoublesItsScore) {
  // tiny10-base stores experts as F32, so ×2 is exact and so is every downstream product.
  Scratch s("double");
  const std::string src = data("golden/tiny10-base.gguf");
  const auto toks = reap_test::golden_tokens("tiny10-base");
  const tools::ReapCalibResult base = calibrate(src, toks, 48);
  const uint32_t L = 5;
  const tools::LayerSaliency* bl = nullptr;
  for (const auto& l : base.layers)
    if (l.layer == L) bl = &l;
  ASSERT_NE(bl, nullptr);
  const auto j =
      static_cast<size_t>(std::max_element(bl->count.begin(), bl->count.end()) - bl->count.begin());
  ASSERT_GT(bl->count[j], 0);

  const std::string name = "blk." + std::to_string(L) + ".ffn_down_exps.weight";
  reap_test::write_edited(src, s / "x2.gguf", {}, [&](const std::string& n, std::vector<uint8_t>& bytes) {
    if (n != name) return;
    const size_t per = bytes.size() / 8 / sizeof(float);
    auto* f = reinterpret_cast<float*>(bytes.data()) + j * per;
    for (size_t i = 0; i < per; ++i) f[i] *= 2.0f;
  });
  const tools::ReapCalibResult mod = calibrate(s / "x2.gguf", toks, 48);
  ASSERT_EQ(mod.layers.size(), base.layers.size());
  for (size_t i = 0; i < base.layers.size(); ++i) {
    const auto& a = base.layers[i];
    const auto& b = mod.layers[i];
    if (a.layer > L) continue;  // later layers see a different input
    EXPECT_EQ(a.count, b.count) << "layer " << a.layer;
    for (size_t e = 0; e < a.count.size(); ++e) {
      EXPECT_EQ(a.weight_sum[e], b.weight_sum[e]) << "layer " << a.layer << " expert " << e;
      const double want = (a.layer == L && e == j) ? 2.0 * a.reap(e) : a.reap(e);
      EXPECT_DOUBLE_EQ(b.reap(e), want) << "layer " << a.layer << " expert " << e;
    }
  }
}

TEST(ReapSaliency, ShutOutExpertsArePrunedWithoutChangingTheModel) {
  // Router bias −100 for experts {0, 2, 5, 7} in every MoE layer: sigmoid scores are in
  // (0, 1), so they never make the top 3. Pruning them must not change a single logit.
  Scratch s("shut");
  const std::string src = data("golden/small-q8_0.gguf");
  const std::set<int> shut = {0, 2, 5, 7};
  reap_test::write_edited(src, s / "biased.gguf", {}, [&](const std::string& n, std::vector<uint8_t>& bytes) {
    if (n.find("exp_probs_b.bias") == std::string::npos) return;
    auto* f = reinterpret_cast<float*>(bytes.data());
    for (int e : shut) f[e] = -100.0f;
  });
  const auto toks = reap_test::golden_tokens("small-q8_0");
  auto m = model::Model::load(s / "biased.gguf");
  for (tools::ReapMethod method : {tools::ReapMethod::Reap, tools::ReapMethod::Freq}) {
    tools::ReapOptions o;
    o.method = method;
    o.n_keep = 4;
    o.calib.n_ctx = 24;
    o.calib.n_threads = 2;
    o.output = s / "pruned.gguf";
    o.scores_out = s / "scores.json";
    const tools::ReapResult r = tools::run_reap(m, tools::chunk_calibration(toks, 24), o);
    ASSERT_EQ(r.plan.layers.size(), 5u);
    for (const auto& lp : r.plan.layers) EXPECT_EQ(lp.kept, (std::vector<int32_t>{1, 3, 4, 6})) << lp.layer;
    std::ifstream jf(o.scores_out);
    const auto j = nlohmann::json::parse(jf);
    EXPECT_EQ(j["method"], tools::reap_method_name(method));
    EXPECT_EQ(j["n_keep"], 4);
    EXPECT_EQ(j["calibration_tokens"], 48);
    for (const auto& l : j["layers"]) {
      EXPECT_EQ(l["never_routed"], 4);
      EXPECT_EQ(l["kept"], nlohmann::json({1, 3, 4, 6}));
      EXPECT_DOUBLE_EQ(l["kept_token_share"].get<double>(), 1.0);
      for (int e : shut) EXPECT_EQ(l["count"][e], 0);
    }
    const auto full = reap_test::all_logits(s / "biased.gguf", toks);
    const auto pruned = reap_test::all_logits(s / "pruned.gguf", toks);
    ASSERT_EQ(full.size(), pruned.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < full.size(); ++i) {
      worst = std::max(worst, std::abs(double(full[i]) - pruned[i]));
      scale = std::max(scale, std::abs(double(full[i])));
    }
    EXPECT_LE(worst, 1e-6 * scale) << "method " << tools::reap_method_name(method);
  }
}

TEST(ReapSelection, TiesChunksAndSeededRandom) {
  tools::LayerSaliency s;
  s.layer = 3;
  s.count = {5, 5, 0, 9, 0, 1};
  s.weight_sum = {1, 1, 0, 1, 0, 1};
  s.reap_sum = {10, 10, 0, 9, 0, 4};  // reap = 2, 2, 0, 1, 0, 4
  EXPECT_EQ(tools::select_experts(tools::ReapMethod::Freq, s, 3, 0), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(tools::select_experts(tools::ReapMethod::Reap, s, 2, 0), (std::vector<int32_t>{0, 5}));
  EXPECT_EQ(tools::select_experts(tools::ReapMethod::Reap, s, 5, 0), (std::vector<int32_t>{0, 1, 2, 3, 5}));

  // Random: a seeded subset, reproducible, different across seeds and layers, and over many
  // seeds every expert is kept about keep/X of the time.
  const auto a = tools::select_experts(tools::ReapMethod::Random, s, 3, 42);
  EXPECT_EQ(a, tools::select_experts(tools::ReapMethod::Random, s, 3, 42));
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<int32_t>(a.begin(), a.end()).size(), 3u);
  std::vector<int> hits(6, 0);
  std::set<std::vector<int32_t>> distinct;
  for (uint64_t seed = 0; seed < 600; ++seed) {
    const auto k = tools::select_experts(tools::ReapMethod::Random, s, 3, seed);
    distinct.insert(k);
    for (int32_t e : k) hits[size_t(e)] += 1;
  }
  EXPECT_EQ(distinct.size(), 20u);  // C(6,3): every subset appears
  for (int h : hits) EXPECT_NEAR(h, 300, 60);
  tools::LayerSaliency s4 = s;
  s4.layer = 4;
  int differ = 0;
  for (uint64_t seed = 0; seed < 20; ++seed)
    differ += tools::select_experts(tools::ReapMethod::Random, s, 3, seed) !=
              tools::select_experts(tools::ReapMethod::Random, s4, 3, seed);
  EXPECT_GT(differ, 10);

  const std::vector<int32_t> t = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(tools::chunk_calibration(t, 4),
            (std::vector<std::vector<int32_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(tools::chunk_calibration(t, 4, 99, 3),
            (std::vector<std::vector<int32_t>>{{99, 1, 2, 3}, {99, 5, 6, 7}}));
  EXPECT_THROW(tools::parse_reap_method("best"), Error);
}

TEST(ReapChatCalibration, RendersWithTheTemplateAndTokenizesLikeThePrompt) {
  Scratch s("chat");
  auto tok = text::Tokenizer::from_gguf_path(data("golden/small-q8_0.gguf"));
  const std::string a =
      R"([{"role":"user","content":"Hi there"},{"role":"assistant","content":"Hello! <|open|> is text."}])";
  const std::string b =
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"2+2?"},)"
      R"({"role":"assistant","content":"4"}],"chat_template_kwargs":{"thinking":false}})";
  {
    std::ofstream f(s / "calib.jsonl");
    f << a << "\n\n" << b << "\n";
  }
  const tools::ChatCalibration cc = tools::load_chat_calibration(*tok, s / "calib.jsonl", 4096);
  ASSERT_EQ(cc.sequences.size(), 2u);
  EXPECT_EQ(cc.n_truncated, 0);
  // Reference: render the prompt string and tokenize it with special tokens on; the
  // vocabulary has no merges, so only the markers differ — and the user's literal
  // "<|open|>" must stay bytes in ours.
  auto expect_same = [&](const std::vector<int32_t>& got, const text::ChatTemplateInput& in,
                         bool has_literal) {
    const std::string prompt = text::render_chat(in);
    std::vector<int32_t> want = tok->encode(prompt, true);
    const int32_t open = tok->find("<|open|>");
    ASSERT_GE(open, 0);
    // Our sequence has exactly one fewer <|open|> control token per literal in user text.
    EXPECT_EQ(tok->decode(got), prompt);
    int64_t n_open_got = std::count(got.begin(), got.end(), open);
    int64_t n_open_want = std::count(want.begin(), want.end(), open);
    const size_t literal = prompt.find("<|open|> is text");
    EXPECT_EQ(literal != std::string::npos, has_literal);
    EXPECT_EQ(n_open_want - n_open_got, literal == std::string::npos ? 0 : 1);
    if (literal == std::string::npos) { EXPECT_EQ(got, want); }
  };
  text::ChatTemplateInput ia;
  ia.messages = text::parse_json_exact(a);
  ia.vars["add_generation_prompt"] = false;
  expect_same(cc.sequences[0], ia, true);
  expect_same(cc.sequences[1], text::chat_input_from_request(text::parse_json_exact(b), false), false);

  const tools::ChatCalibration cut = tools::load_chat_calibration(*tok, s / "calib.jsonl", 10);
  EXPECT_EQ(cut.n_truncated, 2);
  EXPECT_EQ(cut.n_tokens, 20);

  {
    std::ofstream f(s / "bad.jsonl");
    f << a << "\n"
      << R"({"role":"user"})"
      << "\n";
  }
  try {
    tools::load_chat_calibration(*tok, s / "bad.jsonl", 4096);
    ADD_FAILURE() << "bad line accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tools::load_chat_calibration(*tok, s / "none.jsonl", 4096), Error);
}
