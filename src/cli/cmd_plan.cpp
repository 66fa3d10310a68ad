// cli/cmd_plan: `k3 plan -m MODEL [--hosts 1,2,4] [host description]` — the cost model of
// tools/plan/cost_model.h: per-rank memory and predicted prefill/decode speed with the bound
// that limits each, for N hosts running the model together (docs/distributed.md). Reads only
// the file's tensor table, so it works on models far larger than this machine.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/legacy_flags.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/file.h"
#include "store/memory_limit.h"
#include "tools/bench/membw.h"
#include "tools/plan/cost_model.h"
#include "tools/split/split.h"

namespace k3::cli {
namespace {

std::vector<int> parse_hosts(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 1 || v > 4096) fail("--hosts: '{}' is not a host count (1..4096)", item);
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) fail("--hosts: give at least one count");
  return out;
}

}  // namespace

int cmd_plan(int argc, char** argv) {
  CLI::App app{"Predict memory per rank and prefill/decode speed for a model on N hosts", "k3 plan"};
  app.footer(
      "The cost model of docs/distributed.md: trunk split by rows across the hosts, routed experts by id,\n"
      "each rank's experts in RAM as far as it allows and streamed from disk beyond. Per decode token:\n"
      "max(memory, compute) + disk stalls + collective latency; the largest term is the bound printed.\n"
      "Unset host values are this machine's: its memory limit (RAM or cgroup), its measured read bandwidth "
      "(cached, as k3 bench).\n"
      "Example (the seed's question): k3 plan -m REAP55.gguf --hosts 1,2,4 --ram 125G --mem-bw 80\n"
      "    --disk-bw 12 --net-gbit 25 --net-latency-us 20");
  std::string model, hosts_s = "1", ram_s;
  double mem_bw = 0, disk_bw = 0, net_gbit = 25, net_lat_us = 20, gops = 0, eff = 0.56;
  int threads = 0;
  int64_t n_ctx = 4096, depth = 0, ubatch = 512;
  bool f32_cache = false, json = false;
  app.add_option("-m,--model", model, "GGUF model (a `k3 synth --sparse` file of the full shape works)")
      ->required();
  app.add_option("--hosts", hosts_s, "host counts, comma separated (one row each)")->capture_default_str();
  app.add_option("--ram", ram_s, "RAM a rank may use, e.g. 125G (default: this machine's)");
  app.add_option("--mem-bw", mem_bw, "memory read bandwidth per host, GB/s (default: measured here)");
  app.add_option("--disk-bw", disk_bw, "disk read bandwidth per host, GB/s (0: the experts must fit in RAM)");
  app.add_option("--net-gbit", net_gbit, "network bandwidth per link, Gbit/s")->capture_default_str();
  app.add_option("--net-latency-us", net_lat_us, "one small message between two hosts, microseconds")
      ->capture_default_str();
  app.add_option("--gops", gops,
                 "int8 operations per second per host, G (default: 65 per thread, measured prefill here)");
  app.add_option("--decode-efficiency", eff,
                 "fraction of the bandwidth decode achieves (k3 bench's roofline fraction)")
      ->capture_default_str();
  app.add_option("-t,--threads", threads, "threads per host, for the defaults (0: this machine's)");
  app.add_option("-c,--ctx-size", n_ctx, "context the state is sized for")->capture_default_str();
  app.add_option("-d,--depth", depth, "decode position: the MLA cache read per token")->capture_default_str();
  app.add_option("--ubatch-size", ubatch, "prefill micro-batch (also -ub)")->capture_default_str();
  app.add_flag("--f32-cache", f32_cache, "an F32 MLA cache (default F16)");
  app.add_flag("--json", json, "JSON: one object per host count");
  std::string gpu_vram;
  double gpu_bw = 1800, gpu_tflops = 60, pcie_gbs = 50, hop_us = 30, gpu_eff = 0.6;
  bool hops_per_layer = false;
  app.add_option(
      "--gpu-vram", gpu_vram,
      "a GPU per host with this much memory (e.g. 96G) holds the trunk, the experts stay on the CPU "
      "(k3 -ngl all --cpu-moe; docs/gpu.md)");
  app.add_option("--gpu-bw", gpu_bw, "with --gpu-vram: its memory bandwidth, GB/s")->capture_default_str();
  app.add_option("--gpu-efficiency", gpu_eff, "with --gpu-vram: fraction of it the products achieve")
      ->capture_default_str();
  app.add_option("--gpu-tflops", gpu_tflops, "with --gpu-vram: its product rate in prefill, TFLOP/s")
      ->capture_default_str();
  app.add_option("--pcie-bw", pcie_gbs, "with --gpu-vram: host<->GPU bandwidth, GB/s")->capture_default_str();
  app.add_option("--pcie-latency-us", hop_us, "with --gpu-vram: one synchronised round trip, microseconds")
      ->capture_default_str();
  app.add_flag(
      "--gpu-hops-per-layer", hops_per_layer,
      "with --gpu-vram: price two crossings per MoE layer (the whole layer on the GPU) instead of one "
      "per group of trunk products that share an input (what k3 runs today)");
  LegacyFlags args(argc, argv, {{"-ub", "--ubatch-size"}});
  if (auto rc = parse_args(app, args.argc(), args.argv())) return *rc;
  if (eff <= 0 || eff > 1) fail("--decode-efficiency must be in (0, 1]");
  if (n_ctx < 1 || depth < 0 || ubatch < 1) fail("-c and -ub must be positive, -d not negative");

  auto f = gguf::GgufFile::open(model);
  tools::PlanOptions o;
  const int t = threads > 0 ? threads : ThreadPool::default_threads();
  o.host.ram = ram_s.empty() ? store::process_memory_limit() : tools::parse_size(ram_s);
  if (mem_bw > 0) {
    o.host.mem_bw = mem_bw * 1e9;
  } else {
    tools::MemBwOptions mo;
    mo.n_threads = t;
    o.host.mem_bw = tools::cached_read_bandwidth(mo, false).bytes_per_s;
  }
  o.host.disk_bw = disk_bw * 1e9;
  o.host.net_bw = net_gbit * 1e9 / 8;
  o.host.net_latency_s = net_lat_us * 1e-6;
  o.host.gops = (gops > 0 ? gops : 65.0 * t) * 1e9;
  o.host.decode_efficiency = eff;
  o.n_ctx = n_ctx;
  o.depth = depth;
  o.ubatch = ubatch;
  o.cache_f16 = !f32_cache;
  if (!gpu_vram.empty()) {
    o.gpu.vram = tools::parse_size(gpu_vram);
    o.gpu.bw = gpu_bw * 1e9;
    o.gpu.efficiency = gpu_eff;
    o.gpu.flops = gpu_tflops * 1e12;
    o.gpu.pcie_bw = pcie_gbs * 1e9;
    o.gpu.hop_latency_s = hop_us * 1e-6;
    o.gpu.hops_per_layer = hops_per_layer;
    if (gpu_bw <= 0 || gpu_eff <= 0 || gpu_eff > 1 || gpu_tflops <= 0 || pcie_gbs <= 0 || hop_us < 0)
      fail("--gpu-bw, --gpu-tflops and --pcie-bw must be positive, --gpu-efficiency in (0, 1]");
  }
  if (!json)
    fmt::print(
        "k3 plan: {} | host: RAM {:.1f} GiB, {:.1f} GB/s memory ({:.0f} % in decode), {:.1f} GB/s disk, "
        "{:.0f} Gbit/s and {:.0f} us network, {:.0f} GOP/s int8 | ctx {} depth {} ub {}\n",
        model, o.host.ram / 1073741824.0, o.host.mem_bw / 1e9, eff * 100, disk_bw, net_gbit, net_lat_us,
        o.host.gops / 1e9, n_ctx, depth, ubatch);
  std::string out = json ? "[" : "";
  bool first = true;
  for (int n : parse_hosts(hosts_s)) {
    o.hosts = n;
    const tools::Prediction p = tools::predict(*f, o);
    if (json) {
      out += (first ? "" : ",") + tools::prediction_json(p);
      first = false;
    } else {
      out += tools::prediction_table(p);
    }
  }
  fmt::print("{}{}\n", out, json ? "]" : "");
  return 0;
}

}  // namespace k3::cli
