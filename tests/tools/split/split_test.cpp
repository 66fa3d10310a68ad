// `k3 split` / `k3 merge`: standard split.* layout (docs/split.md), tensor bytes unchanged, and
// split → merge gives back the original file byte for byte.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "gguf/file.h"
#include "tools/quantize/qtool_util.h"
#include "tools/split/split.h"

using namespace k3::tools;
using k3::qtest::golden;
using k3::qtest::ScratchDir;

TEST(Split, ByTensorCountThenMergeIsByteIdentical) {
  ScratchDir dir;
  for (const char* model : {"small-q8_0.gguf", "tiny10-base.gguf", "small-k3mix.gguf"}) {
    SCOPED_TRACE(model);
    auto in = k3::gguf::GgufFile::open(golden(model));
    const size_t n = in->tensors().size();
    ShardingResult s = split_model(golden(model), dir.file("part"), {0, 50});
    const size_t shards = (n + 49) / 50;
    ASSERT_EQ(s.files.size(), shards);
    EXPECT_EQ(s.files[0], dir.file(fmt::format("part-00001-of-{:05d}.gguf", shards)));
    // Shard metadata: everything in shard 0, only split keys elsewhere.
    for (size_t i = 0; i < shards; ++i) {
      auto sh = k3::gguf::GgufFile::open(s.files[i], {.load_shards = false});
      EXPECT_EQ(sh->get_int("split.no", -1), static_cast<int64_t>(i));
      EXPECT_EQ(sh->get_int("split.count", -1), static_cast<int64_t>(shards));
      EXPECT_EQ(sh->get_int("split.tensors.count", -1), static_cast<int64_t>(n));
      EXPECT_EQ(sh->tensors().size(), std::min<size_t>(50, n - 50 * i));
      EXPECT_EQ(sh->kvs().size(), i == 0 ? in->kvs().size() + 3 : 3u);
    }
    // The set opens as one model with the same tensors.
    auto set = k3::gguf::GgufFile::open(s.files[0]);
    ASSERT_EQ(set->tensors().size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(set->tensors()[i].name, in->tensors()[i].name);
      EXPECT_EQ(std::memcmp(set->tensors()[i].data, in->tensors()[i].data, in->tensors()[i].nbytes), 0);
    }
    merge_model(s.files[0], dir.file("merged.gguf"));
    EXPECT_EQ(k3::qtest::read_bytes(dir.file("merged.gguf")), k3::qtest::read_bytes(golden(model)));
    for (const std::string& f : s.files) std::filesystem::remove(f);
  }
}

TEST(Split, BySizeKeepsEveryShardUnderTheLimit) {
  ScratchDir dir;
  const uint64_t limit = 2'000'000;
  ShardingResult s = split_model(golden("small-q8_0.gguf"), dir.file("p.gguf"), {limit, 0});
  EXPECT_GE(s.files.size(), 7u);  // 13.5 MB of tensors
  for (const std::string& f : s.files) {
    auto sh = k3::gguf::GgufFile::open(f, {.load_shards = false});
    uint64_t sum = 0;
    for (const auto& t : sh->tensors()) sum += (t.nbytes + 31) / 32 * 32;
    EXPECT_LE(sum, limit) << f;
  }
  // count_shards predicts what the writer does.
  auto in = k3::gguf::GgufFile::open(golden("small-q8_0.gguf"));
  std::vector<uint64_t> sizes;
  for (const auto& t : in->tensors()) sizes.push_back(t.nbytes);
  EXPECT_EQ(count_shards(sizes, 32, {limit, 0}), s.files.size());
  merge_model(s.files[0], dir.file("m.gguf"));
  EXPECT_EQ(k3::qtest::read_bytes(dir.file("m.gguf")), k3::qtest::read_bytes(golden("small-q8_0.gguf")));
}

TEST(Split, OneShardStillGetsSplitKeysAndName) {
  ScratchDir dir;
  ShardingResult s = split_model(golden("tiny10-base.gguf"), dir.file("one"), {0, 100000});
  ASSERT_EQ(s.files.size(), 1u);
  EXPECT_EQ(s.files[0], dir.file("one-00001-of-00001.gguf"));
  auto f = k3::gguf::GgufFile::open(s.files[0]);
  EXPECT_EQ(f->get_int("split.count", -1), 1);
  merge_model(s.files[0], dir.file("m.gguf"));
  EXPECT_EQ(k3::qtest::read_bytes(dir.file("m.gguf")), k3::qtest::read_bytes(golden("tiny10-base.gguf")));
}

TEST(Split, RejectsMissingLimitsAndBadSizes) {
  ScratchDir dir;
  EXPECT_THROW(split_model(golden("tiny10-base.gguf"), dir.file("x"), {0, 0}), k3::Error);
  EXPECT_EQ(parse_size("45G"), 45'000'000'000ull);
  EXPECT_EQ(parse_size("500M"), 500'000'000ull);
  EXPECT_EQ(parse_size("1.5GB"), 1'500'000'000ull);
  EXPECT_EQ(parse_size("4096"), 4096ull);
  EXPECT_THROW(parse_size("lots"), k3::Error);
  EXPECT_THROW(parse_size("G"), k3::Error);
  EXPECT_THROW(parse_size("0"), k3::Error);
  EXPECT_TRUE(dir.list().empty());
}

// The CLI commands end to end (when the binary is built).
TEST(Split, CommandLineRoundTrip) {
  if (!std::filesystem::exists(K3_BINARY)) GTEST_SKIP() << "k3 binary not built";
  ScratchDir dir;
  const std::string k3 = K3_BINARY;
  std::string cmd =
      k3 + " split -q " + golden("small-q8_0.gguf") + " " + dir.file("s") + " --split-max-size 5M";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ASSERT_TRUE(std::filesystem::exists(dir.file("s-00001-of-00003.gguf")));
  cmd = k3 + " merge -q " + dir.file("s-00001-of-00003.gguf") + " " + dir.file("m.gguf");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(k3::qtest::read_bytes(dir.file("m.gguf")), k3::qtest::read_bytes(golden("small-q8_0.gguf")));
  cmd = k3 + " quantize -q " + golden("small-q8_0.gguf") + " " + dir.file("q.gguf") +
        " Q8_0 --split-max-tensors 100";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(std::filesystem::exists(dir.file("q-00002-of-00002.gguf")));
  cmd = k3 + " quantize -q " + golden("small-q8_0.gguf") + " " + dir.file("bad.gguf") +
        " IQ1_M --allow-requantize 2>/dev/null";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.gguf")));
}
