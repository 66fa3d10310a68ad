#include "model/gpu_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "core/log.h"
#include "gpu/device.h"
#include "gpu/matrix.h"
#include "model/gpu_products.h"
#include "model/model.h"

namespace k3::model {

namespace {

// The matrices of layer il that run as products (vectors stay on the CPU with the
// element-wise work).
void for_each_layer_matrix(const LayerWeights& lw,
                           const std::function<void(const WeightView&, const char*)>& fn) {
  const KdaWeights& k = lw.kda;
  for (auto [w, name] : {std::pair{&k.wq, "attn_q"},
                         {&k.wk, "attn_k"},
                         {&k.wv, "attn_v"},
                         {&k.f_a, "ssm_f_a"},
                         {&k.f_b, "ssm_f_b"},
                         {&k.beta, "ssm_beta"},
                         {&k.g, "ssm_g"},
                         {&k.out, "attn_out"}})
    if (w->data) fn(*w, name);
  const MlaWeights& m = lw.mla;
  for (auto [w, name] : {std::pair{&m.q_a, "attn_q_a"},
                         {&m.q_b, "attn_q_b"},
                         {&m.q, "attn_q"},
                         {&m.kv_a, "attn_kv_a_mqa"},
                         {&m.k_b, "attn_k_b"},
                         {&m.v_b, "attn_v_b"},
                         {&m.gate, "attn_gate"},
                         {&m.out, "attn_output"}})
    if (w->data) fn(*w, name);
  for (auto [w, name] : {std::pair{&lw.dense.gate, "ffn_gate"},
                         {&lw.dense.up, "ffn_up"},
                         {&lw.dense.down, "ffn_down"},
                         {&lw.moe.router, "ffn_gate_inp"},
                         {&lw.moe.routed_down, "ffn_latent_down"},
                         {&lw.moe.routed_up, "ffn_latent_up"},
                         {&lw.moe.shared.gate, "ffn_gate_shexp"},
                         {&lw.moe.shared.up, "ffn_up_shexp"},
                         {&lw.moe.shared.down, "ffn_down_shexp"}})
    if (w->data) fn(*w, name);
}

uint64_t bytes_of(const WeightView& w, int64_t rows) { return static_cast<uint64_t>(w.row_stride) * rows; }

// The stacked gate/up/down tensors of layer il's routed experts, when the source holds them in
// place (expert e's rows right after expert e-1's): expert 0's views and the stack's rows.
struct ExpertStack {
  ExpertWeights first;
  bool in_place = false;
};

ExpertStack expert_stack(const Model& model, uint32_t il) {
  const HParams& hp = model.hparams();
  ExpertStack s;
  ExpertSource& src = model.experts();
  s.first = src.acquire(il, 0);
  src.release(il, 0);
  if (hp.n_expert < 2) return s.in_place = true, s;
  const ExpertWeights second = src.acquire(il, 1);
  src.release(il, 1);
  auto follows = [](const WeightView& a, const WeightView& b) {
    return static_cast<const uint8_t*>(b.data) == static_cast<const uint8_t*>(a.data) + a.row_stride * a.rows;
  };
  s.in_place = follows(s.first.gate, second.gate) && follows(s.first.up, second.up) &&
               follows(s.first.down, second.down);
  return s;
}

bool layer_placed(const Model& model, const GpuPlacement& p, uint32_t il) {
  return p.any() && static_cast<int64_t>(il) < static_cast<int64_t>(p.n_gpu_layers) &&
         il < model.hparams().n_layer;
}

bool experts_placed(const Model& model, const GpuPlacement& p, uint32_t il) {
  return layer_placed(model, p, il) && !model.hparams().is_dense(il) && !p.cpu_moe &&
         static_cast<int>(il) >= p.n_cpu_moe;
}

}  // namespace

GpuPlan plan_gpu(const Model& model, const GpuPlacement& p) {
  GpuPlan plan;
  const HParams& hp = model.hparams();
  const Weights& W = model.weights();
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (!layer_placed(model, p, il)) break;
    uint64_t bytes = 0;
    for_each_layer_matrix(W.layers[il],
                          [&](const WeightView& w, const char*) { bytes += bytes_of(w, w.rows); });
    plan.trunk_bytes += bytes;
    ++plan.layers;
    if (experts_placed(model, p, il)) {
      const ExpertStack s = expert_stack(model, il);
      if (s.in_place) {
        const uint64_t e = bytes_of(s.first.gate, s.first.gate.rows * hp.n_expert) +
                           bytes_of(s.first.up, s.first.up.rows * hp.n_expert) +
                           bytes_of(s.first.down, s.first.down.rows * hp.n_expert);
        plan.expert_bytes += e;
        bytes += e;
        ++plan.expert_layers;
      }
    }
    plan.layer_bytes.push_back(bytes);
  }
  if (p.any() && static_cast<int64_t>(p.n_gpu_layers) > static_cast<int64_t>(hp.n_layer)) {
    plan.head = true;
    plan.trunk_bytes += bytes_of(W.output, W.output.rows);
  }
  return plan;
}

