// kernels/matmul_batch: several independent matmuls in one pool dispatch.
// Decode issues many small products (a MoE layer runs 3 per active expert, MLA one per head);
// run one by one, each pays a dispatch and both threads meet at its end. Here the rows of all
// jobs are laid end to end and cut into a few contiguous slices per thread by weight bytes, so
// a thread crosses from one job into the next without waiting.
// Contract: each job computes exactly what matmul (or, with `up` set, matmul_gate_up_situ
// with the job's gate function) computes for it, bit for bit: same kernels, same activation
// rounding, same order per output. Jobs must not write to each other's inputs. Jobs whose
// type has no fast kernel (or whose gate and up types differ) run alone through matmul first.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/matmul.h"

namespace k3::kernels {

struct MatmulJob {
  WeightView w;                    // the weight (the gate of a fused pair)
  const WeightView* up = nullptr;  // fused pair: y = act(w·x, up·x, act_ctx)
  GateUpFn act = nullptr;
  const void* act_ctx = nullptr;
  const float* x = nullptr;
  int64_t n_tok = 0;
  float* y = nullptr;
  int64_t x_stride = -1;  // floats; default w.cols
  int64_t y_stride = -1;  // floats; default w.rows
};

void matmul_batch(std::span<const MatmulJob> jobs, ThreadPool* pool);

}  // namespace k3::kernels
