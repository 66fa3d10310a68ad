// store/disk_bw: the disk's sequential read bandwidth as the store sees it — O_DIRECT reads
// of 4 MiB, 8 in flight, through the same Reader back end the store uses.
// Contract: reads up to `max_bytes` from the middle of `path` (never through the page
// cache when O_DIRECT works; `direct` says whether it did) and returns bytes per second.
// Throws k3::Error naming the path when it cannot be opened or read.
#pragma once

#include <cstdint>
#include <string>

namespace k3::store {

struct DiskBw {
  double bytes_per_s = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  bool direct = false;
  std::string backend;
};

DiskBw measure_disk_bw(const std::string& path, uint64_t max_bytes = 1ull << 30, bool use_uring = false);

}  // namespace k3::store
