#if K3_HAVE_VULKAN
#include "gpu/vulkan/loader.h"

#include <dlfcn.h>

#include <mutex>

#include "core/error.h"

namespace k3::gpu::vulkan {
namespace {

Fns g_fns;
std::string g_error;
std::once_flag g_once;

std::string load_once() {
  // The soname first (what Debian's libvulkan1 installs); the unversioned name for hosts
  // that ship only the development link.
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fmt::format("the Vulkan loader (libvulkan.so.1) is not installed: {}", dlerror());
  g_fns.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!g_fns.vkGetInstanceProcAddr) return "libvulkan.so.1 has no vkGetInstanceProcAddr";
#define K3_VK_LOAD_GLOBAL(name) \
  g_fns.name = reinterpret_cast<PFN_##name>(g_fns.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  K3_VK_GLOBAL_FNS(K3_VK_LOAD_GLOBAL)
#undef K3_VK_LOAD_GLOBAL
  if (!g_fns.vkCreateInstance) return "the Vulkan loader offers no vkCreateInstance";
  uint32_t version = VK_API_VERSION_1_0;
  if (g_fns.vkEnumerateInstanceVersion) g_fns.vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_2)
    return fmt::format("the Vulkan loader is version {}.{}; k3 needs 1.2", VK_API_VERSION_MAJOR(version),
                       VK_API_VERSION_MINOR(version));
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "k3";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  const VkResult r = g_fns.vkCreateInstance(&ci, nullptr, &g_fns.instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return "the Vulkan loader found no driver (install one: mesa-vulkan-drivers for lavapipe, or the GPU "
           "vendor's; VK_DRIVER_FILES names a driver's JSON)";
  if (r != VK_SUCCESS) return fmt::format("vkCreateInstance failed: {}", result_name(r));
#define K3_VK_LOAD_INSTANCE(name) \
  g_fns.name = reinterpret_cast<PFN_##name>(g_fns.vkGetInstanceProcAddr(g_fns.instance, #name));
  K3_VK_INSTANCE_FNS(K3_VK_LOAD_INSTANCE)
#undef K3_VK_LOAD_INSTANCE
  if (!g_fns.vkGetDeviceProcAddr || !g_fns.vkGetPhysicalDeviceProperties2)
    return "the Vulkan loader lacks Vulkan 1.1 instance functions";
  return {};
}

}  // namespace

const Fns& vk() { return g_fns; }

std::string load_loader() {
  std::call_once(g_once, [] { g_error = load_once(); });
  return g_error;
}

void load_device(VkDevice device) {
#define K3_VK_LOAD_DEVICE(name)                                                        \
  g_fns.name = reinterpret_cast<PFN_##name>(g_fns.vkGetDeviceProcAddr(device, #name)); \
  if (!g_fns.name) fail("the Vulkan driver has no {}", #name);
  K3_VK_DEVICE_FNS(K3_VK_LOAD_DEVICE)
#undef K3_VK_LOAD_DEVICE
}

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
  }
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) fail("{}: {}", what, result_name(r));
}

}  // namespace k3::gpu::vulkan
#endif  // K3_HAVE_VULKAN
