// Round trips: golden GGUF → HF checkpoint (inverse mapping, hf_fixture) → k3 convert → the
// golden tensors back, bit for bit (F32 models with --outtype f32; MXFP4 experts byte-identical;
// Q8_0 tensors re-quantized byte-identically from their own dequantized values), and the same
// kimi-k3.* metadata.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "tools/convert/hf_fixture.h"
#include "tools/convert/test_util.h"
#include "gguf/file.h"
#include "quant/codec.h"
#include "tools/convert/convert.h"
#include "tools/convert/safetensors.h"
#include "tools/synth/synth.h"

namespace k3::test {
namespace {

std::vector<int64_t> strip_ones(std::vector<int64_t> ne) {
  while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
  return ne;
}

bool same_value(const gguf::Value& a, const gguf::Value& b) {
  return a.type == b.type && a.elem == b.elem && a.bits == b.bits && a.str == b.str && a.raw == b.raw &&
         a.strs == b.strs;
}

struct Converted {
  std::unique_ptr<gguf::GgufFile> golden, out;
  tools::ConvertResult res;
};

Converted run(const std::string& golden_name, quant::Type outtype, const TempDir& tmp, FixtureOptions fo = {},
              uint64_t split = 0) {
  Converted c;
  c.golden = gguf::GgufFile::open(data_path("golden/" + golden_name));
  fo.dir = tmp.str("hf");
  write_hf_fixture(*c.golden, fo);
  tools::ConvertOptions o;
  o.hf_dir = fo.dir;
  o.out_path = tmp.str("out.gguf");
  o.outtype = outtype;
  o.split_max_bytes = split;
  o.threads = 2;
  c.res = tools::convert_hf(o);
  c.out = gguf::GgufFile::open(c.res.files.front());
  return c;
}

// Every golden tensor is in the output with the same type, shape (up to trailing 1s) and bytes;
// ssm_a alone is allowed the rounding of exp(log(x)) (a float A_log cannot hit every float).
void expect_same_tensors(const gguf::GgufFile& golden, const gguf::GgufFile& out) {
  EXPECT_EQ(golden.tensors().size(), out.tensors().size());
  for (const gguf::TensorInfo& g : golden.tensors()) {
    SCOPED_TRACE(g.name);
    const gguf::TensorInfo* o = out.tensor(g.name);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(strip_ones(g.ne), strip_ones(o->ne));
    ASSERT_EQ(quant::type_name(g.type), std::string(quant::type_name(o->type)));
    ASSERT_EQ(g.nbytes, o->nbytes);
    if (g.name.size() > 5 && g.name.compare(g.name.size() - 5, 5, "ssm_a") == 0) {
      for (int64_t i = 0; i < g.n_elements(); ++i) {
        float a, b;
        std::memcpy(&a, g.data + 4 * i, 4);
        std::memcpy(&b, o->data + 4 * i, 4);
        EXPECT_NEAR(a, b, std::fabs(a) * 4e-7f) << i;
      }
      continue;
    }
    EXPECT_EQ(0, std::memcmp(g.data, o->data, g.nbytes)) << "bytes differ";
  }
}

void expect_same_model_kvs(const gguf::GgufFile& golden, const gguf::GgufFile& out) {
  for (const auto& [k, v] : golden.kvs()) {
    if (k.rfind("kimi-k3.", 0) != 0 && k != "general.architecture") continue;
    SCOPED_TRACE(k);
    const gguf::Value* o = out.find(k);
    ASSERT_NE(o, nullptr);
    EXPECT_TRUE(same_value(v, *o)) << v.to_display() << " vs " << o->to_display();
  }
  for (const auto& [k, v] : out.kvs())
    if (k.rfind("kimi-k3.", 0) == 0) { EXPECT_NE(golden.find(k), nullptr) << "extra key " << k; }
}

TEST(ConvertGolden, Tiny10BaseF32IsBitExact) {
  TempDir tmp("tiny10");
  FixtureOptions fo;
  fo.shards = 3;  // through model.safetensors.index.json
  Converted c = run("tiny10-base.gguf", quant::Type::F32, tmp, fo);
  expect_same_tensors(*c.golden, *c.out);
  expect_same_model_kvs(*c.golden, *c.out);
  EXPECT_EQ(c.out->get_string("general.architecture", ""), "kimi-k3");
  // The 4-D conv shape of the reference converter.
  EXPECT_EQ(c.out->tensor("blk.0.ssm_conv1d_q.weight")->ne, (std::vector<int64_t>{4, 1, 64, 1}));
  // A_log's spare entries (100.0 …) were not used: ssm_a has n_head entries.
  EXPECT_EQ(c.out->tensor("blk.0.ssm_a")->ne, (std::vector<int64_t>{4}));
  EXPECT_EQ(c.res.n_mxfp4, 0u);
}

TEST(ConvertGolden, Tiny10VariantsSoftplusAndNoQlora) {
  for (const char* name : {"tiny10-softplus.gguf", "tiny10-noqlora.gguf"}) {
    SCOPED_TRACE(name);
    TempDir tmp("tiny10v");
    FixtureOptions fo;
    fo.nested = std::string(name) == "tiny10-softplus.gguf";  // also the un-nested (no prefix) layout
    Converted c = run(name, quant::Type::F32, tmp, fo);
    expect_same_tensors(*c.golden, *c.out);
    expect_same_model_kvs(*c.golden, *c.out);
  }
  TempDir tmp("tiny10s");
  Converted c = run("tiny10-softplus.gguf", quant::Type::F32, tmp);
  EXPECT_EQ(c.out->find("kimi-k3.kda.gate_lower_bound"), nullptr);  // selects the softplus gate
}

TEST(ConvertGolden, SmallMxfp4ExpertsAreByteIdenticalAndQ8Requantizes) {
  TempDir tmp("mxfp4");
  Converted c = run("small-mxfp4.gguf", quant::Type::Q8_0, tmp);
  EXPECT_EQ(c.res.n_mxfp4, 15u);
  expect_same_tensors(*c.golden, *c.out);
  expect_same_model_kvs(*c.golden, *c.out);
  // The byte-level vocabulary and its special ids come back.
  for (const char* k :
       {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
        "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id",
        "tokenizer.ggml.add_bos_token"}) {
    SCOPED_TRACE(k);
    ASSERT_NE(c.out->find(k), nullptr);
    EXPECT_TRUE(same_value(c.golden->get(k), c.out->get(k)));
  }
  EXPECT_EQ(c.out->get_int("general.file_type", -1), 38);  // MOSTLY_MXFP4_MOE
}

TEST(ConvertGolden, Bf16OuttypeRoundsEachWeight) {
  TempDir tmp("bf16");
  Converted c = run("tiny10-base.gguf", quant::Type::BF16, tmp);
  size_t n_bf16 = 0;
  for (const gguf::TensorInfo& g : c.golden->tensors()) {
    SCOPED_TRACE(g.name);
    const gguf::TensorInfo* o = c.out->tensor(g.name);
    ASSERT_NE(o, nullptr);
    const bool keep_f32 = strip_ones(g.ne).size() == 1 || g.name.find("_norm.") != std::string::npos ||
                          g.name.find("ffn_gate_inp") != std::string::npos ||
                          g.name.find("ssm_conv1d") != std::string::npos;
    ASSERT_EQ(o->type, keep_f32 ? quant::Type::F32 : quant::Type::BF16);
    if (keep_f32) continue;
    ++n_bf16;
    for (int64_t i = 0; i < g.n_elements(); ++i) {
      float f;
      uint16_t h;
      std::memcpy(&f, g.data + 4 * i, 4);
      std::memcpy(&h, o->data + 2 * i, 2);
      ASSERT_EQ(h, quant::fp32_to_bf16(f)) << i;
    }
  }
  EXPECT_GT(n_bf16, 100u);
  EXPECT_EQ(c.out->get_int("general.file_type", -1), 32);
}

TEST(ConvertGolden, SplitOutputHoldsTheSameTensors) {
  TempDir tmp("split");
  Converted c = run("tiny10-base.gguf", quant::Type::F32, tmp, {}, 1000000);
  ASSERT_GE(c.res.files.size(), 2u);
  EXPECT_EQ(c.out->shards().size(), c.res.files.size());
  expect_same_tensors(*c.golden, *c.out);
}

TEST(Mxfp4Repack, WorkedExampleFromTheFormatSpec) {
  // A hand-worked MXFP4 block: 7e 9a 7f 01 80 00… decodes to y0=-0.5, y16=-0.25, y1=-3, y17=3,
  // y2=0.25, y3=0. Build the HF (neighbour-packed) form from those element codes.
  uint8_t codes[32] = {};
  codes[0] = 0xA, codes[16] = 0x9, codes[1] = 0xF, codes[17] = 0x7, codes[2] = 0x1, codes[19] = 0x8;
  uint8_t packed[16], scale = 0x7E, dst[17];
  for (int i = 0; i < 16; ++i) packed[i] = static_cast<uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
  tools::repack_mxfp4_row(packed, &scale, 32, dst);
  const uint8_t want[17] = {0x7e, 0x9a, 0x7f, 0x01, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(0, std::memcmp(dst, want, 17));
  float y[32];
  quant::dequantize_row(quant::Type::MXFP4, dst, y, 32);
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[16], -0.25f);
  EXPECT_EQ(y[1], -3.0f);
  EXPECT_EQ(y[17], 3.0f);
  EXPECT_EQ(y[2], 0.25f);
  uint8_t back_p[16], back_s;
  tools::unpack_mxfp4_row(dst, 32, back_p, &back_s);
  EXPECT_EQ(0, std::memcmp(back_p, packed, 16));
  EXPECT_EQ(back_s, scale);
}

}  // namespace
}  // namespace k3::test

