// GGUF writer: byte-identical round trips of every golden file and of hand-made images,
// sharding by count and size (re-read and merged back to the original bytes), split-set
// validation on open, custom alignment, and atomicity on failure.
#include "gguf/writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/gguf_test_util.h"

namespace k3::gguf {
namespace {

using testing::Bytes;
using testing::ScratchDir;

std::vector<TensorSpec> specs_of(const GgufFile& f) {
  std::vector<TensorSpec> out;
  for (const TensorInfo& t : f.tensors()) {
    TensorSpec s;
    s.name = t.name;
    s.ne = t.ne;
    s.type = t.type;
    s.data = t.data;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::pair<std::string, Value>> kvs_without_split(const GgufFile& f) {
  std::vector<std::pair<std::string, Value>> out;
  for (const auto& kv : f.kvs())
    if (kv.first.rfind("split.", 0) != 0) out.push_back(kv);
  return out;
}

void expect_same_tensors(const GgufFile& a, const GgufFile& b) {
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const TensorInfo& x = a.tensors()[i];
    const TensorInfo& y = b.tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.ne, y.ne);
    EXPECT_EQ(x.type, y.type);
    ASSERT_EQ(x.nbytes, y.nbytes);
    EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes), 0) << x.name;
  }
}

TEST(GgufWriter, SpecWorkedExampleBytes) {
  // The exact bytes of the GGUF worked example (one string KV, one INT32 array KV, one F32
  // tensor [3, 2], data at 32-byte alignment), as gguf-py writes them and ggml accepts them.
  Bytes b;
  b.raw("GGUF", 4).u32(3).u64(1).u64(2);
  b.str("general.architecture").u32(8).str("llama");
  b.str("demo.arr").u32(9).u32(5).u64(3).u32(1).u32(2).u32(3);
  b.str("t").u32(2).u64(3).u64(2).u32(0).u64(0);
  b.pad_to(32);
  for (int i = 0; i < 6; ++i) b.f32(static_cast<float>(i));
  b.pad_to(32);

  ScratchDir dir;
  std::vector<float> data = {0, 1, 2, 3, 4, 5};
  TensorSpec t;
  t.name = "t";
  t.ne = {3, 2};
  t.type = quant::Type::F32;
  t.data = reinterpret_cast<const uint8_t*>(data.data());
  auto files = write_gguf(
      dir.file("ex.gguf"),
      {{"general.architecture", Value::string("llama")}, {"demo.arr", Value::array_i32({1, 2, 3})}}, {t});
  ASSERT_EQ(files, std::vector<std::string>{dir.file("ex.gguf")});
  EXPECT_EQ(testing::read_bytes(dir.file("ex.gguf")), b.bytes());
}

TEST(GgufWriter, HandMadeAllTypesRoundTrip) {
  Bytes b;
  b.raw("GGUF", 4).u32(3).u64(1).u64(8);
  b.str("u8").u32(0).u8(200);
  b.str("odd_bool").u32(7).u8(7);
  b.str("f32nan").u32(6).u32(0x7fc00123u);  // NaN payload must survive
  b.str("i64").u32(11).u64(static_cast<uint64_t>(-9));
  b.str("f64").u32(12).f64(0.1);
  b.str("empty").u32(9).u32(10).u64(0);
  b.str("strs").u32(9).u32(8).u64(2).str("a").str("bc");
  b.str("nested").u32(9).u32(9).u64(2).u32(4).u64(1).u32(9).u32(9).u64(1).u32(1).u64(1).u8(0xff);
  b.str("q").u32(1).u64(64).u32(8).u64(0);  // Q8_0 [64]: 68 bytes
  b.pad_to(32);
  for (int i = 0; i < 68; ++i) b.u8(static_cast<uint8_t>(i * 7));
  b.pad_to(32);
  auto f = GgufFile::open_memory(b.bytes().data(), b.size(), "hand.gguf");
  ScratchDir dir;
  write_gguf(dir.file("out.gguf"), f->kvs(), specs_of(*f));
  EXPECT_EQ(testing::read_bytes(dir.file("out.gguf")), b.bytes());

  // A v2 input is written as v3 and otherwise identical.
  Bytes v2 = b;
  v2.bytes()[4] = 2;
  auto f2 = GgufFile::open_memory(v2.bytes().data(), v2.size(), "v2.gguf");
  EXPECT_EQ(f2->version(), 2u);
  write_gguf(dir.file("out2.gguf"), f2->kvs(), specs_of(*f2));
  EXPECT_EQ(testing::read_bytes(dir.file("out2.gguf")), b.bytes());
}

