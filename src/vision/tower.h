// vision/tower: a Kimi-K3 vision tower (MoonViT-3d, image path, and its patch-merger projector)
// loaded from an mmproj GGUF (`clip.projector_type = kimik3`; keys and tensors: docs/vision.md).
// Contract: open() validates every key the forward pass reads and every tensor's name, type and
// shape, and throws k3::Error naming the file and the fault; a Tower that opened is safe to
// run on any image. Matrices stay in the mapped file in their stored type (F32, F16, BF16 or
// Q8_0); vectors (norms, biases, the position grid) are decoded to float once. Immutable after
// open: one Tower serves any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/matmul.h"

namespace k3::gguf {
class GgufFile;
}

namespace k3::vision {

struct TowerHparams {
  uint32_t patch = 0;     // clip.vision.patch_size: pixels per patch side
  uint32_t n_embd = 0;    // clip.vision.embedding_length
  uint32_t n_layer = 0;   // clip.vision.block_count
  uint32_t n_head = 0;    // clip.vision.attention.head_count
  uint32_t head_dim = 0;  // clip.vision.attention.head_dim (n_head · head_dim is the QKV width)
  uint32_t n_ff = 0;      // clip.vision.feed_forward_length
  uint32_t merge = 0;     // clip.vision.projector.scale_factor: m×m patches become one token
  uint32_t proj_dim = 0;  // the text model's embedding length (mm.2 rows)
  uint32_t proj_ff = 0;   // mm.1 rows
  uint32_t grid_h = 0;    // the learned position grid (v.position_embd: [n_embd, grid_w, grid_h])
  uint32_t grid_w = 0;
  float eps = 1e-5f;        // clip.vision.attention.layer_norm_epsilon (every RMSNorm)
  uint32_t min_pixels = 0;  // clip.vision.image_{min,max}_pixels: the resize's pixel budget
  uint32_t max_pixels = 0;
  float mean[3] = {0, 0, 0};  // clip.vision.image_mean / image_std, per RGB channel
  float std[3] = {1, 1, 1};
  float rope_theta = 10000.0f;

  uint32_t qkv_width() const { return n_head * head_dim; }
  uint32_t align() const { return patch * merge; }  // image sides are multiples of this
};

// One encoder block. A bias or norm vector that the file does not have is empty.
struct TowerLayer {
  kernels::WeightView qkv, out, up, down;  // [n_embd→3·qkv], [qkv→n_embd], [n_embd→n_ff], [n_ff→n_embd]
  std::vector<float> ln1, ln2;
  std::vector<float> qkv_b, out_b, up_b, down_b;
};

class Tower {
 public:
  static std::unique_ptr<Tower> open(const std::string& path);
  ~Tower();

  const TowerHparams& hp() const { return hp_; }
  const std::string& path() const { return path_; }
  const std::string& weight_type() const { return weight_type_; }  // "F32", "F16", … of the matrices

  kernels::WeightView patch_embd;  // [3·p·p → n_embd], input order (channel, row, column)
  std::vector<float> patch_bias;   // n_embd or empty
  std::vector<float> pos_grid;     // grid_h × grid_w × n_embd
  std::vector<TowerLayer> layers;
  std::vector<float> post_ln;       // n_embd or empty (v.post_ln)
  kernels::WeightView mm1, mm2;     // [m²·n_embd → proj_ff], [proj_ff → proj_dim]
  std::vector<float> mm_post_norm;  // proj_dim

 private:
  Tower() = default;
  std::unique_ptr<gguf::GgufFile> file_;
  std::string path_, weight_type_;
  TowerHparams hp_;
  friend class TowerBinder;
};

}  // namespace k3::vision
