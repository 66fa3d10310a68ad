// model/gpu_placement: which layers go to the GPU, with llama.cpp's flags (-ngl, --cpu-moe,
// --n-cpu-moe, --device; docs/gpu.md), and putting them there.
// Contract: plan_gpu() counts the bytes each placed matrix needs on the device without touching
// one; place_on_gpu() opens the device, refuses a plan that does not fit its memory (naming
// the largest -ngl that fits), uploads the matrices and attaches them to the model. Layer i is
// placed when i < n_gpu_layers; the output head too when n_gpu_layers exceeds the layer count
// (llama.cpp's count, in which the head is one more layer). The routed experts of a placed layer
// go with it unless cpu_moe, or the layer is among the first n_cpu_moe, or the expert source
// does not hold them in place (the streaming store of --ram-budget). What may be used is the
// device's memory less a reserve for the driver (5 %, at least 256 MiB), or vram_budget when
// smaller; the activation buffers (2 × GpuProducts::kIoBytes) come out of it first.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace k3::model {

class Model;
class GpuProducts;

struct GpuPlacement {
  int n_gpu_layers = 0;  // 0: no GPU; kAllLayers: every layer and the head
  int device = 0;
  bool cpu_moe = false;      // every routed expert on the CPU
  int n_cpu_moe = 0;         // the routed experts of layers 0 … n_cpu_moe-1 on the CPU
  uint64_t vram_budget = 0;  // --vram-budget: bytes k3 may take on the device; 0: the device's own

  static constexpr int kAllLayers = 1 << 30;
  bool any() const { return n_gpu_layers > 0; }
};

struct GpuPlan {
  uint32_t layers = 0;         // trunk layers placed
  uint32_t expert_layers = 0;  // of which with their routed experts
  bool head = false;
  uint64_t trunk_bytes = 0;           // placed trunk matrices (incl. the head)
  uint64_t expert_bytes = 0;          // placed routed experts
  std::vector<uint64_t> layer_bytes;  // per placed layer, trunk + experts, for the refusal
  uint64_t total() const { return trunk_bytes + expert_bytes; }
};

GpuPlan plan_gpu(const Model& model, const GpuPlacement& p);

// Returns the load lines' text (device, layers, MiB), already logged. Throws k3::Error when the
// device cannot be opened or the plan does not fit.
std::string place_on_gpu(Model& model, const GpuPlacement& p);

}  // namespace k3::model