namespace k3::test {
namespace {

// Throughput on a bigger model: K3_CONVERT_BENCH_GGUF=model.gguf test_convert
// --gtest_also_run_disabled_tests --gtest_filter='*Throughput*' (not run in CI).
TEST(ConvertGolden, DISABLED_ThroughputFromEnv) {
  TempDir tmp("bench");
  const char* env = std::getenv("K3_CONVERT_BENCH_GGUF");
  std::string src = env ? env : tmp.str("synth.gguf");
  if (!env) {
    // Default: a mid-size synthetic K3 (BF16 trunk, MXFP4 experts).
    tools::SynthConfig sc;
    sc.name = "convert-bench";
    sc.n_embd = 1024, sc.n_layer = 6, sc.n_head = 8, sc.kda_head_dim = 128;
    sc.q_lora_rank = 256, sc.kv_lora_rank = 256, sc.n_rot = 64, sc.qk_nope = 64, sc.n_embd_head_v_mla = 64;
    sc.n_ff = 2048, sc.n_expert = 32, sc.n_expert_used = 4, sc.n_ff_exp = 512, sc.n_embd_exp_latent = 512;
    sc.trunk_type = quant::Type::BF16;
    sc.rules.push_back(tools::parse_type_rule("ffn_.*_exps=mxfp4"));
    tools::write_synth(src, sc);
  }
  auto g = gguf::GgufFile::open(src);
  FixtureOptions fo;
  fo.dir = tmp.str("hf");
  fo.shards = 4;
  write_hf_fixture(*g, fo);
  for (quant::Type t : {quant::Type::F32, quant::Type::BF16, quant::Type::Q8_0}) {
    tools::ConvertOptions o;
    o.hf_dir = fo.dir;
    o.out_path = tmp.str("out.gguf");
    o.outtype = t;
    tools::ConvertResult r = tools::convert_hf(o);
    std::printf("outtype %s: %zu tensors (%zu MXFP4), read %.1f MB, wrote %.1f MB in %.2f s: %.0f MB/s in\n",
                quant::type_name(t), r.n_tensors, r.n_mxfp4, r.bytes_in / 1e6, r.bytes_out / 1e6, r.seconds,
                r.bytes_in / 1e6 / r.seconds);
    std::filesystem::remove(o.out_path);
  }
}

}  // namespace
}  // namespace k3::test
