// store/memory_plan: the up-front memory plan of a streaming run — what a RAM budget has to
// hold and what is left for the expert cache.
// Contract: plan_memory() splits the budget into the resident trunk (every tensor that is
// not a routed expert, embedding table included, read through the page cache), sequence
// state (MLA caches at full context plus KDA state, for every sequence), work buffers (an
// estimate from the widest sublayer at the micro-batch size, with a margin), a fixed process
// overhead, and the expert cache: whole slots of the largest expert (gate+up+down, each
// padded for O_DIRECT alignment). A budget that leaves fewer than min_slots slots throws
// k3::Error that names the minimum budget. An unlimited budget gets one slot per expert.
// The expert layout (per layer: the three tensors' file offsets and per-expert slice
// bytes) is read from the GGUF tensor table and shape-checked like the mapped store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quant/types.h"

namespace k3::model {
class Model;
struct HParams;
}  // namespace k3::model

namespace k3::store {

constexpr uint64_t kAlign = 4096;  // O_DIRECT offset/length/buffer alignment used

struct ExpertTensor {
  uint32_t shard = 0;   // file index in the GGUF set
  uint64_t offset = 0;  // absolute file offset of expert 0's slice
  uint64_t slice = 0;   // bytes per expert
  uint64_t region = 0;  // slot bytes reserved for one slice (aligned span, worst case)
  quant::Type type = quant::Type::F32;
  int64_t cols = 0, rows = 0;  // per expert
};

struct LayerExperts {
  bool moe = false;
  ExpertTensor t[3];  // gate, up, down
};

// What the engine holds; commands take it from their runtime::EngineOptions with shape_of
// (store/engine_shape.h) rather than fill it in by hand.
struct EngineShape {
  int64_t n_ctx = 4096;    // tokens per sequence
  int n_seq = 1;           // sequences held at once
  int64_t n_ubatch = 512;  // tokens per micro-batch
  bool cache_f16 = false;  // MLA cache precision
  int n_threads = 1;       // engine threads (each holds its own sequence-mixing temporaries)
  // What the command holds besides the engine, planned as its own row (k3 serve: the grammar
  // matchers, one per slot, and the server-wide cap on compiled grammars).
  uint64_t app_bytes = 0;
  std::string app_what, app_note;  // the row's name and what it holds
  // The prompt cache's disk tier: its own row, on disk and so outside the total (0: none).
  uint64_t disk_bytes = 0;
  std::string disk_note;
};

struct MemoryPlan {
  uint64_t budget = 0;    // as asked (kUnlimited possible)
  uint64_t trunk = 0;     // resident non-expert tensors (less those on the GPU)
  uint64_t vram = 0;      // trunk matrices on the GPU (-ngl): not counted in the budget
  uint64_t state = 0;     // sequence state at full context
  uint64_t work = 0;      // activation buffers (estimate)
  uint64_t overhead = 0;  // code, heap, threads
  uint64_t app = 0;       // the command's own (EngineShape::app_bytes)
  std::string app_what, app_note;
  uint64_t disk = 0;  // EngineShape::disk_bytes (not RAM: not in total())
  std::string disk_note;
  uint64_t expert_bytes = 0;       // one expert's gate+up+down as stored
  uint64_t region[3] = {0, 0, 0};  // slot bytes for gate, up, down (largest over layers)
  uint64_t slot_bytes = 0;         // one cache slot: the three regions
  uint64_t experts_total = 0;      // all routed-expert bytes in the file
  uint64_t n_experts = 0;          // (layer, expert) pairs
  uint64_t slots = 0;              // cache slots planned
  uint64_t min_slots = 0;
  uint64_t cache() const { return slots * slot_bytes; }
  uint64_t fixed() const { return trunk + state + work + overhead + app; }
  uint64_t total() const { return fixed() + cache(); }
  uint64_t minimum_budget() const { return fixed() + min_slots * slot_bytes; }
  double cache_fraction() const {  // share of all experts the cache can hold
    return n_experts ? static_cast<double>(slots) / static_cast<double>(n_experts) : 0.0;
  }
  std::vector<LayerExperts> layers;
};

MemoryPlan plan_memory(const model::Model& m, uint64_t budget, const EngineShape& shape);

// The parts of the plan that depend on the shape only, shared with `k3 plan`'s cost model:
// the work buffers (estimate) at a micro-batch and context, and the fixed overhead (code,
// heap, threads).
uint64_t work_bytes(const model::HParams& hp, int64_t n_ubatch, int64_t n_ctx, int n_threads = 1);
constexpr uint64_t kOverheadBytes = 96ull << 20;
// A compact table for stderr.
std::string plan_table(const MemoryPlan& p);

}  // namespace k3::store
