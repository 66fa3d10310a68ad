// tests/tools/convert/hf_vision_fixture: the synthetic K3 vision checkpoint (see
// hf_vision_fixture.h).
#include "tools/convert/hf_vision_fixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "quant/codec.h"

namespace k3::test {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f; }
};

StEntry make(const std::string& name, std::vector<int64_t> shape, const std::string& dtype, Rng& rng,
             float scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::string bytes;
  for (int64_t i = 0; i < n; ++i) {
    const float f = rng.uniform() * scale;
    if (dtype == "F32") {
      bytes.append(reinterpret_cast<const char*>(&f), 4);
    } else {
      const uint16_t h = dtype == "F16" ? quant::fp32_to_fp16(f) : quant::fp32_to_bf16(f);
      bytes.append(reinterpret_cast<const char*>(&h), 2);
    }
  }
  return {name, dtype, std::move(shape), std::move(bytes)};
}

json vision_config(const VisionShape& s) {
  return {{"patch_size", s.patch},
          {"init_pos_emb_height", s.pos_h},
          {"init_pos_emb_width", s.pos_w},
          {"init_pos_emb_time", 4},
          {"vt_hidden_size", s.hidden},
          {"vt_num_attention_heads", s.heads},
          {"qkv_hidden_size", s.qkv},
          {"vt_num_hidden_layers", s.layers},
          {"vt_intermediate_size", s.ff},
          {"merge_kernel_size", {s.merge, s.merge}},
          {"projector_ln_eps", 1e-6},
          {"projector_hidden_act", "gelu"},
          {"mm_projector_type", "patchmergerv2"},
          {"text_hidden_size", s.text_hidden}};
}

}  // namespace

HfCheckpoint k3_vision_checkpoint(const VisionShape& s, uint64_t seed) {
  HfCheckpoint c;
  c.config = {{"architectures", {"KimiK3ForConditionalGeneration"}},
              {"model_type", "kimi_k3"},
              {"text_config",
               {{"architectures", {"KimiLinearForCausalLM"}},
                {"hidden_size", s.text_hidden},
                {"num_hidden_layers", 1},
                {"vocab_size", 16}}},
              {"vision_config", vision_config(s)}};
  c.preprocessor = {{"in_patch_limit", 4096},
                    {"media_proc_cfg",
                     {{"in_patch_limit", 1024},
                      {"patch_size", s.patch},
                      {"image_mean", {0.48145466, 0.4578275, 0.40821073}},
                      {"image_std", {0.26862954, 0.26130258, 0.27577711}}}}};
  c.generation = {{"temperature", 0.6}, {"top_p", 0.95}, {"max_length", 1024}, {"eos_token_id", 15}};

  Rng rng{seed};
  const int64_t C = s.hidden, M = C * s.merge * s.merge, T = s.text_hidden;
  auto& t = c.tensors;
  t.push_back(make("language_model.model.embed_tokens.weight", {16, T}, "BF16", rng, 1.0f));
  t.push_back(make("language_model.model.norm.weight", {T}, "BF16", rng, 1.0f));
  t.push_back(make("vision_tower.patch_embed.proj.weight", {C, 3, s.patch, s.patch}, "F16", rng, 0.5f));
  t.push_back(make("vision_tower.patch_embed.pos_emb.weight", {s.pos_h, s.pos_w, C}, "F32", rng, 0.1f));
  for (int64_t il = 0; il < s.layers; ++il) {
    const std::string b = fmt::format("vision_tower.encoder.blocks.{}.", il);
    t.push_back(make(b + "norm0.weight", {C}, "F32", rng, 1.0f));
    t.push_back(make(b + "wqkv.weight", {3 * s.qkv, C}, il == 1 ? "BF16" : "F32", rng, 0.25f));
    t.push_back(make(b + "wo.weight", {C, s.qkv}, "F32", rng, 0.25f));
    t.push_back(make(b + "norm1.weight", {C}, "F32", rng, 1.0f));
    t.push_back(make(b + "mlp.fc0.weight", {s.ff, C}, "F32", rng, 0.25f));
    // Block 0's down projection sits in F16's subnormal range (|x| < 6.1e-5).
    t.push_back(make(b + "mlp.fc1.weight", {C, s.ff}, "F32", rng, il == 0 ? 1e-5f : 0.25f));
  }
  t.push_back(make("vision_tower.encoder.final_layernorm.weight", {C}, "F32", rng, 1.0f));
  t.push_back(make("mm_projector.proj.0.weight", {M, M}, "F32", rng, 0.125f));
  const float big = 70000.0f;  // above F16's largest finite value: inf in F16
  std::memcpy(t.back().bytes.data() + 4 * 5, &big, 4);
  t.push_back(make("mm_projector.proj.2.weight", {T, M}, "BF16", rng, 0.125f));
  t.push_back(make("mm_projector.post_norm.weight", {T}, "F32", rng, 1.0f));
  return c;
}

void write_checkpoint(const HfCheckpoint& c, const std::string& dir, int shards) {
  fs::create_directories(dir);
  auto put = [&](const char* name, const json& j) {
    if (!j.is_null()) std::ofstream((fs::path(dir) / name).string()) << j.dump(2) << '\n';
  };
  put("config.json", c.config);
  put("preprocessor_config.json", c.preprocessor);
  put("generation_config.json", c.generation);
  std::vector<StEntry> sorted = c.tensors;
  std::sort(sorted.begin(), sorted.end(), [](const StEntry& a, const StEntry& b) { return a.name < b.name; });
  if (shards <= 1) {
    write_safetensors((fs::path(dir) / "model.safetensors").string(), sorted);
    return;
  }
  std::vector<std::vector<StEntry>> parts(static_cast<size_t>(shards));
  json wm = json::object();
  for (size_t i = 0; i < sorted.size(); ++i) {
    wm[sorted[i].name] = fmt::format("model-{:05d}-of-{:05d}.safetensors", i % shards + 1, shards);
    parts[i % shards].push_back(sorted[i]);
  }
  for (int p = 0; p < shards; ++p)
    write_safetensors(
        (fs::path(dir) / fmt::format("model-{:05d}-of-{:05d}.safetensors", p + 1, shards)).string(),
        parts[static_cast<size_t>(p)]);
  std::ofstream((fs::path(dir) / "model.safetensors.index.json").string())
      << json{{"metadata", json::object()}, {"weight_map", wm}}.dump(1) << '\n';
}

}  // namespace k3::test
