// vision/attention: the tower's bidirectional multi-head self-attention over all patches of an
// image, with 2-D RoPE applied to Q and K first.
// Contract: qkv is n_pos rows of [Q | K | V], each n_head·head_dim wide; rope2d turns Q and K
// in place (per head: the first half by the patch column, the second by the row; adjacent
// pairs (2i, 2i+1) by pos·θ^(−2i/(head_dim/2))). attend writes n_pos rows of n_head·head_dim
// (heads side by side) to out: softmax(QKᵀ/√head_dim)·V, scores in float32 from the
// matmul kernels, the softmax's sum in double. Queries go in blocks so that the score buffer
// stays block × n_pos floats.
#pragma once

#include <cstdint>

namespace k3 {
class ThreadPool;
}

namespace k3::vision {

void rope2d(float* qkv, int64_t n_pos, int64_t grid_w, int64_t n_head, int64_t head_dim, float theta,
            ThreadPool* pool);

void attend(const float* qkv, int64_t n_pos, int64_t n_head, int64_t head_dim, float* out, ThreadPool* pool);

}  // namespace k3::vision
