// GGUF reader: the GGUF worked example (as gguf-py writes it) byte for byte, every value type,
// nested arrays, v2 files, and the golden models (facts from tests/gguf/census_reference.py,
// an independent plain-Python reader).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/file.h"
#include "gguf/gguf_test_util.h"

namespace k3::gguf {
namespace {

using testing::Bytes;

// The worked example: one string KV, one INT32 array KV, one F32 tensor [3, 2].
Bytes spec_example() {
  Bytes b;
  b.raw("GGUF", 4).u32(3).u64(1).u64(2);
  b.str("general.architecture").u32(8).str("llama");
  b.str("demo.arr").u32(9).u32(5).u64(3).u32(1).u32(2).u32(3);
  b.str("t").u32(2).u64(3).u64(2).u32(0).u64(0);
  b.pad_to(32);
  for (int i = 0; i < 6; ++i) b.f32(static_cast<float>(i));
  b.pad_to(32);
  return b;
}

TEST(GgufReader, SpecWorkedExample) {
  Bytes b = spec_example();
  ASSERT_EQ(b.size(), 0xa0u + 32u);
  auto f = GgufFile::open_memory(b.bytes().data(), b.size(), "example.gguf");
  EXPECT_EQ(f->version(), 3u);
  ASSERT_EQ(f->kvs().size(), 2u);
  EXPECT_EQ(f->kvs()[0].first, "general.architecture");
  EXPECT_EQ(f->get_string("general.architecture", ""), "llama");
  const Value& arr = f->get("demo.arr");
  EXPECT_EQ(arr.elem, ValueType::INT32);
  EXPECT_EQ(arr.ints(), (std::vector<int64_t>{1, 2, 3}));
  ASSERT_EQ(f->tensors().size(), 1u);
  const TensorInfo* t = f->tensor("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ne, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t->type, quant::Type::F32);
  EXPECT_EQ(t->nbytes, 24u);
  EXPECT_EQ(t->n_elements(), 6);
  EXPECT_EQ(t->shape_string(), "[3, 2]");
  EXPECT_EQ(f->shards()[0].data_offset, 0xa0u);
  EXPECT_EQ(t->file_offset, 0xa0u);
  float x[6];
  std::memcpy(x, t->data, sizeof x);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(x[i], static_cast<float>(i));
}

// Every value type, an empty array, string arrays, nested arrays; version 2.
Bytes all_types(uint32_t version) {
  Bytes b;
  b.raw("GGUF", 4).u32(version).u64(0).u64(17);
  b.str("u8").u32(0).u8(200);
  b.str("i8").u32(1).u8(static_cast<uint8_t>(-5));
  b.str("u16").u32(2).u16(65535);
  b.str("i16").u32(3).u16(static_cast<uint16_t>(-300));
  b.str("u32").u32(4).u32(4000000000u);
  b.str("i32").u32(5).u32(static_cast<uint32_t>(-70000));
  b.str("f32").u32(6).f32(-5.0f);
  b.str("bool").u32(7).u8(1);
  b.str("odd_bool").u32(7).u8(7);  // any non-zero byte is true; must round-trip as 7
  b.str("string").u32(8).str("h\xc3\xa9llo");
  b.str("u64").u32(10).u64(18000000000000000000ull);
  b.str("i64").u32(11).u64(static_cast<uint64_t>(-9000000000ll));
  b.str("f64").u32(12).f64(0.125);
  b.str("arr_str").u32(9).u32(8).u64(2).str("a").str("");
  b.str("arr_empty").u32(9).u32(6).u64(0);
  b.str("arr_bool").u32(9).u32(7).u64(3).u8(0).u8(1).u8(0);
  // [[1, 2], ["x"]]
  b.str("nested").u32(9).u32(9).u64(2);
  b.u32(4).u64(2).u32(1).u32(2);
  b.u32(8).u64(1).str("x");
  return b;
}

TEST(GgufReader, AllValueTypesAndVersion2) {
  for (uint32_t version : {2u, 3u}) {
    Bytes b = all_types(version);
    auto f = GgufFile::open_memory(b.bytes().data(), b.size(), "types.gguf");
    EXPECT_EQ(f->version(), version);
    EXPECT_EQ(f->tensors().size(), 0u);
    EXPECT_EQ(f->get("u8").as_uint(), 200u);
    EXPECT_EQ(f->get("i8").as_int(), -5);
    EXPECT_EQ(f->get("u16").as_int(), 65535);
    EXPECT_EQ(f->get("i16").as_int(), -300);
    EXPECT_EQ(f->get("u32").as_uint(), 4000000000u);
    EXPECT_EQ(f->get("i32").as_int(), -70000);
    EXPECT_EQ(f->get("f32").as_float(), -5.0);
    EXPECT_TRUE(f->get("bool").as_bool());
    EXPECT_TRUE(f->get("odd_bool").as_bool());
    EXPECT_EQ(f->get("odd_bool").bits, 7u);
    EXPECT_EQ(f->get("string").as_string(), "h\xc3\xa9llo");
    EXPECT_EQ(f->get("u64").as_uint(), 18000000000000000000ull);
    EXPECT_THROW(f->get("u64").as_int(), Error);  // does not fit
    EXPECT_EQ(f->get("i64").as_int(), -9000000000ll);
    EXPECT_THROW(f->get("i64").as_uint(), Error);  // negative
    EXPECT_EQ(f->get("f64").as_float(), 0.125);
    EXPECT_EQ(f->get("i32").as_float(), -70000.0);
    const Value& s = f->get("arr_str");
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s.string_at(0), "a");
    EXPECT_EQ(s.string_at(1), "");
    EXPECT_EQ(f->get("arr_empty").size(), 0u);
    EXPECT_EQ(f->get("arr_bool").raw, (std::vector<uint8_t>{0, 1, 0}));
    EXPECT_EQ(f->get("arr_bool").size(), 3u);
    const Value& n = f->get("nested");
    ASSERT_EQ(n.elem, ValueType::ARRAY);
    ASSERT_EQ(n.size(), 2u);
    EXPECT_EQ(n.nested[0].ints(), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(n.nested[1].string_at(0), "x");
    EXPECT_EQ(n.to_display(), "[[1, 2], [\"x\"]]");
    // Type errors name both types.
    try {
      (void)f->get("string").as_int();
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("STRING"), std::string::npos) << e.what();
    }
    try {
      (void)f->get_int("string", 0);
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("key string"), std::string::npos) << e.what();
    }
    EXPECT_EQ(f->get_int("absent", 42), 42);
    EXPECT_EQ(f->get_string("absent", "d"), "d");
    try {
      (void)f->get("absent");
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("missing key absent"), std::string::npos) << e.what();
    }
  }
}

