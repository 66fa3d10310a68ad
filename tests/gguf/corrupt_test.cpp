// GGUF reader against hostile input: every corruption gives a k3::Error naming the file, the
// field and a byte offset; truncation at any point is detected; random byte flips never crash.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/file.h"
#include "gguf/gguf_test_util.h"

namespace k3::gguf {
namespace {

using testing::Bytes;

struct Opts {
  std::string t1_name = "b";
  std::string kv2_key = "arr";
  uint32_t version = 3;
};

// A small valid file: 3 KVs (string, alignment, INT32 array) and 2 tensors
// (F32 "a" [8, 2] at 0, Q8_0 "b" [32] at 64), with marks on every field.
Bytes base(const Opts& o = {}) {
  Bytes b;
  b.mark("magic").raw("GGUF", 4).mark("version").u32(o.version);
  b.mark("n_tensors").u64(2).mark("n_kv").u64(3);
  b.mark("key0").str("general.architecture").mark("type0").u32(8).mark("strlen0").str("test");
  b.mark("key1").str("general.alignment").mark("align_type").u32(4).mark("align").u32(32);
  b.mark("key2").str(o.kv2_key).mark("arr_type").u32(9).mark("arr_elem").u32(5);
  b.mark("arr_count").u64(2).u32(7).u32(8);
  b.mark("t0").str("a").mark("t0_ndims").u32(2).mark("t0_ne").u64(8).u64(2);
  b.mark("t0_type").u32(0).mark("t0_off").u64(0);
  b.mark("t1").str(o.t1_name).mark("t1_ndims").u32(1).mark("t1_ne").u64(32);
  b.mark("t1_type").u32(8).mark("t1_off").u64(64);
  b.pad_to(32).mark("data");
  for (int i = 0; i < 64 + 34; ++i) b.u8(static_cast<uint8_t>(i + 1));
  b.mark("data_end");
  b.pad_to(32);
  return b;
}

std::string error_of(Bytes& b, size_t size = SIZE_MAX) {
  try {
    GgufFile::open_memory(b.bytes().data(), std::min(size, b.size()), "corrupt.gguf");
  } catch (const Error& e) { return e.what(); }
  return "";
}

// Asserts that the image is rejected with a message containing every one of `parts`,
// the file name and a byte offset.
void expect_error(Bytes& b, std::initializer_list<const char*> parts) {
  std::string m = error_of(b);
  ASSERT_FALSE(m.empty()) << "accepted, expected error with: " << *parts.begin();
  EXPECT_NE(m.find("corrupt.gguf"), std::string::npos) << m;
  EXPECT_NE(m.find("byte offset"), std::string::npos) << m;
  for (const char* p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing '" << p << "' in: " << m;
}

TEST(GgufCorrupt, BaseIsValid) {
  Bytes b = base();
  auto f = GgufFile::open_memory(b.bytes().data(), b.size(), "corrupt.gguf");
  EXPECT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensor("b")->nbytes, 34u);
  EXPECT_EQ(f->tensor("b")->file_offset, b.at("data") + 64);
}

TEST(GgufCorrupt, HeaderFields) {
  {
    Bytes b = base();
    b.bytes()[3] = 'X';
    expect_error(b, {"magic", "not a GGUF file"});
  }
  {
    Bytes b = base();
    b.put_u32("version", 1);
    expect_error(b, {"version", "version 1"});
  }
  {
    Bytes b = base();
    b.put_u32("version", 0x03000000);
    expect_error(b, {"version", "big-endian"});
  }
  {
    Bytes b = base();
    b.put_u32("version", 7);
    expect_error(b, {"version", "unsupported GGUF version 7"});
  }
  {
    Bytes b = base();
    b.put_u64("n_tensors", uint64_t{1} << 60);
    expect_error(b, {"tensor count", "1152921504606846976"});
  }
  {
    Bytes b = base();
    b.put_u64("n_tensors", ~uint64_t{0});
    expect_error(b, {"tensor count"});
  }
  {
    Bytes b = base();
    b.put_u64("n_kv", uint64_t{1} << 60);
    expect_error(b, {"kv count"});
  }
  {
    Bytes b = base();
    b.put_u64("n_kv", 2);
    expect_error(b, {"tensor[0]"});
  }  // KV parsed as a tensor
}

TEST(GgufCorrupt, KeyValueFields) {
  {
    Bytes b = base();
    b.put_u64("key0", uint64_t{1} << 62);
    expect_error(b, {"kv[0] key", "string length"});
  }
  {
    Bytes b = base();
    b.put_u64("key0", 0);
    expect_error(b, {"kv[0] key", "empty key"});
  }
  {
    Bytes b = base();
    b.put_u64("strlen0", uint64_t{1} << 40);
    expect_error(b, {"'general.architecture'", "string length"});
  }
  {
    Bytes b = base();
    b.put_u64("strlen0", b.size());
    expect_error(b, {"'general.architecture'", "runs past the end"});
  }
  {
    Bytes b = base();
    b.put_u32("type0", 13);
    expect_error(b, {"'general.architecture' type", "unknown value type id 13"});
  }
  {
    Bytes b = base();
    b.put_u32("arr_elem", 99);
    expect_error(b, {"'arr' element type", "unknown value type id 99"});
  }
  {
    Bytes b = base();
    b.put_u64("arr_count", uint64_t{1} << 50);
    expect_error(b, {"'arr'", "array count"});
  }
  {
    Bytes b = base();
    b.put_u64("arr_count", 1000);
    expect_error(b, {"'arr'", "array count 1000", "needs at least 4000"});
  }
  {
    Bytes b = base();
    b.put_u32("align", 48);
    expect_error(b, {"general.alignment", "power of two"});
  }
  {
    Bytes b = base();
    b.put_u32("align", 0);
    expect_error(b, {"general.alignment", "power of two"});
  }
  {
    Bytes b = base();
    b.put_u32("align_type", 5);
    expect_error(b, {"general.alignment", "must be UINT32, got INT32"});
  }
  {
    Opts o;
    o.kv2_key = "general.alignment";
    Bytes b = base(o);
    expect_error(b, {"kv[2] 'general.alignment'", "duplicate key"});
  }
}

TEST(GgufCorrupt, TensorInfoFields) {
  {
    Bytes b = base();
    b.put_u32("t1_ndims", 99);
    expect_error(b, {"tensor[1] 'b'", "n_dims = 99"});
  }
  {
    Bytes b = base();
    b.put_u32("t1_ndims", 5);
    expect_error(b, {"tensor[1] 'b'", "n_dims = 5"});
  }
  {
    Bytes b = base();
    b.put_u32("t1_type", 5);
    expect_error(b, {"tensor[1] 'b'", "type id 5"});
  }
  {
    Bytes b = base();
    b.put_u32("t1_type", 31);
    expect_error(b, {"tensor[1] 'b'", "type id 31"});
  }
  {
    Bytes b = base();
    b.put_u32("t1_type", 1000);
    expect_error(b, {"tensor[1] 'b'", "type id 1000"});
  }
  {
    Bytes b = base();
    b.put_u32("t1_type", 9);
    expect_error(b, {"tensor[1] 'b'", "Q8_1", "activation-only"});
  }
  {
    Bytes b = base();
    b.put_u32("t1_type", 15);
    expect_error(b, {"tensor[1] 'b'", "Q8_K", "activation-only"});
  }
  {
    Bytes b = base();
    b.put_u64("t0_ne", ~uint64_t{0});
    expect_error(b, {"tensor[0] 'a'", "negative extent ne[0] = -1"});
  }
  {
    Bytes b = base();
    b.put_u64("t1_ne", 33);
    expect_error(b, {"tensor[1] 'b'", "not a multiple of the Q8_0 block size 32"});
  }
  {
    Bytes b = base();
    b.put_u64("t0_ne", uint64_t{1} << 40);
    b.put_u64("t0_ne", uint64_t{1} << 40, 8);
    expect_error(b, {"tensor[0] 'a'", "element count overflows"});
  }
  {
    Bytes b = base();
    b.put_u64("t0_ne", uint64_t{1} << 31);
    b.put_u64("t0_ne", uint64_t{1} << 31, 8);
    expect_error(b, {"tensor[0] 'a'", "byte size overflows"});
  }
  {
    Bytes b = base();  // fits int64 elements, but not bytes
    b.put_u64("t0_ne", uint64_t{1} << 30);
    b.put_u64("t0_ne", uint64_t{1} << 30, 8);
    expect_error(b, {"tensor[0] 'a'", "offset", "beyond the end"});
  }
  {
    Bytes b = base();
    b.put_u64("t1_off", 1 << 20);
    expect_error(b, {"tensor[1] 'b' offset", "beyond the end"});
  }
  {
    Bytes b = base();
    b.put_u64("t1_off", ~uint64_t{0} - 31);
    expect_error(b, {"tensor[1] 'b' offset", "beyond the end"});
  }
  {
    Bytes b = base();
    b.put_u64("t1_off", 65);
    expect_error(b, {"tensor[1] 'b' offset", "not a multiple of the alignment 32"});
  }
  {
    Bytes b = base();
    b.put_u64("t1_off", 32);
    expect_error(b, {"offset", "overlaps tensor[0] 'a'"});
  }
  {
    Bytes b = base();
    b.put_u64("t1_off", 0);
    expect_error(b, {"overlaps"});
  }
  {
    Opts o;
    o.t1_name = "a";
    Bytes b = base(o);
    expect_error(b, {"tensor[1] 'a'", "duplicate tensor name"});
  }
  {
    Opts o;
    o.t1_name = std::string(64, 'n');
    Bytes b = base(o);
    expect_error(b, {"tensor[1]", "name is 64 bytes long"});
  }
}

TEST(GgufCorrupt, NestedArraysTooDeep) {
  Bytes b;
  b.raw("GGUF", 4).u32(3).u64(0).u64(1).str("deep").u32(9);
  for (int i = 0; i < 20; ++i) b.u32(9).u64(1);
  b.u32(0).u64(0);
  expect_error(b, {"'deep'", "nested deeper"});
}

TEST(GgufCorrupt, TruncationAnywhereIsAnError) {
  Bytes b = base();
  const size_t end = b.at("data_end");
  for (size_t n = 0; n < end; ++n) {
    std::string m = error_of(b, n);
    ASSERT_FALSE(m.empty()) << "truncated at " << n << " was accepted";
    EXPECT_NE(m.find("byte offset"), std::string::npos) << m;
    EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("beyond the end") != std::string::npos ||
                m.find("impossible") != std::string::npos || m.find("runs past") != std::string::npos ||
                m.find("needs at least") != std::string::npos)
        << "at " << n << ": " << m;
  }
  // Only the trailing padding may be missing (llama.cpp's mmap loader accepts that too).
  for (size_t n = end; n <= b.size(); ++n) EXPECT_EQ(error_of(b, n), "") << n;
}

TEST(GgufCorrupt, GoldenTruncations) {
  MappedFile m(testing::golden("small-q8_0.gguf"));
  auto f = GgufFile::open_memory(m.data(), m.size(), "small-q8_0.gguf");
  uint64_t last_end = 0;
  for (const TensorInfo& t : f->tensors()) last_end = std::max(last_end, t.file_offset + t.nbytes);
  std::vector<size_t> cuts;
  for (size_t n = 0; n < f->shards()[0].data_offset + 64; n += 13) cuts.push_back(n);
  for (size_t n = f->shards()[0].data_offset; n < last_end; n += 99991) cuts.push_back(n);
  cuts.push_back(last_end - 1);
  for (size_t n : cuts) {
    try {
      GgufFile::open_memory(m.data(), n, "cut.gguf");
      ADD_FAILURE() << "accepted truncation at " << n;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.gguf"), std::string::npos) << e.what();
    }
  }
}

TEST(GgufCorrupt, TruncatedFileOnDisk) {
  testing::ScratchDir dir;
  Bytes b = base();
  b.bytes().resize(b.at("t1_type") + 2);
  testing::write_bytes(dir.file("short.gguf"), b.bytes());
  try {
    GgufFile::open(dir.file("short.gguf"));
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("short.gguf"), std::string::npos) << m;
    EXPECT_NE(m.find("tensor[1] 'b' type"), std::string::npos) << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  }
}

TEST(GgufCorrupt, RandomByteFlipsNeverCrash) {
  Bytes clean = base();
  std::mt19937 rng(12345);
  int rejected = 0, accepted = 0;
  const size_t meta = clean.at("data");
  for (size_t pos = 0; pos < meta; ++pos) {
    for (uint8_t mask : {0x01, 0x10, 0x80, 0xff}) {
      Bytes b = clean;
      b.bytes()[pos] ^= mask;
      (error_of(b).empty() ? accepted : rejected)++;
    }
  }
  for (int i = 0; i < 3000; ++i) {
    Bytes b = clean;
    for (int k = 0; k < 3; ++k) b.bytes()[rng() % meta] = static_cast<uint8_t>(rng());
    (error_of(b).empty() ? accepted : rejected)++;
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 0);  // flips in string contents or data stay valid
}

}  // namespace
}  // namespace k3::gguf
