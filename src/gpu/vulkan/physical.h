// gpu/vulkan/physical: the physical devices the loader lists, and what k3 reads of each.
#pragma once

#include <vector>

#include "gpu/device_info.h"
#include "gpu/vulkan/loader.h"

namespace k3::gpu::vulkan {

std::vector<VkPhysicalDevice> physical_devices();
bool has_extension(VkPhysicalDevice pd, const char* name);
DeviceInfo info_of(VkPhysicalDevice pd, int index);

}  // namespace k3::gpu::vulkan
