// kernels/matmul_detail: pieces of the matmul driver shared with the fused and batched
// kernels (private to kernels/).
// Contract: prepare_activations returns x converted to k's activation format (one row per
// token, act_stride bytes apart), valid until this thread's next call; F32 returns x itself.
// run_rows computes rows
// [r0, r1) of one product (or fused gate/up pair) for all its tokens from converted
// activations: decode (one token) streams each row once; prefill walks the rows in L2-sized
// tiles and meets the tokens kMaxDotTokens at a time, so each weight block is decoded once per
// token group and W leaves memory once per call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/vec_dot.h"

namespace k3::kernels {

inline constexpr size_t kTileBytes = 96 * 1024;       // weight rows per prefill tile (L2)
inline constexpr size_t kMinDecodeBytes = 16 * 1024;  // smallest weight slice worth a thread

const void* prepare_activations(const DotKernel& k, const float* x, int64_t n_tok, int64_t cols,
                                int64_t x_stride, ThreadPool* pool, size_t& act_stride);
// Matmul work is cut into up to this many claimable chunks per thread (k3::parallel_for's
// chunks_per_thread): each thread streams its own run, whose chunks halve in size (1/2, 1/4, ...,
// down to kMinDecodeBytes), and a thread that finishes first steals the small ones from the
// back of the other's run. On bench-m decode (2026-12-03 Intel VM, perf) the threads' idle
// time at the end of products fell from 6.2 % (4 equal chunks) to 5.2 % (4 halving) and
// 2.9-3.1 % (7-10 halving), tg +1.5-2 %.
inline constexpr int kChunksPerThread = 8;

struct RowTask {
  const DotKernel* k = nullptr;
  const WeightView* w = nullptr;
  const WeightView* up = nullptr;  // fused pair when set: y = act_fn(w·x, up·x, act_ctx)
  GateUpFn act_fn = nullptr;
  const void* act_ctx = nullptr;
  const uint8_t* act = nullptr;  // converted activations, act_stride bytes per token
  size_t act_stride = 0;
  int64_t n_tok = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};

void run_rows(const RowTask& t, int64_t r0, int64_t r1);

// The shapes a product relies on (K3_ASSERT, core/assert.h): operands present, weight rows as
// long as their encoding needs, activation and output rows that do not overlap. Strides are
// resolved (no -1).
void check_product(const WeightView& w, const float* x, int64_t n_tok, const float* y, int64_t x_stride,
                   int64_t y_stride);

}  // namespace k3::kernels
