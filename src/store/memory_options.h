// store/memory_options: how a command keeps the model's weights in memory — the `--mmap`
// page-cache mode (the mapped GGUF, today's behaviour and the baseline) or a RAM budget
// honoured by the streaming expert store (store/expert_store.h).
// Contract: parse_size() accepts a byte count with an optional K/M/G/T suffix (powers of
// 1024, optional trailing "B" or "iB", case-insensitive, decimals allowed: "5G", "512M",
// "1.5GiB") or "unlimited" (a cache large enough for every expert); anything else throws
// k3::Error naming the flag. The policy names are "lru" and "lfu".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/gpu_placement.h"

namespace k3::store {

enum class Eviction { LRU, LFU };

struct MemoryOptions {
  bool streaming = false;             // false: --mmap (page cache), the default
  uint64_t ram_budget = 0;            // bytes; kUnlimited: cache every expert
  Eviction eviction = Eviction::LFU;  // measured: 2% fewer bytes read than LRU (bench/LADDER.md)
  bool predict = true;                // prefetch the next layer's predicted experts
  // The pread pool decoded 1.2-2.4x faster than io_uring on the ladder machine (bench/LADDER.md).
  bool use_uring = false;  // io_uring reader (the pread pool where io_uring fails)
  int io_depth = 32;       // reads in flight
  // Copy the trunk matrices into huge pages at load (store/resident_trunk.h), when they come
  // to at least trunk_hugepages_min bytes (tests lower it for their small models).
  bool trunk_hugepages = true;
  uint64_t trunk_hugepages_min = uint64_t{64} << 20;
  // In mmap mode, rewrite the routed experts whose type has a decode layout (IQ1_M) into it at
  // load, where the copy fits in half the memory available (store/decode_copy.h).
  bool decode_copy = true;
  // Layers on the GPU (-ngl, --cpu-moe, --device; model/gpu_placement.h): placed by
  // install_store before the trunk and the store, which then leave the placed matrices alone.
  model::GpuPlacement gpu;

  // One rank of a distributed run touches only its rows of the trunk and runs only the experts
  // it owns: the mapping keeps just those resident, where a huge-page copy would hold the whole
  // trunk, and a decode copy every expert, on every rank (docs/distributed.md).
  void for_distributed_rank() {
    trunk_hugepages = false;
    decode_copy = false;
  }
};

constexpr uint64_t kUnlimited = UINT64_MAX;

uint64_t parse_size(std::string_view text, std::string_view flag = "--ram-budget");
std::string format_size(uint64_t bytes);  // "5.00 GiB", "512.0 MiB", "unlimited"
Eviction parse_eviction(std::string_view text);
const char* eviction_name(Eviction e);

}  // namespace k3::store
