// The vision tower against the reference: four synthetic kimik3 towers (three shapes; one also
// in F16) × six images of different sizes and aspect ratios (tests/data/vision, made by
// scripts/gen_vision_golden.sh). Each case must give llama.cpp's token count and match its
// mtmd embeddings to NMSE ≤ max(2 × NMSE(llama vs float64), 1e-9), and sit at the float64
// evaluation's level itself (≤ 1e-10: everything but the float32 storage is exact here).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "image/image.h"
#include "vision/encode.h"
#include "vision/tower.h"

namespace k3::vision {
namespace {

const std::string kDir = std::string(K3_TEST_DATA_DIR) + "/vision/";

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  std::vector<char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
  return v;
}

double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return num / den;
}

RgbImage load(const std::string& name) {
  image::Rgb8Image img = image::decode_file(kDir + name);
  return {static_cast<int64_t>(img.width), static_cast<int64_t>(img.height), std::move(img.rgb)};
}

nlohmann::json manifest() {
  std::ifstream f(kDir + "manifest.json");
  return nlohmann::json::parse(f);
}

TEST(VisionGolden, EveryTowerAndImageMatchesTheReference) {
  ThreadPool pool(2);
  const nlohmann::json m = manifest();
  ASSERT_GE(m["cases"].size(), 24u);
  std::set<std::string> towers;
  for (const auto& c : m["cases"]) {
    const std::string tower = c["tower"], image = c["image"];
    towers.insert(tower);
    SCOPED_TRACE(tower + " " + image);
    const auto t = Tower::open(kDir + tower);
    const RgbImage img = load(image);
    const ImageEmbedding e = embed_image(*t, img.view(), &pool);
    ASSERT_EQ(e.n_tokens, c["tokens"].get<int64_t>());
    ASSERT_EQ(e.n_tokens, image_tokens(*t, {img.width, img.height}));
    ASSERT_EQ(e.n_embd, c["n_embd"].get<int64_t>());
    const std::string stem =
        kDir + tower.substr(7, tower.size() - 12) + "." + image.substr(0, image.size() - 4);
    const std::vector<float> llama = read_f32(stem + ".llama.f32"), ref64 = read_f32(stem + ".ref64.f32");
    ASSERT_EQ(llama.size(), e.data.size());
    const double bound = c["bound"].get<double>();
    EXPECT_LE(nmse(e.data, llama), bound);
    EXPECT_LE(nmse(e.data, ref64), 1e-10);
  }
  EXPECT_EQ(towers.size(), 4u);
}

// The bound is tight enough to see one row of pixels one level off: the preprocessing must reproduce
// the reference's 8-bit resize exactly (why preprocess.cpp is compiled without contraction).
TEST(VisionGolden, OneRowOneLevelOffFailsTheBound) {
  ThreadPool pool(2);
  const auto t = Tower::open(kDir + "mmproj-vt-a.gguf");
  RgbImage img = load("sq56.png");  // 56×56: no resize, the pixels go straight in
  const std::vector<float> llama = read_f32(kDir + "vt-a.sq56.llama.f32");
  double bound = 0;
  const nlohmann::json m = manifest();
  for (const auto& c : m["cases"])
    if (c["tower"] == "mmproj-vt-a.gguf" && c["image"] == "sq56.png") bound = c["bound"];
  ASSERT_GT(bound, 0);
  EXPECT_LE(nmse(embed_image(*t, img.view(), &pool).data, llama), bound);
  for (int64_t i = 0; i < 56 * 3; ++i) img.rgb[20 * 56 * 3 + i] ^= 1;  // one row, one level
  EXPECT_GT(nmse(embed_image(*t, img.view(), &pool).data, llama), bound);
}

}  // namespace
}  // namespace k3::vision
