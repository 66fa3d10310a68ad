// cli/memory_flags: the flags that choose how weights are held in memory, shared by `k3
// run`, `k3 bench` and `k3 serve` (docs/expert-store.md): --ram-budget SIZE streams routed
// experts from disk within SIZE; --mmap (the default) maps the file and leaves residency to
// the page cache. The rest tune the store.
// Contract: to_memory_options() returns an error text (for a usage error, exit code 2) when
// the flags contradict each other or a value does not parse; otherwise fills `out`.
// --list-devices prints the Vulkan devices (gpu/device_info.h) and exits.
#pragma once

#include <string>

#include "store/memory_options.h"

namespace CLI {
class App;
}

namespace k3::cli {

struct MemoryFlags {
  std::string ram_budget;
  bool mmap = false;
  std::string eviction = "lfu";
  bool no_prediction = false;
  std::string io = "pread";
  int io_depth = 32;
  bool no_hugepages = false;
  bool no_repack = false;
  // The GPU (docs/gpu.md): llama.cpp's spellings (-ngl -dev -ncmoe: cli/main.cpp).
  std::string n_gpu_layers;  // -ngl: a count, or "all"; empty: none
  std::string device = "0";  // --device: N or VulkanN
  bool cpu_moe = false;
  int n_cpu_moe = 0;
  std::string vram_budget;
};

void add_memory_flags(CLI::App& app, MemoryFlags& f);
// The GPU flags alone (-ngl, --device, --list-devices, --cpu-moe, --n-cpu-moe), for the commands
// without a streaming store (eval-logits, perplexity); add_memory_flags adds them too.
void add_gpu_flags(CLI::App& app, MemoryFlags& f);
std::string to_gpu_placement(const MemoryFlags& f, model::GpuPlacement& out);
// Prints the Vulkan devices and exits (k3 --list-devices, and the flag on every model command).
[[noreturn]] void list_devices();
std::string to_memory_options(const MemoryFlags& f, store::MemoryOptions& out);

}  // namespace k3::cli
