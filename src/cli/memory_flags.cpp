// cli/memory_flags: --ram-budget / --mmap and the store's tuning flags (see memory_flags.h).
#include "cli/memory_flags.h"

#include <CLI/CLI.hpp>

#include "core/error.h"

namespace k3::cli {

void add_memory_flags(CLI::App& app, MemoryFlags& f) {
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
  return {};
}

}  // namespace k3::cli
