// cli/memory_flags: the flags that choose how weights are held in memory, shared by `k3
// run`, `k3 bench` and `k3 serve` (docs/expert-store.md): --ram-budget SIZE streams routed
// experts from disk within SIZE; --mmap (the default) maps the file and leaves residency to
// the page cache. The rest tune the store.
// Contract: to_memory_options() returns an error text (for a usage error, exit code 2) when
// the flags contradict each other or a value does not parse; otherwise fills `out`.
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
};

void add_memory_flags(CLI::App& app, MemoryFlags& f);
std::string to_memory_options(const MemoryFlags& f, store::MemoryOptions& out);

}  // namespace k3::cli
