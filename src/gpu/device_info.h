// gpu/device_info: what the machine's Vulkan devices are, without opening one (k3 --list-devices,
// the load lines, the memory plan's VRAM line).
// Contract: probe_devices() never throws and never aborts: a build without Vulkan, a machine
// without the loader, or a loader without a device gives an empty list and the reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::gpu {

struct DeviceInfo {
  int index = 0;                   // the N of --device N: the order the loader lists them in
  std::string name;                // e.g. "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string kind;                // "discrete", "integrated", "virtual", "cpu" or "other"
  std::string driver;              // driver name and version
  uint32_t api_version = 0;        // VK_MAKE_API_VERSION packing
  uint64_t vram_bytes = 0;         // the largest device-local heap
  uint64_t max_binding_bytes = 0;  // maxStorageBufferRange: one binding sees no more
  uint64_t max_alloc_bytes = 0;    // maxMemoryAllocationSize
  uint32_t subgroup_size = 0;
  uint32_t max_shared_bytes = 0;  // maxComputeSharedMemorySize
  bool fp16 = false;              // shaderFloat16
  bool int8 = false;              // shaderInt8 + 8-bit storage
  bool int_dot = false;           // accelerated 4×8-bit integer dot product
  bool coop_matrix = false;       // VK_KHR_cooperative_matrix
};

struct DeviceProbe {
  std::vector<DeviceInfo> devices;
  std::string why_none;  // set when devices is empty: no Vulkan in this build, no loader, no device
};

DeviceProbe probe_devices();

// Whether this k3 was built with the Vulkan backend (glslc and the headers were found).
bool built_with_vulkan();

// One line per device for --list-devices and the load lines: index, name, kind, VRAM, limits.
std::string describe(const DeviceInfo& d);

}  // namespace k3::gpu
