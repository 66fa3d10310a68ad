// `k3 convert --mmproj`: the synthetic K3 vision checkpoint (hf_vision_fixture) against the mmproj
// files llama.cpp's reference converter wrote of it (tests/data/convert/vision/: each file's
// metadata and tensor-info bytes, and the SHA-256 of the whole file and of each tensor), for
// F32, F16, BF16 and Q8_0; the config and tensor errors; the general.* name heuristics.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/read_file.h"
#include "gguf/file.h"
#include "tools/convert/hf_metadata.h"
#include "tools/convert/hf_vision_fixture.h"
#include "tools/convert/sha256.h"
#include "tools/convert/test_util.h"
#include "tools/convert/vision.h"

namespace k3::test {
namespace {

namespace fs = std::filesystem;

// Writes the golden checkpoint where the reference converter is run on it (tests/data/README.md):
// K3_VISION_FIXTURE_DIR=DIR test_tools --gtest_also_run_disabled_tests --gtest_filter='*WriteFixture*'
TEST(ConvertVision, DISABLED_WriteFixture) {
  const char* dir = std::getenv("K3_VISION_FIXTURE_DIR");
  ASSERT_NE(dir, nullptr) << "set K3_VISION_FIXTURE_DIR";
  write_checkpoint(k3_vision_checkpoint(), (fs::path(dir) / kVisionFixtureName).string());
}

struct Reference {
  std::string head, file_name, file_sha;
  std::vector<std::pair<std::string, std::string>> tensor_sha;  // name, digest, in file order
};

Reference load_reference(const std::string& outtype) {
  Reference r;
  r.head = read_file(data_path("convert/vision/mmproj-" + outtype + ".head"));
  std::istringstream in(read_file(data_path("convert/vision/mmproj-" + outtype + ".sha256")));
  std::string digest, what;
  while (in >> digest >> what) {
    if (what.rfind("tensor:", 0) == 0) r.tensor_sha.emplace_back(what.substr(7), digest);
    else r.file_name = what, r.file_sha = digest;
  }
  return r;
}

tools::ConvertResult convert(const std::string& dir, quant::Type outtype, const std::string& out = "") {
  tools::ConvertOptions o;
  o.hf_dir = dir;
  o.out_path = out;
  o.outtype = outtype;
  o.threads = 2;
  return tools::convert_hf_mmproj(o);
}

void expect_matches_reference(const std::string& outtype, quant::Type type) {
  SCOPED_TRACE(outtype);
  const Reference ref = load_reference(outtype);
  ASSERT_FALSE(ref.head.empty());
  ASSERT_FALSE(ref.tensor_sha.empty());
  TempDir tmp("vision-" + outtype);
  const std::string dir = tmp.str(kVisionFixtureName);
  write_checkpoint(k3_vision_checkpoint(), dir);
  const tools::ConvertResult res = convert(dir, type);
  ASSERT_EQ(res.files.size(), 1u);
  // The reference's default name, inside the checkpoint directory.
  EXPECT_EQ(res.files[0], (fs::path(dir) / ref.file_name).string());
  const std::string out = read_file(res.files[0]);
  // Header, every key (order, type, value), every tensor info (name, shape, type, offset), padding.
  ASSERT_GE(out.size(), ref.head.size());
  size_t first_diff = 0;
  while (first_diff < ref.head.size() && out[first_diff] == ref.head[first_diff]) ++first_diff;
  EXPECT_EQ(first_diff, ref.head.size()) << "metadata differs from byte " << first_diff;
  auto g = gguf::GgufFile::open(res.files[0]);
  ASSERT_EQ(g->tensors().size(), ref.tensor_sha.size());
  for (size_t i = 0; i < ref.tensor_sha.size(); ++i) {
    const gguf::TensorInfo& t = g->tensors()[i];
    EXPECT_EQ(t.name, ref.tensor_sha[i].first);
    EXPECT_EQ(sha256_hex(t.data, t.nbytes), ref.tensor_sha[i].second) << t.name << " bytes differ";
  }
  EXPECT_EQ(sha256_hex(out), ref.file_sha) << "the file differs from the reference's";
  EXPECT_EQ(res.n_tensors, ref.tensor_sha.size());
}

TEST(ConvertVision, F32MatchesTheReferenceByteForByte) { expect_matches_reference("F32", quant::Type::F32); }
TEST(ConvertVision, F16MatchesTheReferenceByteForByte) { expect_matches_reference("F16", quant::Type::F16); }
TEST(ConvertVision, BF16MatchesTheReferenceByteForByte) {
  expect_matches_reference("BF16", quant::Type::BF16);
}
TEST(ConvertVision, Q8_0MatchesTheReferenceByteForByte) {
  expect_matches_reference("Q8_0", quant::Type::Q8_0);
}

TEST(ConvertVision, KeysAndTensorsTheLoaderReadsAreThere) {
  TempDir tmp("vision-keys");
  const std::string dir = tmp.str(kVisionFixtureName);
  write_checkpoint(k3_vision_checkpoint(), dir, 1);
  const tools::ConvertResult res = convert(dir, quant::Type::BF16, tmp.str("m.gguf"));
  auto g = gguf::GgufFile::open(res.files[0]);
  EXPECT_EQ(g->get_string("general.architecture", ""), "clip");
  EXPECT_EQ(g->get_string("clip.projector_type", ""), "kimik3");
  EXPECT_EQ(g->get_int("clip.vision.attention.head_dim", 0), 24);  // qkv 96 / 4 heads
  EXPECT_EQ(g->get_int("clip.vision.image_max_pixels", 0), 1024 * 14 * 14);
  EXPECT_EQ(g->tensor("v.position_embd.weight")->ne, (std::vector<int64_t>{64, 8, 8}));
  EXPECT_EQ(g->tensor("v.patch_embd.weight")->ne, (std::vector<int64_t>{14, 14, 3, 64}));
  EXPECT_EQ(g->tensor("v.patch_embd.weight")->type, quant::Type::F32);
  EXPECT_EQ(g->tensor("v.blk.1.attn_qkv.weight")->ne, (std::vector<int64_t>{64, 288}));
  EXPECT_EQ(g->tensor("mm.post_norm.weight")->type, quant::Type::F32);
  EXPECT_EQ(g->tensor("mm.2.weight")->ne, (std::vector<int64_t>{256, 48}));
  EXPECT_EQ(tmp.entries().size(), 2u);  // the checkpoint and m.gguf: no temporaries left
}

// The first rows of head 0's Q: de-interleaved rows 0, 1 are HF rows 0, 1; row 2 is HF row 4
// (the next pair of the first half); row hd/2 is HF row 2 (the first pair of the second half).
TEST(ConvertVision, QkDeinterleaveMovesRowsAsDocumented) {
  TempDir tmp("vision-perm");
  const std::string dir = tmp.str("hf");
  HfCheckpoint c = k3_vision_checkpoint();
  write_checkpoint(c, dir, 1);
  auto g = gguf::GgufFile::open(convert(dir, quant::Type::F32, tmp.str("m.gguf")).files[0]);
  const gguf::TensorInfo* q = g->tensor("v.blk.0.attn_qkv.weight");
  const StEntry* src = nullptr;
  for (const StEntry& e : c.tensors)
    if (e.name == "vision_tower.encoder.blocks.0.wqkv.weight") src = &e;
  ASSERT_NE(src, nullptr);
  const size_t row = 64 * 4, hd = 24, Q = 96;
  auto same = [&](size_t out_row, size_t hf_row) {
    return std::memcmp(q->data + out_row * row, src->bytes.data() + hf_row * row, row) == 0;
  };
  EXPECT_TRUE(same(0, 0));
  EXPECT_TRUE(same(1, 1));
  EXPECT_TRUE(same(2, 4));
  EXPECT_TRUE(same(hd / 2, 2));
  EXPECT_TRUE(same(hd / 2 + 1, 3));
  EXPECT_TRUE(same(Q + hd + 2, Q + hd + 4));  // K, head 1
  EXPECT_TRUE(same(2 * Q + 5, 2 * Q + 5));    // V rows stay
}

void expect_error(const HfCheckpoint& c, const std::string& needle) {
  TempDir tmp("vision-err");
  const std::string dir = tmp.str("hf");
  write_checkpoint(c, dir, 1);
  try {
    convert(dir, quant::Type::F16, tmp.str("m.gguf"));
    ADD_FAILURE() << "no error; wanted: " << needle;
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what(); }
  EXPECT_FALSE(fs::exists(tmp.str("m.gguf")));
}

TEST(ConvertVision, ErrorsNameTheKeyOrTensor) {
  HfCheckpoint c = k3_vision_checkpoint();
  c.config.erase("vision_config");
  expect_error(c, "no vision_config");

  c = k3_vision_checkpoint();
  std::erase_if(c.tensors,
                [](const StEntry& e) { return e.name == "vision_tower.encoder.blocks.1.wo.weight"; });
  expect_error(c, "missing tensor 'vision_tower.encoder.blocks.1.wo.weight'");

  c = k3_vision_checkpoint();
  for (StEntry& e : c.tensors)
    if (e.name == "mm_projector.proj.2.weight") e.shape = {96, 128};
  expect_error(c, "tensor 'mm_projector.proj.2.weight' (");
  expect_error(c, "shape [96, 128] does not match vision_config (expected [48, 256])");

  c = k3_vision_checkpoint();
  c.config["vision_config"]["qkv_hidden_size"] = 90;
  expect_error(c, "qkv_hidden_size 90 is not divisible by vt_num_attention_heads 4");

  c = k3_vision_checkpoint();
  c.config["vision_config"]["qkv_hidden_size"] = 72;  // head_dim 18
  expect_error(c, "head_dim 18");

  c = k3_vision_checkpoint();
  c.config["vision_config"].erase("patch_size");
  expect_error(c, "missing required key (one of 'patch_size')");

  c = k3_vision_checkpoint();
  c.preprocessor["media_proc_cfg"].erase("image_std");
  expect_error(c, "missing required key 'image_std'");

  c = k3_vision_checkpoint();
  c.tensors.push_back({"vision_tower.encoder.blocks.3.wo.weight", "F32", {2}, std::string(8, '\0')});
  expect_error(c, "unexpected tensor 'vision_tower.encoder.blocks.3.wo.weight'");

  c = k3_vision_checkpoint();
  for (StEntry& e : c.tensors)
    if (e.name == "vision_tower.encoder.final_layernorm.weight") e.dtype = "I32";
  expect_error(c, "dtype I32 is not supported here");
}

TEST(ConvertVision, OutputPathChecks) {
  TempDir tmp("vision-out");
  const std::string dir = tmp.str("hf");
  write_checkpoint(k3_vision_checkpoint(), dir, 1);
  EXPECT_THROW(convert(dir, quant::Type::F16, tmp.str("nowhere/m.gguf")), Error);
  // A directory gets the default name inside it.
  fs::create_directories(tmp.str("out"));
  const tools::ConvertResult r = convert(dir, quant::Type::F16, tmp.str("out"));
  EXPECT_EQ(fs::path(r.files[0]).parent_path(), fs::path(tmp.str("out")));
  EXPECT_EQ(fs::path(r.files[0]).filename().string().rfind("mmproj-", 0), 0u);
}

}  // namespace
}  // namespace k3::test

