// probe_devices() with Vulkan: the loader's physical devices and what k3 needs to know of each.
#if K3_HAVE_VULKAN
#include <cstring>
#include <vector>

#include "gpu/device_info.h"
#include "gpu/vulkan/loader.h"
#include "gpu/vulkan/physical.h"

namespace k3::gpu {

namespace vulkan {

std::vector<VkPhysicalDevice> physical_devices() {
  uint32_t n = 0;
  if (vk().vkEnumeratePhysicalDevices(vk().instance, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<VkPhysicalDevice> out(n);
  if (vk().vkEnumeratePhysicalDevices(vk().instance, &n, out.data()) != VK_SUCCESS) return {};
  out.resize(n);
  return out;
}

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vk().vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vk().vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (const VkExtensionProperties& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

DeviceInfo info_of(VkPhysicalDevice pd, int index) {
  DeviceInfo d;
  d.index = index;
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  sub.pNext = &m3;
  m3.pNext = &drv;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  vk().vkGetPhysicalDeviceProperties2(pd, &p2);
  const VkPhysicalDeviceProperties& p = p2.properties;
  d.name = p.deviceName;
  switch (p.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: d.kind = "discrete"; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: d.kind = "integrated"; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: d.kind = "virtual"; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: d.kind = "cpu"; break;
    default: d.kind = "other";
  }
  d.driver = std::string(drv.driverName) + " " + drv.driverInfo;
  d.api_version = p.apiVersion;
  d.max_binding_bytes = p.limits.maxStorageBufferRange;
  d.max_alloc_bytes = m3.maxMemoryAllocationSize;
  d.subgroup_size = sub.subgroupSize;
  d.max_shared_bytes = p.limits.maxComputeSharedMemorySize;

  VkPhysicalDeviceMemoryProperties mem{};
  vk().vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.vram_bytes = std::max<uint64_t>(d.vram_bytes, mem.memoryHeaps[h].size);

  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f12;
  vk().vkGetPhysicalDeviceFeatures2(pd, &f2);
  d.fp16 = f12.shaderFloat16;
  d.int8 = f12.shaderInt8 && f12.storageBuffer8BitAccess;
  if (p.apiVersion >= VK_API_VERSION_1_3 ||
      has_extension(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderIntegerDotProductProperties dot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceProperties2 q{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    q.pNext = &dot;
    vk().vkGetPhysicalDeviceProperties2(pd, &q);
    d.int_dot = dot.integerDotProduct4x8BitPackedMixedSignednessAccelerated;
  }
  d.coop_matrix = has_extension(pd, "VK_KHR_cooperative_matrix");
  return d;
}

}  // namespace vulkan

bool built_with_vulkan() { return true; }

DeviceProbe probe_devices() {
  DeviceProbe out;
  try {
    out.why_none = vulkan::load_loader();
    if (!out.why_none.empty()) return out;
    const std::vector<VkPhysicalDevice> pds = vulkan::physical_devices();
    for (size_t i = 0; i < pds.size(); ++i)
      out.devices.push_back(vulkan::info_of(pds[i], static_cast<int>(i)));
    if (out.devices.empty())
      out.why_none =
          "the Vulkan loader lists no device (is a driver installed? lavapipe: mesa-vulkan-drivers)";
  } catch (const std::exception& e) {
    out.devices.clear();
    out.why_none = e.what();
  }
  return out;
}

}  // namespace k3::gpu
#endif  // K3_HAVE_VULKAN