std::string place_on_gpu(Model& model, const GpuPlacement& p) {
  if (!p.any()) return {};
  const gpu::DeviceProbe probe = gpu::probe_devices();
  if (probe.devices.empty()) {
    log::warn("-ngl: no GPU, running on the CPU: {}", probe.why_none);
    return {};
  }
  const GpuPlan plan = plan_gpu(model, p);
  std::unique_ptr<gpu::Device> dev = gpu::Device::open(p.device);
  const gpu::DeviceInfo& info = dev->info();
  // What the driver keeps: 5 %, at least 256 MiB; --vram-budget may ask for less; the
  // activation buffers come out of what is left.
  const uint64_t reserve = std::max<uint64_t>(info.vram_bytes / 20, 256ull << 20);
  const uint64_t device_cap = info.vram_bytes > reserve ? info.vram_bytes - reserve : 0;
  const bool by_budget = p.vram_budget && p.vram_budget < device_cap;
  const uint64_t cap = by_budget ? p.vram_budget : device_cap;
  const uint64_t io = 2 * GpuProducts::kIoBytes;
  const uint64_t usable = cap > io ? cap - io : 0;
  if (plan.total() > usable) {
    uint64_t sum = 0;
    uint32_t fit = 0;
    for (uint64_t b : plan.layer_bytes)
      if ((sum += b) <= usable) ++fit;
    const std::string whence = by_budget ? fmt::format("--vram-budget {} MiB", p.vram_budget >> 20)
                                         : fmt::format("{}'s {} MiB less {} MiB for the driver", info.name,
                                                       info.vram_bytes >> 20, reserve >> 20);
    fail(
        "-ngl {}: the placed weights need {} MiB of GPU memory, and {} MiB is usable ({}, less {} MiB for "
        "activations). -ngl {} fits{}",
        p.n_gpu_layers >= GpuPlacement::kAllLayers ? std::string("all") : std::to_string(p.n_gpu_layers),
        plan.total() >> 20, usable >> 20, whence, io >> 20, fit,
        plan.expert_bytes ? ", or keep the routed experts on the CPU with --cpu-moe" : "");
  }
  auto products = std::make_shared<GpuProducts>(std::move(dev));
  const HParams& hp = model.hparams();
  const Weights& W = model.weights();
  std::vector<const void*> placed_trunk;
  for (uint32_t il = 0; il < plan.layers; ++il) {
    for_each_layer_matrix(W.layers[il], [&](const WeightView& w, const char* name) {
      products->add(w, w.rows, fmt::format("blk.{}.{}", il, name));
      placed_trunk.push_back(w.data);
    });
    if (experts_placed(model, p, il)) {
      const ExpertStack s = expert_stack(model, il);
      if (!s.in_place) continue;
      products->add(s.first.gate, s.first.gate.rows * hp.n_expert, fmt::format("blk.{}.ffn_gate_exps", il));
      products->add(s.first.up, s.first.up.rows * hp.n_expert, fmt::format("blk.{}.ffn_up_exps", il));
      products->add(s.first.down, s.first.down.rows * hp.n_expert, fmt::format("blk.{}.ffn_down_exps", il));
    }
  }
  if (plan.head) {
    products->add(W.output, W.output.rows, "output");
    placed_trunk.push_back(W.output.data);
  }
  const std::string lines = fmt::format(
      "gpu: using {}\n"
      "gpu: offloaded {}/{} layers{} to the GPU: {} MiB of trunk, {} MiB of routed experts ({} layers' "
      "experts on "
      "the GPU); {} MiB of {} MiB allocated\n",
      describe(info), plan.layers, hp.n_layer, plan.head ? " and the output head" : "",
      plan.trunk_bytes >> 20, plan.expert_bytes >> 20, plan.expert_layers,
      products->device().allocated_bytes() >> 20, info.vram_bytes >> 20);
  log::info("{}", lines.substr(0, lines.size() - 1));
  products->set_trunk_bytes(plan.trunk_bytes);
  model.set_gpu(std::move(products), placed_trunk);
  return lines;
}

}  // namespace k3::model
