// Bad mmproj files: each is a valid synthetic tower with one fault, and each must be refused at
// open() with a message naming the fault (never a crash, never a tower that runs wrong).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "core/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "vision/tower.h"

namespace k3::vision {
namespace {

const std::string kTower = std::string(K3_TEST_DATA_DIR) + "/vision/mmproj-vt-a.gguf";

using Kvs = std::vector<std::pair<std::string, gguf::Value>>;
using Specs = std::vector<gguf::TensorSpec>;

// Writes vt-a after `edit` changed its keys or tensors; returns open()'s error text ("" if none).
std::string open_edited(const std::function<void(Kvs&, Specs&)>& edit) {
  test::TempDir dir;
  const auto src = gguf::GgufFile::open(kTower);
  Kvs kvs = src->kvs();
  Specs specs;
  for (const gguf::TensorInfo& t : src->tensors()) specs.push_back({t.name, t.ne, t.type, nullptr, t.data});
  edit(kvs, specs);
  const std::string path = dir.path + "/edited.gguf";
  gguf::write_gguf(path, kvs, specs);
  try {
    Tower::open(path);
  } catch (const Error& e) { return e.what(); }
  return "";
}

void set_key(Kvs& kvs, const std::string& key, gguf::Value v) {
  for (auto& [k, val] : kvs)
    if (k == key) {
      val = std::move(v);
      return;
    }
  kvs.emplace_back(key, std::move(v));
}

void drop_key(Kvs& kvs, const std::string& key) {
  std::erase_if(kvs, [&](const auto& kv) { return kv.first == key; });
}

void drop_tensor(Specs& s, const std::string& name) {
  std::erase_if(s, [&](const gguf::TensorSpec& t) { return t.name == name; });
}

TEST(TowerErrors, TheUneditedFileOpens) {
  EXPECT_EQ(open_edited([](Kvs&, Specs&) {}), "");
}

TEST(TowerErrors, OtherProjectorTypesAreNamed) {
  const std::string e =
      open_edited([](Kvs& k, Specs&) { set_key(k, "clip.projector_type", gguf::Value::string("kimik25")); });
  EXPECT_NE(e.find("projector type 'kimik25' is not supported"), std::string::npos) << e;
}

TEST(TowerErrors, ATextModelIsNotATower) {
  const std::string e =
      open_edited([](Kvs& k, Specs&) { set_key(k, "general.architecture", gguf::Value::string("kimi-k3")); });
  EXPECT_NE(e.find("not an mmproj file (general.architecture is 'kimi-k3'"), std::string::npos) << e;
}

TEST(TowerErrors, MissingKeysAreNamed) {
  for (const char* key : {"clip.vision.patch_size", "clip.vision.image_max_pixels", "clip.vision.image_mean",
                          "clip.vision.attention.layer_norm_epsilon"}) {
    const std::string e = open_edited([&](Kvs& k, Specs&) { drop_key(k, key); });
    EXPECT_NE(e.find(key), std::string::npos) << e;
  }
}

TEST(TowerErrors, AbsurdOrInconsistentHyperparameters) {
  std::string e =
      open_edited([](Kvs& k, Specs&) { set_key(k, "clip.vision.patch_size", gguf::Value::u32(100000)); });
  EXPECT_NE(e.find("outside"), std::string::npos) << e;
  e = open_edited([](Kvs& k, Specs&) { set_key(k, "clip.vision.attention.head_dim", gguf::Value::u32(22)); });
  EXPECT_NE(e.find("multiple of 4"), std::string::npos) << e;
  e = open_edited([](Kvs& k, Specs&) {
    set_key(k, "clip.vision.image_std", gguf::Value::array_f32({0.5f, 0.0f, 0.5f}));
  });
  EXPECT_NE(e.find("zero"), std::string::npos) << e;
  e = open_edited(
      [](Kvs& k, Specs&) { set_key(k, "clip.vision.image_min_pixels", gguf::Value::u32(1u << 29)); });
  EXPECT_NE(e.find("above image_max_pixels"), std::string::npos) << e;
  // head_count 2 instead of 4: the QKV matrix no longer has the shape the keys imply.
  e = open_edited(
      [](Kvs& k, Specs&) { set_key(k, "clip.vision.attention.head_count", gguf::Value::u32(2)); });
  EXPECT_NE(e.find("v.blk.0.attn_qkv.weight' has shape"), std::string::npos) << e;
}

TEST(TowerErrors, MissingOrMisshapenTensorsAreNamed) {
  std::string e = open_edited([](Kvs&, Specs& s) { drop_tensor(s, "v.blk.1.ffn_down.weight"); });
  EXPECT_NE(e.find("'v.blk.1.ffn_down.weight' is missing"), std::string::npos) << e;
  e = open_edited([](Kvs&, Specs& s) { drop_tensor(s, "mm.post_norm.weight"); });
  EXPECT_NE(e.find("mm.post_norm.weight"), std::string::npos) << e;
  e = open_edited([](Kvs& k, Specs&) { set_key(k, "clip.vision.projection_dim", gguf::Value::u32(512)); });
  EXPECT_NE(e.find("projection_dim"), std::string::npos) << e;
}

TEST(TowerErrors, TensorsOfAnotherArchitectureAreRefused) {
  const std::string e = open_edited([](Kvs&, Specs& s) {
    gguf::TensorSpec extra = s.front();
    extra.name = "v.blk.0.ffn_gate.weight";
    s.push_back(extra);
  });
  EXPECT_NE(e.find("not part of the Kimi-K3 tower"), std::string::npos) << e;
}

TEST(TowerErrors, NotAGgufFile) {
  test::TempDir dir;
  const std::string path = dir.path + "/x.gguf";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fputs("not a model", f);
  std::fclose(f);
  EXPECT_THROW(Tower::open(path), Error);
}

}  // namespace
}  // namespace k3::vision
