#include "gpu/device_info.h"

#include <fmt/format.h>

namespace k3::gpu {

std::string describe(const DeviceInfo& d) {
  std::string caps;
  if (d.fp16) caps += " fp16";
  if (d.int8) caps += " int8";
  if (d.int_dot) caps += " int-dot";
  if (d.coop_matrix) caps += " coop-matrix";
  return fmt::format("Vulkan{}: {} ({}), {} MiB VRAM, binding {} MiB, subgroup {}, shared {} KiB,{}{}",
                     d.index, d.name, d.kind, d.vram_bytes >> 20, d.max_binding_bytes >> 20, d.subgroup_size,
                     d.max_shared_bytes >> 10, caps.empty() ? " no fp16/int8" : "", caps);
}

}  // namespace k3::gpu
