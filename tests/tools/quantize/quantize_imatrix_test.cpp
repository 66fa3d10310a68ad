// Importance-matrix reader against the llama.cpp-written small-imatrix.gguf
// (tests/data/golden/README.md: 94 entries, 159 chunks of 256, dataset small-calib.txt, every
// expert routed).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "gguf/file.h"
#include "tools/quantize/qtool_util.h"
#include "tools/quantize/quantize_imatrix.h"

using namespace k3::tools;
using k3::qtest::golden;

TEST(Imatrix, LoadsTheGoldenGgufImatrix) {
  Imatrix im = load_imatrix(golden("small-imatrix.gguf"));
  EXPECT_FALSE(im.legacy);
  EXPECT_EQ(im.entries.size(), 94u);
  EXPECT_EQ(im.chunk_count, 159u);
  EXPECT_EQ(im.chunk_size, 256u);
  ASSERT_EQ(im.datasets.size(), 1u);
  EXPECT_EQ(im.datasets[0], "small-calib.txt");

  const ImatrixEntry* e = im.find("blk.1.ffn_down_exps.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->n_in, 256);
  EXPECT_EQ(e->n_mat, 8);
  EXPECT_EQ(e->values.size(), 256u * 8u);
  ASSERT_EQ(e->counts.size(), 8u);
  for (int64_t c : e->counts) EXPECT_GT(c, 0);                       // every expert was routed
  EXPECT_EQ(im.find("blk.3.attn_k_b.weight")->values.size(), 256u);  // [64, 256, 4]: ne0·ne2
  EXPECT_EQ(im.find("output.weight"), nullptr);

  // Normalisation: sum of squares / count, checked on raw tensor bytes.
  auto f = k3::gguf::GgufFile::open(golden("small-imatrix.gguf"));
  const auto* sums = f->tensor("blk.1.ffn_down_exps.weight.in_sum2");
  const auto* counts = f->tensor("blk.1.ffn_down_exps.weight.counts");
  const float* s = reinterpret_cast<const float*>(sums->data);
  const float* c = reinterpret_cast<const float*>(counts->data);
  for (int m = 0; m < 8; ++m)
    for (int i = 0; i < 256; i += 17) EXPECT_EQ(e->values[m * 256 + i], s[m * 256 + i] / c[m]);
  // Dense-layer entry: one matrix; counts are the number of activation rows (≥ 16 per call).
  const ImatrixEntry* d = im.find("blk.0.ffn_up.weight");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->n_mat, 1);
  EXPECT_GT(d->counts[0], 159 * 16);
  for (float v : d->values) EXPECT_TRUE(std::isfinite(v) && v >= 0);
}

TEST(Imatrix, LegacyFormatRoundTrip) {
  k3::qtest::ScratchDir dir;
  Imatrix im = load_imatrix(golden("small-imatrix.gguf"));
  write_legacy_imatrix(dir.file("im.dat"), im);
  Imatrix back = load_imatrix(dir.file("im.dat"));
  EXPECT_TRUE(back.legacy);
  EXPECT_EQ(back.chunk_count, 159u);
  ASSERT_EQ(back.datasets.size(), 1u);
  EXPECT_EQ(back.datasets[0], "small-calib.txt");
  ASSERT_EQ(back.entries.size(), im.entries.size());
  for (const auto& [name, e] : im.entries) {
    const ImatrixEntry* b = back.find(name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(b->values, e.values) << name;
  }
}

TEST(Imatrix, RejectsFilesThatAreNotImatrices) {
  try {
    load_imatrix(golden("small-q8_0.gguf"));
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an imatrix"), std::string::npos) << e.what();
  }
  k3::qtest::ScratchDir dir;
  {
    std::ofstream f(dir.file("bad.dat"), std::ios::binary);
    int32_t n = 3, len = 1000;
    f.write(reinterpret_cast<const char*>(&n), 4);
    f.write(reinterpret_cast<const char*>(&len), 4);
  }
  EXPECT_THROW(load_imatrix(dir.file("bad.dat")), k3::Error);
  EXPECT_THROW(load_imatrix(dir.file("missing.dat")), k3::Error);
}
