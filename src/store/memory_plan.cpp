// store/memory_plan: budget arithmetic and the expert layout (see memory_plan.h).
#include "store/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "gguf/file.h"
#include "model/gpu_products.h"
#include "model/hparams.h"
#include "model/model.h"
#include "model/schema.h"
#include "model/scratch.h"
#include "quant/types.h"
#include "store/memory_options.h"

namespace k3::store {
namespace {

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool is_expert_tensor(const std::string& name) { return name.find("_exps.") != std::string::npos; }

// Floats one token of a micro-batch keeps in the forward pass's Scratch: every sublayer's
// buffers are kept for reuse (model/scratch.h), so they add up rather than take turns.
uint64_t work_floats_per_token(const model::HParams& hp, uint64_t n_logits_per_token) {
  const uint64_t E = hp.n_embd, Di = hp.kda_inner(), H = hp.n_head, D = hp.kda_head_dim;
  const uint64_t C = hp.kv_lora_rank, QW = hp.n_embd_head_k_mla, Vh = hp.n_embd_head_v_mla;
  const uint64_t X = hp.n_expert, L = hp.expert_in(), Fe = hp.n_ff_exp;
  const uint64_t banks = hp.attn_res_block_size ? hp.n_layer / hp.attn_res_block_size + 2 : 1;
  const uint64_t kda = 8 * Di + D + H;
  const uint64_t mla = H * (QW + 2 * C + 2 * Vh) + C + hp.n_rot + hp.q_lora_rank;
  const uint64_t moe = 2 * X + 8 * L + 4 * Fe + 2 * E + 2 * hp.n_ff_shexp();
  const uint64_t dense = 2 * static_cast<uint64_t>(hp.n_ff);
  return E * (6 + banks) + kda + mla + moe + dense + n_logits_per_token * hp.n_vocab;
}

}  // namespace

uint64_t work_bytes(const model::HParams& hp, int64_t n_ubatch, int64_t n_ctx, int n_threads) {
  // The widest sublayer at the micro-batch size, plus MLA scores over the context, plus the
  // activation quantization copies, plus each thread's KDA and MLA temporaries (MLA's scores
  // span the context); 25% margin for allocator slack.
  const uint64_t ub = static_cast<uint64_t>(std::max<int64_t>(n_ubatch, 1));
  const uint64_t floats = ub * work_floats_per_token(hp, 1) + static_cast<uint64_t>(n_ctx) * 2 +
                          ub * static_cast<uint64_t>(hp.n_embd) * 2;
  const uint64_t per_thread = (hp.n_kda_layers() ? model::kda_thread_bytes(hp, n_ubatch) : 0) +
                              (hp.n_mla_layers() ? model::mla_thread_bytes(hp, n_ctx) : 0);
  return (floats * 4 + static_cast<uint64_t>(std::max(n_threads, 1)) * per_thread) * 5 / 4;
}

MemoryPlan plan_memory(const model::Model& m, uint64_t budget, const EngineShape& shape) {
  const model::HParams& hp = m.hparams();
  const gguf::GgufFile& f = m.gguf();
  MemoryPlan p;
  p.budget = budget;
  for (const gguf::TensorInfo& t : f.tensors())
    if (is_expert_tensor(t.name)) p.experts_total += t.nbytes;
    else p.trunk += t.nbytes;
  if (m.gpu()) {
    p.vram = std::min(p.trunk, m.gpu()->trunk_bytes());
    p.trunk -= p.vram;
  }

  // Expert layout, shape-checked as the mapped store does.
  p.layers.resize(hp.n_layer);
  const int64_t X = hp.n_expert;
  int64_t in[3], out[3];  // each stack is [in, out, X]
  for (int k = 0; k < 3; ++k) {
    const std::vector<int64_t> ne = model::schema::tensor_shape(model::schema::kExpertTensors[k], hp);
    in[k] = ne[0];
    out[k] = ne[1];
  }
  for (uint32_t il = hp.n_layer_dense_lead; il < hp.n_layer; ++il) {
    LayerExperts& le = p.layers[il];
    le.moe = true;
    uint64_t eb = 0;
    for (int k = 0; k < 3; ++k) {
      const std::string name = model::schema::tensor_name(model::schema::kExpertTensors[k], il);
      const gguf::TensorInfo* t = f.tensor(name);
      if (!t) fail("{}: missing tensor '{}'", f.path(), name);
      if (t->dim(0) != in[k] || t->dim(1) != out[k] || t->dim(2) != X)
        fail("{}: tensor '{}' has shape {}, expected [{}, {}, {}]", f.path(), name, t->shape_string(), in[k],
             out[k], X);
      ExpertTensor& et = le.t[k];
      et.shard = t->shard;
      et.offset = t->file_offset;
      et.slice = quant::row_bytes(t->type, in[k]) * static_cast<uint64_t>(out[k]);
      if (et.slice * static_cast<uint64_t>(X) != t->nbytes)
        fail("{}: tensor '{}' is not {} equal expert slices", f.path(), name, X);
      et.region = round_up(et.slice, kAlign) + kAlign;
      et.type = t->type;
      et.cols = in[k];
      et.rows = out[k];
      eb += et.slice;
      p.region[k] = std::max(p.region[k], et.region);
    }
    p.expert_bytes = std::max(p.expert_bytes, eb);
    p.n_experts += static_cast<uint64_t>(X);
  }
  p.slot_bytes = p.region[0] + p.region[1] + p.region[2];

  // Sequence state at full context.
  const uint64_t row = hp.n_embd_head_k * (shape.cache_f16 ? 2u : 4u);
  const uint64_t kda_state = (3ull * hp.kda_inner() * (hp.ssm_conv_kernel ? hp.ssm_conv_kernel - 1 : 0) +
                              static_cast<uint64_t>(hp.n_head) * hp.kda_head_dim * hp.kda_head_dim) *
                             4;
  p.state = static_cast<uint64_t>(std::max(shape.n_seq, 1)) *
            (hp.n_mla_layers() * row * static_cast<uint64_t>(std::max<int64_t>(shape.n_ctx, 1)) +
             hp.n_kda_layers() * kda_state);
  p.work = work_bytes(hp, shape.n_ubatch, shape.n_ctx, shape.n_threads);
  p.overhead = kOverheadBytes;
  p.app = shape.app_bytes;
  p.app_what = shape.app_what;
  p.app_note = shape.app_note;
  p.disk = shape.disk_bytes;
  p.disk_note = shape.disk_note;

  // The MoE code may hold a group of experts at once (8 today) while the next layer's are read.
  p.min_slots = std::max<uint64_t>(16, 2ull * hp.n_expert_used + 8);
  if (p.n_experts == 0) return p;  // dense model: nothing to stream
  if (budget == kUnlimited) {
    p.slots = p.n_experts;
  } else {
    if (budget < p.minimum_budget())
      fail(
          "--ram-budget {}: too small for this model; the minimum is {} (trunk {} + state {} + "
          "work {} + overhead {}{} + {} expert slots of {}). Raise the budget, shorten -c/--parallel, "
          "or use --mmap",
          format_size(budget), format_size(round_up(p.minimum_budget(), 1 << 20)), format_size(p.trunk),
          format_size(p.state), format_size(p.work), format_size(p.overhead),
          p.app ? fmt::format(" + {} {}", p.app_what, format_size(p.app)) : std::string(), p.min_slots,
          format_size(p.slot_bytes));
    p.slots = std::min<uint64_t>((budget - p.fixed()) / p.slot_bytes, p.n_experts);
  }
  return p;
}

std::string plan_table(const MemoryPlan& p) {
  std::string s = fmt::format("memory plan (--ram-budget {}):\n", format_size(p.budget));
  auto row = [&](const char* what, uint64_t b, const std::string& note) {
    s += fmt::format("  {:<14} {:>12}  {}\n", what, format_size(b), note);
  };
  row("trunk", p.trunk,
      "resident: non-expert weights (matrices copied into huge pages; else page cache, locked when allowed)");
  if (p.vram) row("trunk on GPU", p.vram, "in VRAM (-ngl): not counted in the budget");
  row("state", p.state, "KV/KDA state at full context");
  row("work", p.work, "activation buffers (estimate)");
  row("overhead", p.overhead, "code, heap, threads");
  if (p.app) row(p.app_what.c_str(), p.app, p.app_note);
  row("expert cache", p.cache(),
      fmt::format("{} slots of {} = {:.1f}% of {} experts ({})", p.slots, format_size(p.slot_bytes),
                  100.0 * p.cache_fraction(), p.n_experts, format_size(p.experts_total)));
  row("total", p.total(), fmt::format("minimum budget {}", format_size(p.minimum_budget())));
  if (p.disk) row("prompt disk", p.disk, p.disk_note);
  return s;
}

}  // namespace k3::store