TEST(GgufWriter, GoldenFilesRoundTripByteIdentical) {
  ScratchDir dir;
  for (const char* name : {"archtest-s1.gguf", "small-imatrix.gguf", "small-k3mix.gguf", "small-mxfp4.gguf",
                           "small-q2k.gguf", "small-q8_0.gguf", "tiny10-base.gguf", "tiny10-noqlora.gguf",
                           "tiny10-softplus.gguf", "../text/k3-synth-vocab.gguf"}) {
    std::string src = testing::golden(name);
    auto f = GgufFile::open(src);
    std::string out = dir.file("rt.gguf");
    write_gguf(out, f->kvs(), specs_of(*f));
    EXPECT_TRUE(testing::read_bytes(out) == testing::read_bytes(src)) << name;
    std::filesystem::remove(out);
  }
}

// Old gguf-py vocab files without tensors stop right after the metadata; the writer always
// pads the metadata to the alignment (as ggml's writer does), so only that padding differs.
TEST(GgufWriter, TensorlessFileWithoutTrailingPadding) {
  ScratchDir dir;
  std::string src = std::string(K3_TEST_DATA_DIR) + "/text/ggml-vocab-gpt-2.gguf";
  auto f = GgufFile::open(src);
  ASSERT_EQ(f->tensors().size(), 0u);
  write_gguf(dir.file("v.gguf"), f->kvs(), {});
  std::vector<uint8_t> a = testing::read_bytes(src), b = testing::read_bytes(dir.file("v.gguf"));
  ASSERT_EQ(a.size(), 1766807u);
  ASSERT_EQ(b.size(), 1766816u);  // next multiple of 32
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
  EXPECT_TRUE(std::all_of(b.begin() + a.size(), b.end(), [](uint8_t x) { return x == 0; }));
}

TEST(GgufWriter, ShardByTensorCountThenReadAndMerge) {
  ScratchDir dir;
  std::string src = testing::golden("small-q8_0.gguf");
  auto f = GgufFile::open(src);
  WriteOptions opt;
  opt.split.max_tensors = 50;
  auto files = write_gguf(dir.file("m.gguf"), f->kvs(), specs_of(*f), opt);
  ASSERT_EQ(files.size(), 4u);  // 160 tensors: 50 + 50 + 50 + 10
  EXPECT_EQ(files[0], dir.file("m-00001-of-00004.gguf"));
  EXPECT_EQ(files[3], dir.file("m-00004-of-00004.gguf"));
  EXPECT_EQ(dir.list().size(), 4u);  // no temporaries left behind

  auto s = GgufFile::open(files[0]);
  ASSERT_EQ(s->shards().size(), 4u);
  EXPECT_EQ(s->shards()[0].n_tensors, 50u);
  EXPECT_EQ(s->shards()[3].n_tensors, 10u);
  EXPECT_EQ(s->get("split.no").type, ValueType::UINT16);
  EXPECT_EQ(s->get("split.count").type, ValueType::UINT16);
  EXPECT_EQ(s->get("split.count").as_int(), 4);
  EXPECT_EQ(s->get("split.tensors.count").type, ValueType::INT32);
  EXPECT_EQ(s->get("split.tensors.count").as_int(), 160);
  EXPECT_EQ(s->kvs().size(), 42u + 3u);
  EXPECT_EQ(s->tensors()[120].shard, 2u);
  expect_same_tensors(*f, *s);
  // Later shards carry only the split keys.
  auto second = GgufFile::open(files[1], OpenOptions{false});
  EXPECT_EQ(second->kvs().size(), 3u);
  EXPECT_EQ(second->get("split.no").as_int(), 1);

  // Merging the set back gives the original file byte for byte.
  write_gguf(dir.file("merged.gguf"), kvs_without_split(*s), specs_of(*s));
  EXPECT_TRUE(testing::read_bytes(dir.file("merged.gguf")) == testing::read_bytes(src));
}

