// gpu::Device with Vulkan: opening a device, buffers, staging copies, pipelines, submission.
#if K3_HAVE_VULKAN
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "gpu/shader_table.h"
#include "gpu/vulkan/device_impl.h"
#include "gpu/vulkan/physical.h"

namespace k3::gpu {

using vulkan::check;
using vulkan::vk;

namespace {

// Large enough that an upload of a weight tensor is a few big copies, small enough to leave
// the device's memory to weights.
constexpr size_t kStagingBytes = 64ull << 20;

uint32_t compute_queue_family(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vk().vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fam(n);
  vk().vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fam.data());
  // A compute-only family first (an async compute queue on discrete GPUs), else any with compute.
  for (uint32_t i = 0; i < n; ++i)
    if ((fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(fam[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) return i;
  for (uint32_t i = 0; i < n; ++i)
    if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return i;
  fail("the Vulkan device has no compute queue");
}

}  // namespace

Device::Impl::~Impl() {
  if (!device) return;
  vk().vkDeviceWaitIdle(device);
  for (auto& [name, p] : pipelines) {
    vk().vkDestroyPipeline(device, p.pipeline, nullptr);
    vk().vkDestroyPipelineLayout(device, p.layout, nullptr);
    vk().vkDestroyDescriptorSetLayout(device, p.set_layout, nullptr);
    vk().vkDestroyShaderModule(device, p.module, nullptr);
  }
  if (staging_map) vk().vkUnmapMemory(device, staging_memory);
  if (staging) vk().vkDestroyBuffer(device, staging, nullptr);
  if (staging_memory) vk().vkFreeMemory(device, staging_memory, nullptr);
  if (fence) vk().vkDestroyFence(device, fence, nullptr);
  if (command_pool) vk().vkDestroyCommandPool(device, command_pool, nullptr);
  vk().vkDestroyDevice(device, nullptr);
}

uint32_t Device::Impl::memory_type(uint32_t bits, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) return i;
  fail("the Vulkan device has no memory type with properties {:#x}", static_cast<unsigned>(want));
}

void Device::Impl::create_buffer(size_t bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags props,
                                 VkBuffer& buf, VkDeviceMemory& mem, std::string_view what) {
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = std::max<size_t>(bytes, 4);
  bi.usage = usage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vk().vkCreateBuffer(device, &bi, nullptr, &buf), "vkCreateBuffer");
  VkMemoryRequirements req{};
  vk().vkGetBufferMemoryRequirements(device, buf, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memory_type(req.memoryTypeBits, props);
  const VkResult r = vk().vkAllocateMemory(device, &ai, nullptr, &mem);
  if (r != VK_SUCCESS) {
    vk().vkDestroyBuffer(device, buf, nullptr);
    buf = VK_NULL_HANDLE;
    fail("GPU {}: cannot allocate {} MiB for {} ({} MiB already allocated): {}", info.index, bytes >> 20,
         what, allocated >> 20, vulkan::result_name(r));
  }
  check(vk().vkBindBufferMemory(device, buf, mem, 0), "vkBindBufferMemory");
}

void Device::Impl::submit_and_wait(VkCommandBuffer cb) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  std::lock_guard lock(mutex);
  check(vk().vkResetFences(device, 1, &fence), "vkResetFences");
  check(vk().vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
  check(vk().vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void Device::Impl::run_now(const std::function<void(VkCommandBuffer)>& fill) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  {
    std::lock_guard lock(mutex);  // the pool is not thread-safe
    check(vk().vkAllocateCommandBuffers(device, &ai, &cb), "vkAllocateCommandBuffers");
  }
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk().vkBeginCommandBuffer(cb, &bi);
  fill(cb);
  vk().vkEndCommandBuffer(cb);
  submit_and_wait(cb);
  std::lock_guard lock(mutex);
  vk().vkFreeCommandBuffers(device, command_pool, 1, &cb);
}

const Pipeline& Device::Impl::pipeline(std::string_view name, uint32_t n_bindings) {
  std::lock_guard lock(mutex);
  auto it = pipelines.find(std::string(name));
  if (it != pipelines.end()) {
    if (it->second.n_bindings != n_bindings)
      fail("GPU shader {} dispatched with {} bindings, first with {}", name, n_bindings,
           it->second.n_bindings);
    return it->second;
  }
  const ShaderBlob* blob = nullptr;
  for (const ShaderBlob& b : shader_table())
    if (name == b.name) blob = &b;
  if (!blob) fail("no GPU shader named {} in this build", name);
  Pipeline p;
  p.n_bindings = n_bindings;
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = blob->bytes;
  mi.pCode = blob->words;
  check(vk().vkCreateShaderModule(device, &mi, nullptr, &p.module), "vkCreateShaderModule");
  std::vector<VkDescriptorSetLayoutBinding> binds(n_bindings);
  for (uint32_t i = 0; i < n_bindings; ++i)
    binds[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = n_bindings;
  li.pBindings = binds.data();
  check(vk().vkCreateDescriptorSetLayout(device, &li, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange pc{VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxPushBytes};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p.set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &pc;
  check(vk().vkCreatePipelineLayout(device, &pl, nullptr, &p.layout), "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = p.module;
  ci.stage.pName = "main";
  ci.layout = p.layout;
  check(vk().vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &ci, nullptr, &p.pipeline),
        "vkCreateComputePipelines");
  return pipelines.emplace(std::string(name), p).first->second;
}

Device::Device() : impl_(std::make_unique<Impl>()) {}
Device::~Device() = default;

std::unique_ptr<Device> Device::open(int index) {
  const std::string why = vulkan::load_loader();
  if (!why.empty()) fail("no GPU: {}", why);
  const std::vector<VkPhysicalDevice> pds = vulkan::physical_devices();
  if (pds.empty()) fail("no GPU: the Vulkan loader lists no device");
  if (index < 0 || static_cast<size_t>(index) >= pds.size())
    fail("--device {}: there are {} Vulkan devices (0 to {}; --list-devices lists them)", index, pds.size(),
         pds.size() - 1);
  std::unique_ptr<Device> d(new Device());
  Impl& m = *d->impl_;
  m.physical = pds[static_cast<size_t>(index)];
  m.info = vulkan::info_of(m.physical, index);
  if (m.info.api_version < VK_API_VERSION_1_2)
    fail("GPU {} ({}) supports Vulkan below 1.2", index, m.info.name);
  vk().vkGetPhysicalDeviceMemoryProperties(m.physical, &m.memory);
  m.queue_family = compute_queue_family(m.physical);
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = m.queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  check(vk().vkCreateDevice(m.physical, &di, nullptr, &m.device), "vkCreateDevice");
  vulkan::load_device(m.device);
  vk().vkGetDeviceQueue(m.device, m.queue_family, 0, &m.queue);
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = m.queue_family;
  check(vk().vkCreateCommandPool(m.device, &cp, nullptr, &m.command_pool), "vkCreateCommandPool");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vk().vkCreateFence(m.device, &fi, nullptr, &m.fence), "vkCreateFence");
  m.staging_bytes = kStagingBytes;
  m.create_buffer(m.staging_bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                  VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, m.staging,
                  m.staging_memory, "the staging buffer");
  void* map = nullptr;
  check(vk().vkMapMemory(m.device, m.staging_memory, 0, VK_WHOLE_SIZE, 0, &map), "vkMapMemory");
  m.staging_map = static_cast<uint8_t*>(map);
  return d;
}

const DeviceInfo& Device::info() const { return impl_->info; }
uint64_t Device::allocated_bytes() const { return impl_->allocated; }

// A storage buffer with memory of `props`, counted in allocated_bytes() when device-local.
Buffer Device::make_buffer(size_t bytes, uint32_t props, std::string_view what) {
  Buffer b;
  VkBuffer buf = VK_NULL_HANDLE;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  impl_->create_buffer(bytes,
                       VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                           VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                       props, buf, mem, what);
  b.dev_ = this;
  b.handle_ = reinterpret_cast<uint64_t>(buf);
  b.memory_ = reinterpret_cast<uint64_t>(mem);
  b.size_ = bytes;
  return b;
}

Buffer Device::alloc(size_t bytes, std::string_view what) {
  if (bytes > impl_->info.max_alloc_bytes && impl_->info.max_alloc_bytes > 0)
    fail("GPU {}: {} needs one allocation of {} MiB; the device allows {} MiB", impl_->info.index, what,
         bytes >> 20, impl_->info.max_alloc_bytes >> 20);
  Buffer b = make_buffer(bytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, what);
  impl_->allocated += bytes;
  return b;
}

Buffer Device::alloc_mapped(size_t bytes, std::string_view what) {
  Buffer b =
      make_buffer(bytes, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, what);
  check(vk().vkMapMemory(impl_->device, reinterpret_cast<VkDeviceMemory>(b.memory_), 0, VK_WHOLE_SIZE, 0,
                         &b.map_),
        "vkMapMemory");
  return b;
}

void Device::upload(const Buffer& dst, size_t offset, const void* src, size_t bytes) {
  if (offset + bytes > dst.size_)
    fail("GPU upload of {} bytes at {} past a buffer of {}", bytes, offset, dst.size_);
  const auto* p = static_cast<const uint8_t*>(src);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(impl_->staging_bytes, bytes - done);
    std::memcpy(impl_->staging_map, p + done, n);
    impl_->run_now([&](VkCommandBuffer cb) {
      VkBufferCopy c{0, offset + done, n};
      vk().vkCmdCopyBuffer(cb, impl_->staging, reinterpret_cast<VkBuffer>(dst.handle_), 1, &c);
    });
    done += n;
  }
}

void Device::download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  if (offset + bytes > src.size_)
    fail("GPU download of {} bytes at {} past a buffer of {}", bytes, offset, src.size_);
  auto* p = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(impl_->staging_bytes, bytes - done);
    impl_->run_now([&](VkCommandBuffer cb) {
      VkBufferCopy c{offset + done, 0, n};
      vk().vkCmdCopyBuffer(cb, reinterpret_cast<VkBuffer>(src.handle_), impl_->staging, 1, &c);
    });
    std::memcpy(p + done, impl_->staging_map, n);
    done += n;
  }
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    this->~Buffer();
    dev_ = o.dev_;
    handle_ = o.handle_;
    memory_ = o.memory_;
    size_ = o.size_;
    map_ = o.map_;
    o.map_ = nullptr;
    o.dev_ = nullptr;
    o.handle_ = o.memory_ = 0;
    o.size_ = 0;
  }
  return *this;
}

Buffer::~Buffer() {
  if (!handle_) return;
  Device::Impl& m = dev_->impl();
  if (map_) vk().vkUnmapMemory(m.device, reinterpret_cast<VkDeviceMemory>(memory_));
  else m.allocated -= size_;
  vk().vkDestroyBuffer(m.device, reinterpret_cast<VkBuffer>(handle_), nullptr);
  vk().vkFreeMemory(m.device, reinterpret_cast<VkDeviceMemory>(memory_), nullptr);
  handle_ = memory_ = 0;
  map_ = nullptr;
}

}  // namespace k3::gpu
#endif  // K3_HAVE_VULKAN
