// gpu/vulkan/loader: the Vulkan entry points k3 uses, found at run time in libvulkan.so.1.
// Why not link the loader: a k3 built with Vulkan must still start on a machine without it
// (-ngl then falls back to the CPU and says why), and the CI image and the users' machines
// differ in whether the loader is installed.
// Contract: vk() is the process-wide table; load_loader() fills its global and instance-level
// part once (thread-safe) and returns an empty string, or why Vulkan is unusable.
// load_device() fills the device-level part for one device (k3 opens one device per process).
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace k3::gpu::vulkan {

#define K3_VK_GLOBAL_FNS(X) \
  X(vkCreateInstance)       \
  X(vkEnumerateInstanceVersion)

#define K3_VK_INSTANCE_FNS(X)                 \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define K3_VK_DEVICE_FNS(X)        \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkBindBufferMemory)            \
  X(vkMapMemory)                   \
  X(vkUnmapMemory)                 \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreateDescriptorSetLayout)   \
  X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines)      \
  X(vkDestroyPipeline)             \
  X(vkCreateDescriptorPool)        \
  X(vkDestroyDescriptorPool)       \
  X(vkResetDescriptorPool)         \
  X(vkAllocateDescriptorSets)      \
  X(vkUpdateDescriptorSets)        \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkFreeCommandBuffers)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkResetCommandBuffer)          \
  X(vkCmdBindPipeline)             \
  X(vkCmdBindDescriptorSets)       \
  X(vkCmdPushConstants)            \
  X(vkCmdDispatch)                 \
  X(vkCmdPipelineBarrier)          \
  X(vkCmdCopyBuffer)               \
  X(vkQueueSubmit)                 \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkWaitForFences)               \
  X(vkResetFences)                 \
  X(vkDeviceWaitIdle)

struct Fns {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define K3_VK_DECLARE(name) PFN_##name name = nullptr;
  K3_VK_GLOBAL_FNS(K3_VK_DECLARE)
  K3_VK_INSTANCE_FNS(K3_VK_DECLARE)
  K3_VK_DEVICE_FNS(K3_VK_DECLARE)
#undef K3_VK_DECLARE
  VkInstance instance = VK_NULL_HANDLE;
};

const Fns& vk();
// Loads the library, creates the process's one VkInstance and its instance-level functions.
std::string load_loader();
void load_device(VkDevice device);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" and the like, for error messages.
const char* result_name(VkResult r);
// Throws k3::Error "<what>: <result name>" unless r is VK_SUCCESS.
void check(VkResult r, const char* what);

}  // namespace k3::gpu::vulkan
