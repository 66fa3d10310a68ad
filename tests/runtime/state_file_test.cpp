// tests/runtime/state_file_test: a sequence state saved to a file and restored into a fresh
// engine continues exactly as the engine that computed it: the same logits, byte for byte,
// and the same greedy and seeded tokens (F32 and F16 cache, a golden model and k3-tiny). A
// file of another model, cache type or version, truncated or with a flipped byte is refused
// with its reason, never restored.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/error.h"
#include "model/golden_util.h"
#include "model/identity.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "common/temp_dir.h"
#include "runtime/state_file.h"

namespace k3::test {
namespace {

std::shared_ptr<const model::Model> tiny() {
  static auto m = model::Model::load(std::string(K3_MODELS_DIR) + "/k3-tiny/k3-tiny-Q8_0.gguf");
  return m;
}

runtime::StateTarget target_of(const runtime::Engine& e) {
  return {model::model_identity(e.model()), &e.model().hparams(), e.options().cache_type, e.n_ctx()};
}

std::vector<float> feed(runtime::Engine& e, std::span<const int32_t> toks) {
  std::vector<runtime::BatchToken> b;
  for (size_t i = 0; i < toks.size(); ++i) b.push_back({toks[i], 0, -1, i + 1 == toks.size()});
  return e.decode(b);
}

// Decodes `n` tokens from `logits` with the sampler `sp`; returns the tokens and every logit
// row seen.
std::pair<std::vector<int32_t>, std::vector<float>> generate(runtime::Engine& e, std::vector<float> logits,
                                                             const runtime::SamplerParams& sp, int n) {
  runtime::Sampler s(sp);
  std::vector<int32_t> out;
  std::vector<float> all = logits;
  for (int i = 0; i < n; ++i) {
    out.push_back(s.sample(logits));
    logits = feed(e, std::span<const int32_t>(&out.back(), 1));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return {out, all};
}

void check_round_trip(std::shared_ptr<const model::Model> m, std::vector<int32_t> toks,
                      runtime::CacheType type, const runtime::SamplerParams& sp) {
  runtime::EngineOptions eo;
  eo.n_threads = 2;
  eo.n_ctx = 256;
  eo.cache_type = type;
  const size_t split = toks.size() * 2 / 3;
  std::span<const int32_t> head(toks.data(), split), tail(toks.data() + split, toks.size() - split);
  runtime::Engine a(m, eo);
  feed(a, head);
  TempDir dir;
  const std::string path = dir.path + "/s.k3state";
  const uint64_t n = runtime::write_state_file(path, target_of(a), *a.seq_state(0), head, "alice");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), n);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "a conversation's state is private";
  auto [ta, la] = generate(a, feed(a, tail), sp, 8);

  runtime::Engine b(m, eo);  // as a restarted process would
  runtime::SavedState saved = runtime::read_state_file(path, target_of(b));
  EXPECT_EQ(saved.info.owner, "alice");
  ASSERT_EQ(saved.tokens, std::vector<int32_t>(head.begin(), head.end()));
  b.seq_set(0, std::move(saved.state));
  EXPECT_EQ(b.seq_pos(0), static_cast<int64_t>(split));
  auto [tb, lb] = generate(b, feed(b, tail), sp, 8);
  EXPECT_EQ(ta, tb);
  ASSERT_EQ(la.size(), lb.size());
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0)
      << "logits differ after a restore";
}

runtime::SamplerParams greedy() {
  runtime::SamplerParams sp;
  sp.temperature = 0;
  return sp;
}

runtime::SamplerParams seeded() {
  runtime::SamplerParams sp;
  sp.temperature = 0.9f;
  sp.seed = 1234;
  return sp;
}

TEST(StateFile, GoldenRestoresExactlyF32Greedy) {
  check_round_trip(golden_model("tiny10-base"), golden_tokens("tiny10-base"), runtime::CacheType::F32,
                   greedy());
}
TEST(StateFile, GoldenRestoresExactlyF16Seeded) {
  check_round_trip(golden_model("tiny10-base"), golden_tokens("tiny10-base"), runtime::CacheType::F16,
                   seeded());
}

