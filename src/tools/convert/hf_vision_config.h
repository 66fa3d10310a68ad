// tools/convert/hf_vision_config: the Kimi-K3 vision tower's hyperparameters from a Hugging
// Face checkpoint (config.json `vision_config` and the text hidden size, preprocessor_config.json
// and processor_config.json), and the clip.* GGUF keys of its mmproj (docs/convert.md, "The
// vision tower: mmproj").
// Contract: read_k3_vision_config() looks each value up under the same keys, in the same order
// and with the same defaults as the reference converter; a missing required key, a value of
// the wrong JSON type, a QKV width not divisible by the heads, a head_dim not divisible by 4
// (the Q/K de-interleave) or a non-square merge kernel throws k3::Error naming the file and
// key. clip_vision_kvs() returns the clip.* keys in the reference's order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"

namespace k3::tools {

struct K3VisionConfig {
  uint32_t n_embd_text = 0;       // text hidden_size → clip.vision.projection_dim
  uint32_t patch_size = 0;        // patch_size
  uint32_t image_size = 0;        // init_pos_emb_height × patch_size
  uint32_t n_embd = 0;            // hidden_size | width | vt_hidden_size
  uint32_t n_ff = 0;              // intermediate_size | vt_intermediate_size
  uint32_t n_layer = 0;           // num_hidden_layers | … | vt_num_hidden_layers
  uint32_t n_head = 0;            // num_attention_heads | num_heads | heads | vt_num_attention_heads
  uint32_t n_head_vt = 0;         // vt_num_attention_heads (head_dim and the Q/K de-interleave)
  uint32_t qkv_width = 0;         // qkv_hidden_size, else vt_hidden_size
  uint32_t head_dim = 0;          // qkv_width / n_head_vt
  uint32_t pos_h = 0, pos_w = 0;  // init_pos_emb_height / _width (64)
  uint32_t merge = 0;             // merge_kernel_size[0] (2), square
  float eps = 1e-5f;              // projector_ln_eps
  uint32_t min_pixels = 0, max_pixels = 0;  // 8 and in_patch_limit (16384) patches
  gguf::Value image_mean, image_std;        // arrays as JSON gives them (F32, or INT32)
};

// `dir` holds config.json and preprocessor_config.json (processor_config.json optional).
K3VisionConfig read_k3_vision_config(const std::string& dir);

std::vector<std::pair<std::string, gguf::Value>> clip_vision_kvs(const K3VisionConfig& c);

}  // namespace k3::tools
