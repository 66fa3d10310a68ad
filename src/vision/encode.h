// vision/encode: an image through the tower and projector into the text model's embedding
// space: one row of proj_dim floats per image token, row-major in the merged patch grid
// (top row first). The forward pass is the one docs/vision.md writes out; matrices go through
// kernels::matmul (threaded over the pool), reductions of norms and softmax in double.
// Contract: embed_image throws k3::Error for an image the tower cannot take (empty, or more
// patches than kMaxPatches after the resize); otherwise it cannot fail.
#pragma once

#include <cstdint>
#include <vector>

#include "vision/preprocess.h"
#include "vision/tower.h"

namespace k3 {
class ThreadPool;
}

namespace k3::vision {

// The most patches one image may become (a 3584×4704 image at patch 14 is 86,016/…); the
// published towers' own limit (image_max_pixels) is 16,384 patches.
constexpr int64_t kMaxPatches = 65536;

struct ImageEmbedding {
  int64_t n_tokens = 0, n_embd = 0;
  int64_t grid_w = 0, grid_h = 0;    // the merged token grid: n_tokens = grid_w · grid_h
  int64_t input_w = 0, input_h = 0;  // the image size the tower saw, after preprocessing
  std::vector<float> data;           // n_tokens × n_embd
};

// What preprocessing makes of an image of this size, and how many tokens it becomes.
ImageSize input_size(const Tower& t, ImageSize original);
int64_t image_tokens(const Tower& t, ImageSize original);

ImageEmbedding embed_image(const Tower& t, RgbView img, ThreadPool* pool);

}  // namespace k3::vision