std::vector<int32_t> tiny_tokens() {
  std::vector<int32_t> t;
  for (int i = 0; i < 60; ++i) t.push_back(100 + (i * 37) % 900);
  return t;
}

TEST(StateFile, K3TinyRestoresExactlyF16Greedy) {
  check_round_trip(tiny(), tiny_tokens(), runtime::CacheType::F16, greedy());
}
TEST(StateFile, K3TinyRestoresExactlyF32Seeded) {
  check_round_trip(tiny(), tiny_tokens(), runtime::CacheType::F32, seeded());
}

// One saved file, and the ways it can be wrong.
struct Saved {
  TempDir dir;
  std::string path;
  std::shared_ptr<const model::Model> m = golden_model("tiny10-base");
  runtime::EngineOptions eo;
  std::unique_ptr<runtime::Engine> e;
  Saved() {
    eo.n_threads = 1;
    eo.n_ctx = 128;
    e = std::make_unique<runtime::Engine>(m, eo);
    const auto toks = golden_tokens("tiny10-base");
    feed(*e, toks);
    path = dir.path + "/s.k3state";
    runtime::write_state_file(path, target_of(*e), *e->seq_state(0), toks, "");
  }
  std::string bytes() const {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  void put(const std::string& b) const { std::ofstream(path, std::ios::binary | std::ios::trunc) << b; }
  std::string refusal(runtime::StateTarget t) const {
    try {
      runtime::read_state_file(path, t);
    } catch (const Error& err) { return err.what(); }
    return "";
  }
  std::string refusal() const { return refusal(target_of(*e)); }
};

TEST(StateFile, RefusesEveryBrokenFile) {
  Saved s;
  EXPECT_EQ(s.refusal(), "") << "the intact file reads";
  const std::string good = s.bytes();
  s.put(good.substr(0, good.size() - 100));
  EXPECT_NE(s.refusal().find("truncated"), std::string::npos) << s.refusal();
  s.put(good.substr(0, 60));
  EXPECT_NE(s.refusal().find("truncated"), std::string::npos) << s.refusal();
  std::string flip = good;
  flip[flip.size() / 2] ^= 0x10;  // inside the state
  s.put(flip);
  EXPECT_NE(s.refusal().find("corrupt state"), std::string::npos) << s.refusal();
  flip = good;
  flip[130] ^= 0x01;  // inside the token list (the owner is empty)
  s.put(flip);
  EXPECT_NE(s.refusal().find("corrupt token list"), std::string::npos) << s.refusal();
  flip = good;
  flip[20] ^= 0x01;  // inside the header
  s.put(flip);
  EXPECT_NE(s.refusal().find("corrupt header"), std::string::npos) << s.refusal();
  flip = good;
  flip[8] = 7;  // another format version
  s.put(flip);
  EXPECT_NE(s.refusal().find("version 7"), std::string::npos) << s.refusal();
  s.put(
      "GGUF not a state file at all, but long enough to hold a header of 128 bytes......................"
      "..........................................................");
  EXPECT_NE(s.refusal().find("not a k3 state file"), std::string::npos) << s.refusal();
}

TEST(StateFile, RefusesAnotherModelCacheTypeOrContext) {
  Saved s;
  runtime::StateTarget t = target_of(*s.e);
  runtime::Engine other(golden_model("tiny10-softplus"), s.eo);  // same shapes, other weights
  EXPECT_NE(model::model_identity(other.model()), t.model_id);
  EXPECT_NE(s.refusal(target_of(other)).find("another model"), std::string::npos);
  runtime::StateTarget f16 = t;
  f16.cache_type = runtime::CacheType::F16;
  EXPECT_NE(s.refusal(f16).find("cache type"), std::string::npos);
  runtime::StateTarget small = t;
  small.n_ctx = 10;
  EXPECT_NE(s.refusal(small).find("more than the context"), std::string::npos);
}

}  // namespace
}  // namespace k3::test
