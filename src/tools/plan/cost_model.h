// tools/plan/cost_model: what N hosts would do with a model — the memory plan per rank and the
// predicted prefill and decode speed, each with the bound that limits it (`k3 plan`,
// docs/distributed.md).
// Contract: predict() reads only the file's tensor table and hyperparameters (no weights), so
// it works on a model far larger than this machine (a `k3 synth --sparse` file of the full
// shape included). The parallel layout it prices is the one of docs/distributed.md: the trunk
// split by output rows across the ranks (tensor parallel, an all-gather after each projection
// group), the routed experts split by expert id (expert parallel, the chosen experts' latent
// outputs all-gathered per MoE layer), the latent MLA cache whole on every rank.
// Per decode token the time is max(memory, compute) + disk stalls + collective latency, the
// terms added because they are on the critical path one after another; the largest names the
// bound. Prefill prices one micro-batch of `ubatch` tokens the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::gguf {
class GgufFile;
}

namespace k3::tools {

struct HostSpec {
  uint64_t ram = 0;              // bytes a rank may use
  double mem_bw = 0;             // sustained read bandwidth, bytes/s
  double disk_bw = 0;            // O_DIRECT read bandwidth, bytes/s (0: no disk, must fit)
  double net_latency_s = 0;      // one small message, one way
  double net_bw = 0;             // bytes/s per link
  double gops = 0;               // int8 operations per second the cores sustain in prefill
  double decode_efficiency = 0;  // achieved fraction of mem_bw in decode (measured: k3 bench)
};

// A GPU beside each host's CPU (k3 -ngl all --cpu-moe, docs/gpu.md): the trunk in VRAM as far as
// it fits, the routed experts in RAM or streamed. The forward pass k3 runs today crosses PCIe
// once per group of trunk products that share an input (model/gpu_products.h); `hops_per_layer`
// prices the design where only each MoE layer's routed input and sum cross (2 per MoE layer).
struct GpuSpec {
  uint64_t vram = 0;         // bytes; 0: no GPU
  double bw = 0;             // device memory bandwidth, bytes/s
  double efficiency = 0.6;   // achieved fraction of bw in decode products
  double flops = 0;          // dense product rate of the shaders, FLOP/s (prefill)
  double pcie_bw = 0;        // host<->device bytes/s
  double hop_latency_s = 0;  // one synchronised round trip (submit, wait, map)
  bool hops_per_layer = false;
};

struct PlanOptions {
  int hosts = 1;
  HostSpec host;
  int64_t n_ctx = 4096;   // context the state is sized for
  int64_t depth = 0;      // decode position (MLA cache read per token)
  int64_t ubatch = 512;   // prefill micro-batch
  bool cache_f16 = true;  // MLA cache element size
  GpuSpec gpu;
};

struct RankMemory {
  uint64_t trunk = 0, experts = 0, state = 0, work = 0, overhead = 0;
  uint64_t expert_cache = 0;     // expert bytes held in RAM (<= experts)
  double resident_fraction = 0;  // of this rank's experts
  uint64_t total() const { return trunk + expert_cache + state + work + overhead; }
};

struct PhaseCost {
  double t_memory = 0, t_compute = 0, t_disk = 0,
         t_network = 0;                                   // seconds per token (prefill: per micro-batch)
  uint64_t mem_bytes = 0, disk_bytes = 0, net_bytes = 0;  // per rank, same unit
  uint64_t messages = 0;                                  // collectives on the critical path
  double seconds() const;
  double tokens_per_s(int64_t tokens) const { return seconds() > 0 ? tokens / seconds() : 0; }
  std::string bound() const;  // "memory" | "compute" | "disk" | "network latency" | "network bandwidth"
  double t_net_latency = 0, t_net_bandwidth = 0;
  double t_gpu = 0, t_pcie = 0;  // the GPU's share of the trunk, and the crossings to it
  uint64_t gpu_bytes = 0, hops = 0;
};

struct Prediction {
  int hosts = 1;
  RankMemory rank;      // every rank the same (experts split as evenly as ids allow: the largest share)
  bool fits = true;     // the fixed part fits in RAM (else the plan is refused)
  std::string refusal;  // why not
  PhaseCost decode, prefill;
  int64_t ubatch = 0;
  // Model facts used
  uint64_t trunk_bytes = 0, expert_bytes_total = 0, expert_bytes_per_token = 0, trunk_bytes_per_token = 0;
  uint64_t active_params_per_token = 0;
  uint64_t vram_trunk = 0;  // trunk bytes placed on the GPU (0: none)
  uint64_t vram_total = 0;  // with the activation buffers
};

Prediction predict(const gguf::GgufFile& f, const PlanOptions& o);

// The report `k3 plan` prints, and its JSON.
std::string prediction_table(const Prediction& p);
std::string prediction_json(const Prediction& p);

}  // namespace k3::tools
