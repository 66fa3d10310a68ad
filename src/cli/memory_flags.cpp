// cli/memory_flags: --ram-budget / --mmap and the store's tuning flags (see memory_flags.h).
#include "cli/memory_flags.h"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <cstdlib>

#include "core/error.h"
#include "gpu/device_info.h"

namespace k3::cli {

void list_devices() {
  const gpu::DeviceProbe p = gpu::probe_devices();
  if (p.devices.empty()) fmt::print("no GPU: {}\n", p.why_none);
  for (const gpu::DeviceInfo& d : p.devices) fmt::print("{}\n  driver: {}\n", gpu::describe(d), d.driver);
  std::exit(0);
}

void add_gpu_flags(CLI::App& app, MemoryFlags& f) {
  // -ngl, -dev and -ncmoe reach here as their long forms (cli/main.cpp rewrites llama.cpp's spellings).
  app.add_option(
      "--n-gpu-layers,--gpu-layers", f.n_gpu_layers,
      "put the first N layers' weights on the GPU (Vulkan), or all of them and the output head "
      "with 'all' (or any N above the layer count, as llama.cpp counts); their products run there. "
      "Without a usable device k3 says why and runs on the CPU (docs/gpu.md)");
  app.add_option("--device", f.device,
                 "the GPU to use: N or VulkanN, as --list-devices numbers them (default 0)");
  app.add_flag_callback("--list-devices", list_devices, "print the Vulkan devices k3 can use, and exit");
  app.add_flag("--cpu-moe", f.cpu_moe,
               "with -ngl: keep every routed expert on the CPU (llama.cpp's -ot exps=CPU): the GPU holds the "
               "trunk, RAM (or the --ram-budget store) the experts");
  app.add_option(
      "--vram-budget", f.vram_budget,
      "with -ngl: use at most SIZE of GPU memory (e.g. 20G); a placement that does not fit is refused "
      "with the largest -ngl that does (default: the device's memory less a reserve)");
  app.add_option("--n-cpu-moe", f.n_cpu_moe,
                 "with -ngl: keep the routed experts of the first N layers on the CPU");
}

namespace {

// "all", or a count; -1: not a count.
int parse_gpu_layers(const std::string& s) {
  if (s == "all") return model::GpuPlacement::kAllLayers;
  try {
    size_t used = 0;
    const long v = std::stol(s, &used);
    if (used == s.size() && v >= 0)
      return static_cast<int>(std::min<long>(v, model::GpuPlacement::kAllLayers));
  } catch (const std::exception&) {}
  return -1;
}

}  // namespace

void add_memory_flags(CLI::App& app, MemoryFlags& f) {
  add_gpu_flags(app, f);
  app.add_option("--ram-budget", f.ram_budget,
                 "stream routed experts from disk, keeping at most SIZE resident (trunk, state, buffers and "
                 "an expert cache; e.g. 5G, 512M, unlimited); the plan is printed and a budget too small "
                 "is refused with the minimum named (docs/expert-store.md)");
  app.add_flag("--mmap", f.mmap, "map the file and let the page cache hold what it can (the default)");
  app.add_option("--expert-eviction", f.eviction,
                 "expert cache policy with --ram-budget: lfu (decayed use frequency) or lru (default lfu)");
  app.add_flag("--no-expert-prediction", f.no_prediction,
               "with --ram-budget: do not prefetch the next layer's predicted experts");
  app.add_option("--expert-io", f.io,
                 "with --ram-budget: pread (a pool of reader threads) or uring (io_uring, else pread) "
                 "(default pread: the faster of the two in bench/LADDER.md)");
  app.add_option("--expert-io-depth", f.io_depth, "with --ram-budget: expert reads in flight (default 32)");
  app.add_flag("--no-hugepages", f.no_hugepages,
               "leave the trunk in the file mapping (4 KiB pages) instead of copying it into transparent "
               "huge pages at load (faster decode; docs/expert-store.md)");
  app.add_flag("--no-repack", f.no_repack,
               "in mmap mode, read the routed IQ1_M experts in the file's layout at decode instead of "
               "rewriting them at load into a layout without table lookups (decode layout: 1.43x their "
               "file size in memory, ~1.9x faster expert products; docs/kernels.md)");
}

std::string to_gpu_placement(const MemoryFlags& f, model::GpuPlacement& out) {
  out = {};
  if (!f.n_gpu_layers.empty()) {
    out.n_gpu_layers = parse_gpu_layers(f.n_gpu_layers);
    if (out.n_gpu_layers < 0) return "-ngl takes a number of layers or 'all', not '" + f.n_gpu_layers + "'";
  }
  std::string dev = f.device;
  if (dev.rfind("Vulkan", 0) == 0) dev = dev.substr(6);
  const int d = parse_gpu_layers(dev);
  if (d < 0 || d >= model::GpuPlacement::kAllLayers)
    return "--device takes N or VulkanN, not '" + f.device + "'";
  out.device = d;
  if (f.n_cpu_moe < 0) return "--n-cpu-moe must be at least 0";
  out.cpu_moe = f.cpu_moe;
  out.n_cpu_moe = f.n_cpu_moe;
  if ((f.cpu_moe || f.n_cpu_moe > 0) && !out.any()) return "--cpu-moe and --n-cpu-moe go with -ngl";
  if (!f.vram_budget.empty()) {
    try {
      out.vram_budget = store::parse_size(f.vram_budget, "--vram-budget");
    } catch (const Error& e) { return e.what(); }
    if (out.vram_budget == store::kUnlimited) out.vram_budget = 0;
  }
  return {};
}

std::string to_memory_options(const MemoryFlags& f, store::MemoryOptions& out) {
  out = {};
  if (f.mmap && !f.ram_budget.empty()) return "--mmap and --ram-budget exclude each other";
  if (f.io != "pread" && f.io != "uring") return "--expert-io must be pread or uring";
  if (f.io_depth < 1 || f.io_depth > 4096) return "--expert-io-depth must be in 1…4096";
  try {
    out.eviction = store::parse_eviction(f.eviction);
    if (!f.ram_budget.empty()) {
      out.streaming = true;
      out.ram_budget = store::parse_size(f.ram_budget);
    }
  } catch (const Error& e) { return e.what(); }
  out.predict = !f.no_prediction;
  out.use_uring = f.io == "uring";
  out.io_depth = f.io_depth;
  out.trunk_hugepages = !f.no_hugepages;
  out.decode_copy = !f.no_repack;
  return to_gpu_placement(f, out.gpu);
}

}  // namespace k3::cli
