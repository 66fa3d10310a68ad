// kernels/matmul_detail: pieces of the matmul driver shared with the fused kernels
// (private to kernels/).
// Contract: prepare_activations returns x converted to k's activation format (one row per
// token, act_stride bytes apart), valid until this thread's next call; F32 returns x itself.
// run_parallel runs fn over [0, n) on the pool, or inline without one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/vec_dot.h"

namespace k3::kernels {

inline constexpr size_t kTileBytes = 96 * 1024;        // weight rows per prefill tile (L2)
inline constexpr size_t kMinDecodeBytes = 16 * 1024;   // smallest weight slice worth a thread

const void* prepare_activations(const DotKernel& k, const float* x, int64_t n_tok, int64_t cols,
                                int64_t x_stride, ThreadPool* pool, size_t& act_stride);
void run_parallel(ThreadPool* pool, int64_t n, int64_t grain, const ThreadPool::RangeFn& fn);

}  // namespace k3::kernels
