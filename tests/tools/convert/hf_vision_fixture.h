// tests/tools/convert/hf_vision_fixture: a synthetic Kimi-K3 Hugging Face checkpoint with a
// vision tower (MoonViT-3d names, seeded weights) and a token text part, built the same way
// every time, so that the mmproj llama.cpp's reference converter made of it
// (tests/data/convert/vision/) is what `k3 convert --mmproj` must write byte for byte.
// Written from the tower's HF layout (docs/convert.md), independently of
// src/tools/convert/vision.cpp. Tests edit the returned checkpoint (drop a tensor, change a
// shape or a config key) before writing it, for the error cases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/convert/hf_fixture.h"

namespace k3::test {

struct VisionShape {
  int64_t layers = 3, hidden = 64, heads = 4, qkv = 96, ff = 128, patch = 14, pos_h = 8, pos_w = 8, merge = 2,
          text_hidden = 48;
};

struct HfCheckpoint {
  nlohmann::json config, preprocessor, generation;  // generation: null for none
  std::vector<StEntry> tensors;
};

// The golden checkpoint: VisionShape{} with seed 39; mixed source dtypes (F32, a F16 patch
// embedding, BF16 QKV of block 1 and projector mm.2), F16-subnormal and F16-overflowing values.
HfCheckpoint k3_vision_checkpoint(const VisionShape& s = {}, uint64_t seed = 39);

// Writes config.json, preprocessor_config.json, generation_config.json and the safetensors
// (shards > 1: round-robin over model-0000i-of-0000N.safetensors with an index) into `dir`.
void write_checkpoint(const HfCheckpoint& c, const std::string& dir, int shards = 2);

// Where the golden checkpoint is written: its name drives general.name/basename/finetune/version.
constexpr const char* kVisionFixtureName = "Kimi-K3-Vision-Synth-v0.1";

}  // namespace k3::test