TEST(GgufWriter, ShardBySize) {
  ScratchDir dir;
  auto f = GgufFile::open(testing::golden("small-k3mix.gguf"));
  WriteOptions opt;
  opt.split.max_bytes = 1000000;
  auto files = write_gguf(dir.file("k.gguf"), f->kvs(), specs_of(*f), opt);
  ASSERT_GT(files.size(), 5u);
  auto s = GgufFile::open(files[0]);
  ASSERT_EQ(s->shards().size(), files.size());
  expect_same_tensors(*f, *s);
  for (size_t i = 0; i < s->shards().size(); ++i) {
    uint64_t sum = 0;
    size_t n = 0;
    for (const TensorInfo& t : s->tensors())
      if (t.shard == i) {
        sum += (t.nbytes + 31) / 32 * 32;
        ++n;
      }
    EXPECT_TRUE(sum <= opt.split.max_bytes || n == 1) << "shard " << i << " holds " << sum;
    EXPECT_EQ(n, s->shards()[i].n_tensors);
  }
}

TEST(GgufWriter, SplitSetValidationOnOpen) {
  ScratchDir dir;
  auto f = GgufFile::open(testing::golden("tiny10-base.gguf"));
  WriteOptions opt;
  opt.split.max_tensors = 100;
  auto files = write_gguf(dir.file("t.gguf"), f->kvs(), specs_of(*f), opt);
  ASSERT_EQ(files.size(), 3u);

  // Opening a later shard points at the first.
  try {
    GgufFile::open(files[1]);
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("open the first shard"), std::string::npos) << m;
    EXPECT_NE(m.find("t-00001-of-00003.gguf"), std::string::npos) << m;
  }
  // Without following shards only the first one's tensors are visible.
  EXPECT_EQ(GgufFile::open(files[0], OpenOptions{false})->tensors().size(), 100u);

  // A renamed first shard cannot find its siblings.
  std::filesystem::copy_file(files[0], dir.file("renamed.gguf"));
  try {
    GgufFile::open(dir.file("renamed.gguf"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be located"), std::string::npos) << e.what();
  }

  // A shard whose split.no is wrong: write shard 3's tensors with split.no = 1.
  auto third = GgufFile::open(files[2], OpenOptions{false});
  std::vector<std::pair<std::string, Value>> kvs = {
      {"split.no", Value::u16(1)}, {"split.count", Value::u16(3)}, {"split.tensors.count", Value::i32(271)}};
  std::vector<uint8_t> saved = testing::read_bytes(files[2]);
  write_gguf(dir.file("x.gguf"), kvs, specs_of(*third));
  std::filesystem::rename(dir.file("x.gguf"), files[2]);
  try {
    GgufFile::open(files[0]);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("split.no = 1"), std::string::npos) << e.what();
  }
  testing::write_bytes(files[2], saved);
  EXPECT_EQ(GgufFile::open(files[0])->tensors().size(), 271u);

  // A missing shard.
  std::filesystem::remove(files[1]);
  try {
    GgufFile::open(files[0]);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard 2 of 3 is missing"), std::string::npos) << e.what();
  }
}

