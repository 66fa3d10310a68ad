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
#include "model/schema.h"

namespace k3::model {

namespace {

uint64_t bytes_of(const WeightView& w, int64_t rows) { return static_cast<uint64_t>(w.row_stride) * rows; }

// The stacked gate/up/down tensors of layer il's routed experts (schema::kExpertTensors order),
// when the source holds them in place (expert e's rows right after expert e-1's): expert 0's
// views, the first slice of each stack of n_expert · rows rows.
struct ExpertStack {
  WeightView first[3];
  int64_t stack_rows[3] = {0, 0, 0};
  bool in_place = false;
  uint64_t bytes() const {
    uint64_t b = 0;
    for (int k = 0; k < 3; ++k) b += bytes_of(first[k], stack_rows[k]);
    return b;
  }
};

ExpertStack expert_stack(const Model& model, uint32_t il) {
  const HParams& hp = model.hparams();
  ExpertSource& src = model.experts();
  const ExpertWeights e0 = src.acquire(il, 0);
  src.release(il, 0);
  ExpertStack s;
  s.first[0] = e0.gate;
  s.first[1] = e0.up;
  s.first[2] = e0.down;
  for (int k = 0; k < 3; ++k) s.stack_rows[k] = s.first[k].rows * hp.n_expert;
  s.in_place = true;
  if (hp.n_expert < 2) return s;
  const ExpertWeights e1 = src.acquire(il, 1);
  src.release(il, 1);
  const WeightView second[3] = {e1.gate, e1.up, e1.down};
  for (int k = 0; k < 3; ++k)
    s.in_place = s.in_place &&
                 static_cast<const uint8_t*>(second[k].data) ==
                     static_cast<const uint8_t*>(s.first[k].data) + s.first[k].row_stride * s.first[k].rows;
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
                          [&](const WeightView& w, schema::Tensor) { bytes += bytes_of(w, w.rows); });
    plan.trunk_bytes += bytes;
    ++plan.layers;
    if (experts_placed(model, p, il)) {
      const ExpertStack s = expert_stack(model, il);
      if (s.in_place) {
        const uint64_t e = s.bytes();
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
    for_each_layer_matrix(W.layers[il], [&](const WeightView& w, schema::Tensor t) {
      products->add(w, w.rows, schema::tensor_name(t, il));
      placed_trunk.push_back(w.data);
    });
    if (experts_placed(model, p, il)) {
      const ExpertStack s = expert_stack(model, il);
      if (!s.in_place) continue;
      for (int k = 0; k < 3; ++k)
        products->add(s.first[k], s.stack_rows[k], schema::tensor_name(schema::kExpertTensors[k], il));
    }
  }
  if (plan.head) {
    products->add(W.output, W.output.rows, schema::tensor_name(schema::Tensor::Output));
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