namespace k3::test {
namespace {

// Expectations from gguf-py's Metadata.get_model_id_components / id_to_title / size_label at the
// reference commit, with a model of 243,000 parameters.
TEST(HfMetadata, NameHeuristicsMatchGgufPy) {
  struct Case {
    const char* id;
    const char *org, *basename, *finetune, *version, *size_label, *title;
  };
  const Case cases[] = {
      {"Kimi-K3", nullptr, nullptr, nullptr, nullptr, nullptr, "Kimi K3"},
      {"Kimi-K3-Instruct", nullptr, "Kimi-K3", "Instruct", nullptr, nullptr, "Kimi K3 Instruct"},
      {"moonshotai/Kimi-K2.5", "moonshotai", nullptr, nullptr, nullptr, nullptr, "Kimi K2.5"},
      {"meta-llama/Llama-3.1-8B-Instruct", "meta-llama", "Llama-3.1", "8b-Instruct", nullptr, nullptr,
       "Llama 3.1 8B Instruct"},
      {"bloom-7b1", nullptr, "bloom", "7.1b", nullptr, nullptr, "Bloom 7b1"},
      {"Mixtral-8x7B-v0.1", nullptr, "Mixtral", nullptr, "v0.1", "8x7B", "Mixtral 8x7B v0.1"},
      {"k3-synth-128k", nullptr, "k3-synth", nullptr, nullptr, "128K", "K3 Synth 128k"},
      {"my model name", nullptr, nullptr, nullptr, nullptr, nullptr, "My Model Name"},
      {"Qwen2-VL-2B-small", nullptr, "Qwen2-VL", "2b", nullptr, "small", "Qwen2 VL 2B Small"},
      {"x-q4_k_m-bf16", nullptr, nullptr, nullptr, nullptr, nullptr, "X Q4_K_M Bf16"},
  };
  auto str = [](const std::optional<std::string>& s) { return s ? *s : std::string("<none>"); };
  auto want = [](const char* s) { return s ? std::string(s) : std::string("<none>"); };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    const tools::ModelIdComponents m = tools::model_id_components(c.id, 243000);
    EXPECT_EQ(str(m.org), want(c.org));
    EXPECT_EQ(str(m.basename), want(c.basename));
    EXPECT_EQ(str(m.finetune), want(c.finetune));
    EXPECT_EQ(str(m.version), want(c.version));
    EXPECT_EQ(str(m.size_label), want(c.size_label));
    EXPECT_EQ(tools::id_to_title(m.full_name), c.title);
  }
  const std::pair<uint64_t, const char*> sizes[] = {
      {243000, "243K"},  {999, "1.0K"},        {412345, "412K"},        {1234567, "1.2M"}, {999500, "1000K"},
      {1000001, "1.0M"}, {7241732096, "7.2B"}, {2500000000000, "2.5T"}, {45, "0.04K"}};
  for (const auto& [n, label] : sizes) EXPECT_EQ(tools::size_label_of(n), label) << n;
}

}  // namespace
}  // namespace k3::test
