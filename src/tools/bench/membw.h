// tools/membw: the machine's sustainable memory read bandwidth, the roofline that
// `k3 bench` compares weight streaming against.
// Contract: measure_read_bandwidth() streams a buffer much larger than the last-level cache
// (in transparent huge pages where the kernel gives them) with n_threads threads (each summing
// its own slice with wide loads, `runs` times plainly and `runs` times with software
// prefetch) and returns the best timing in bytes/s.
// cached_read_bandwidth() keys the result by CPU model + thread count + method version in a
// small JSON file (default ~/.cache/k3/membw.json, or $XDG_CACHE_HOME/k3/…) and
// measures only when the key is missing or remeasure is set; an unreadable or corrupt cache
// is ignored (and rewritten), never fatal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3::tools {

struct MemBwOptions {
  int n_threads = 1;
  size_t buffer_bytes = 0;  // 0: max(512 MiB, 8 × last-level cache)
  int runs = 5;
};

struct MemBw {
  double bytes_per_s = 0;
  size_t buffer_bytes = 0;
  int n_threads = 0;
  std::string cpu;     // CPU model name
  std::string source;  // "measured" | "cache"
};

double measure_read_bandwidth(const MemBwOptions& opt);

// "AMD EPYC 7B13 64-Core Processor" from /proc/cpuinfo ("unknown" if absent).
std::string cpu_model_name();
// Bytes of the last-level cache per /sys (0 if unknown).
size_t last_level_cache_bytes();
// Where the cache lives by default.
std::string default_membw_cache_path();

MemBw cached_read_bandwidth(const MemBwOptions& opt, bool remeasure,
                            const std::string& cache_path = default_membw_cache_path());

}  // namespace k3::tools
