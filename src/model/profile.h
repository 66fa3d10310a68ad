// model/profile: where a forward pass spends its time, by op class (`k3 bench --profile`).
// Contract: attach a ForwardProfile with ForwardHooks::profile; null (the default) costs one
// thread-local pointer test per matmul and per section. forward() then adds its wall time and
// count, each section its wall time (ProfScope, on the thread that runs forward()), and every
// product run through ops::Matmul inside a section its wall time and weight bytes to that
// section's row. Rows are exclusive: sections do not nest. What no section covers (the
// residual adds, the grouping of tokens) is forward time minus the rows' sum. With `pool` set
// (its wait stats on), each section also takes the pool's waits of the dispatches it made, so
// the idle thread time is split by op like the wall time.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/thread_pool.h"

namespace k3::model {

enum class ProfOp : uint8_t {
  embed,          // token embedding rows
  attn_res_norm,  // AttnRes mixes and the RMS norms before each sublayer
  kda,            // KDA sublayers: projections, short conv, the recurrence or its chunked form
  mla,            // MLA sublayers: projections, RoPE, the latent cache, attention
  dense_ffn,      // the dense FFN layers
  moe_input,      // one dispatch: router, latent down-projection, shared gate/up; then top-k
  moe_experts,    // routed experts (store reads included), shared down, latent up-projection
  head,           // final mix, norm and LM head
  count
};
std::string_view prof_op_name(ProfOp op);

struct ForwardProfile {
  struct Row {
    double seconds = 0;         // wall time in the section, its products included
    double matmul_seconds = 0;  // of which in ops::Matmul
    uint64_t matmul_bytes = 0;  // weight bytes those products read
    double matmul_ops = 0;      // their multiply-adds x 2 (rows x cols x tokens x 2)
    uint64_t matmuls = 0;
    ThreadPool::WaitStats waits;  // the pool's dispatches in the section and their lost time
  };
  std::array<Row, static_cast<size_t>(ProfOp::count)> rows{};
  double forward_seconds = 0;
  uint64_t forwards = 0;
  ThreadPool* pool = nullptr;        // null: waits are not split by section
  ThreadPool::WaitStats idle_waits;  // the dispatches made outside every section
  Row& operator[](ProfOp op) { return rows[static_cast<size_t>(op)]; }
  const Row& operator[](ProfOp op) const { return rows[static_cast<size_t>(op)]; }
};

// Makes `p` this thread's profile for the length of one forward() (null: none).
class ProfForward {
 public:
  explicit ProfForward(ForwardProfile* p);
  ~ProfForward();
  ProfForward(const ProfForward&) = delete;
  ProfForward& operator=(const ProfForward&) = delete;

 private:
  ForwardProfile* prev_;
  std::chrono::steady_clock::time_point t0_;
};

// Attributes the time until its end, and the products run meanwhile, to `op`.
class ProfScope {
 public:
  explicit ProfScope(ProfOp op);
  ~ProfScope();
  ProfScope(const ProfScope&) = delete;
  ProfScope& operator=(const ProfScope&) = delete;

 private:
  bool on_;
  ProfOp op_;
  std::chrono::steady_clock::time_point t0_;
};

// For ops::Matmul: true while a profile and a section are active on this thread, then
// prof_matmul adds one product (or one batch of them) to the section.
bool prof_matmul_active();
void prof_matmul(double seconds, uint64_t bytes, double ops, uint64_t n_products);

}  // namespace k3::model