TEST(GgufReader, ValueFactoriesAndDisplay) {
  EXPECT_EQ(Value::i8(-3).as_int(), -3);
  EXPECT_EQ(Value::u16(7).to_display(), "7");
  EXPECT_EQ(Value::f32(0.5f).to_display(), "0.5");
  EXPECT_EQ(Value::boolean(false).to_display(), "false");
  EXPECT_EQ(Value::string("a\"b").to_display(), "\"a\\\"b\"");
  EXPECT_EQ(Value::array_i32({1, -2}).ints(), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(Value::array_u32({5}).int_at(0), 5);
  EXPECT_EQ(Value::array_f32({0.25f, 2}).floats(), (std::vector<double>{0.25, 2}));
  EXPECT_EQ(Value::array_string({"x", "y"}).string_at(1), "y");
  EXPECT_EQ(Value::array_i32({1, 2, 3, 4}).to_display(2), "[1, 2, ... (4 items)]");
  EXPECT_THROW(Value::u32(1).size(), Error);
  EXPECT_THROW(Value::array_i32({1}).int_at(1), Error);
  EXPECT_THROW(Value::array_string({"x"}).int_at(0), Error);
  EXPECT_EQ(std::string(value_type_name(ValueType::FLOAT64)), "FLOAT64");
  EXPECT_EQ(value_type_size(ValueType::UINT16), 2u);
  EXPECT_EQ(value_type_size(ValueType::STRING), 0u);
}

TEST(GgufReader, GoldenSmallQ8) {
  auto f = GgufFile::open(testing::golden("small-q8_0.gguf"));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->tensors().size(), 160u);
  EXPECT_EQ(f->kvs().size(), 42u);
  EXPECT_EQ(f->total_file_size(), 13494624u);
  EXPECT_EQ(f->shards().size(), 1u);
  EXPECT_EQ(f->shards()[0].data_offset, 15680u);
  EXPECT_EQ(f->get_string("general.architecture", ""), "kimi-k3");
  EXPECT_EQ(f->get("kimi-k3.attention.layer_norm_rms_epsilon").type, ValueType::FLOAT32);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get("kimi-k3.attention.layer_norm_rms_epsilon").as_float()), 1e-5f);
  EXPECT_EQ(f->get("tokenizer.ggml.tokens").size(), 272u);
  // First tensors in file order (from the Python reference reader).
  EXPECT_EQ(f->tensors()[0].name, "output.weight");
  EXPECT_EQ(f->tensors()[3].name, "token_embd.weight");
  const TensorInfo* emb = f->tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->ne, (std::vector<int64_t>{256, 272}));
  EXPECT_EQ(emb->type, quant::Type::Q8_0);
  EXPECT_EQ(emb->offset, 76032u);
  EXPECT_EQ(emb->nbytes, 272u * 8u * 34u);
  const TensorInfo* norm = f->tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->file_offset, 89664u);
  float x[4];
  std::memcpy(x, norm->data, sizeof x);
  EXPECT_FLOAT_EQ(x[0], 1.011307716369629f);
  EXPECT_FLOAT_EQ(x[3], 1.1480305194854736f);
  EXPECT_EQ(norm->data, f->mapping(0).data() + norm->file_offset);
  EXPECT_EQ(f->tensor("nope"), nullptr);
}

TEST(GgufReader, AllGoldenFilesOpen) {
  struct Case {
    const char* file;
    size_t tensors, kvs;
  } cases[] = {
      {"archtest-s1.gguf", 84, 145}, {"small-imatrix.gguf", 188, 4},   {"small-k3mix.gguf", 160, 46},
      {"small-mxfp4.gguf", 160, 42}, {"small-q2k.gguf", 160, 42},      {"small-q8_0.gguf", 160, 42},
      {"tiny10-base.gguf", 271, 32}, {"tiny10-noqlora.gguf", 265, 32}, {"tiny10-softplus.gguf", 271, 31}};
  for (const Case& c : cases) {
    auto f = GgufFile::open(testing::golden(c.file));
    EXPECT_EQ(f->tensors().size(), c.tensors) << c.file;
    EXPECT_EQ(f->kvs().size(), c.kvs) << c.file;
    for (const TensorInfo& t : f->tensors()) {
      EXPECT_LE(t.file_offset + t.nbytes, f->total_file_size()) << t.name;
      EXPECT_EQ(t.file_offset % 32, 0u) << t.name;
    }
  }
}

TEST(GgufReader, MappedFileErrorsCarryThePath) {
  try {
    GgufFile::open("/nonexistent/dir/model.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace k3::gguf
