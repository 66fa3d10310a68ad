#include "gpu/bandwidth.h"

#include <algorithm>
#include <chrono>

namespace k3::gpu {

double measure_copy_bandwidth(Device& dev) {
  const size_t bytes = std::min<size_t>(256ull << 20, dev.info().max_binding_bytes) & ~size_t{15};
  Buffer a = dev.alloc(bytes, "bandwidth test"), b = dev.alloc(bytes, "bandwidth test");
  Recorder rec(dev);
  const uint32_t n_vec4 = static_cast<uint32_t>(bytes / 16);
  const uint32_t groups = std::min<uint32_t>(65535, (n_vec4 + 255) / 256);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {  // the first run also warms the pipeline up
    rec.dispatch("copy_words", {{&a}, {&b}}, n_vec4, groups);
    const auto t0 = std::chrono::steady_clock::now();
    dev.submit(rec);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(bytes) / best;
}

}  // namespace k3::gpu
