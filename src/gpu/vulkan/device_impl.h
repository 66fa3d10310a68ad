// gpu/vulkan/device_impl: the state behind gpu::Device and gpu::Recorder (internal to the module).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpu/device.h"
#include "gpu/vulkan/loader.h"

namespace k3::gpu {

struct Pipeline {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t n_bindings = 0;
};

// Push constants: 128 bytes is the least every Vulkan device offers (maxPushConstantsSize).
constexpr uint32_t kMaxPushBytes = 128;

struct Device::Impl {
  DeviceInfo info;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPhysicalDeviceMemoryProperties memory{};
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  uint64_t allocated = 0;  // bytes of device-local buffers alive
  // The host-visible staging buffer of upload/download, mapped for the device's lifetime.
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory = VK_NULL_HANDLE;
  uint8_t* staging_map = nullptr;
  size_t staging_bytes = 0;
  std::mutex mutex;  // pipelines and the queue
  std::unordered_map<std::string, Pipeline> pipelines;

  ~Impl();
  const Pipeline& pipeline(std::string_view name, uint32_t n_bindings);
  // The memory type for `bits` with all of `want`; throws when there is none.
  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags want) const;
  void create_buffer(size_t bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags props, VkBuffer& buf,
                     VkDeviceMemory& mem, std::string_view what);
  // Records with `fill` into a fresh command buffer, submits it and waits.
  void run_now(const std::function<void(VkCommandBuffer)>& fill);
  void submit_and_wait(VkCommandBuffer cb);
};

}  // namespace k3::gpu