TEST(GgufWriter, DuplicateTensorAcrossShardsIsRejected) {
  ScratchDir dir;
  std::vector<float> x(8, 1.0f);
  auto spec = [&](const char* name) {
    TensorSpec s;
    s.name = name;
    s.ne = {8};
    s.data = reinterpret_cast<const uint8_t*>(x.data());
    return s;
  };
  WriteOptions opt;
  opt.split.max_tensors = 1;
  auto files = write_gguf(dir.file("d.gguf"), {}, {spec("a"), spec("b")}, opt);
  ASSERT_EQ(files.size(), 2u);
  // Rewrite shard 2 so that it also holds "a".
  write_gguf(
      dir.file("y.gguf"),
      {{"split.no", Value::u16(1)}, {"split.count", Value::u16(2)}, {"split.tensors.count", Value::i32(2)}},
      {spec("a")});
  std::filesystem::rename(dir.file("y.gguf"), files[1]);
  try {
    GgufFile::open(files[0]);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unique across shards"), std::string::npos) << e.what();
  }
}

TEST(GgufWriter, CustomAlignmentAndZeroFill) {
  ScratchDir dir;
  TensorSpec a;
  a.name = "a";
  a.ne = {3};
  a.fill = [](uint8_t* dst, uint64_t n) {
    ASSERT_EQ(n, 12u);
    float v[3] = {1, 2, 3};
    std::memcpy(dst, v, 12);
  };
  TensorSpec b;  // neither data nor fill: zeros
  b.name = "b";
  b.ne = {64, 2};
  b.type = quant::Type::Q8_0;
  write_gguf(dir.file("al.gguf"), {{"general.alignment", Value::u32(256)}}, {a, b});
  auto f = GgufFile::open(dir.file("al.gguf"));
  EXPECT_EQ(f->shards()[0].alignment, 256u);
  EXPECT_EQ(f->shards()[0].data_offset % 256, 0u);
  EXPECT_EQ(f->tensor("b")->offset, 256u);
  EXPECT_EQ(f->total_file_size(), f->shards()[0].data_offset + 512);
  float v[3];
  std::memcpy(v, f->tensor("a")->data, 12);
  EXPECT_EQ(v[2], 3.0f);
  const TensorInfo* tb = f->tensor("b");
  for (uint64_t i = 0; i < tb->nbytes; ++i) ASSERT_EQ(tb->data[i], 0) << i;
}

TEST(GgufWriter, FailureLeavesNoFiles) {
  ScratchDir dir;
  TensorSpec a;
  a.name = "a";
  a.ne = {4};
  TensorSpec bad = a;
  bad.name = "b";
  bad.fill = [](uint8_t*, uint64_t) { throw Error("source went away"); };
  WriteOptions opt;
  opt.split.max_tensors = 1;
  EXPECT_THROW(write_gguf(dir.file("f.gguf"), {}, {a, bad}, opt), Error);
  EXPECT_TRUE(dir.list().empty());

  // Invalid specs are rejected before anything is created.
  TensorSpec q;
  q.name = "q";
  q.ne = {33};
  q.type = quant::Type::Q8_0;
  EXPECT_THROW(write_gguf(dir.file("g.gguf"), {}, {q}), Error);
  EXPECT_THROW(write_gguf(dir.file("g.gguf"), {}, {a, a}), Error);
  EXPECT_THROW(write_gguf(dir.file("g.gguf"), {{"k", Value::u8(1)}, {"k", Value::u8(2)}}, {}), Error);
  EXPECT_THROW(write_gguf(dir.file("g.gguf"), {{"general.alignment", Value::u32(48)}}, {}), Error);
  TensorSpec q81 = a;
  q81.type = quant::Type::Q8_1;
  q81.ne = {32};
  EXPECT_THROW(write_gguf(dir.file("g.gguf"), {}, {q81}), Error);
  EXPECT_TRUE(dir.list().empty());
}

TEST(GgufWriter, ShardPathNaming) {
  EXPECT_EQ(shard_path("dir/name", 1, 8), "dir/name-00002-of-00008.gguf");
  EXPECT_EQ(shard_path("m", 0, 1), "m-00001-of-00001.gguf");
}

}  // namespace
}  // namespace k3::gguf
