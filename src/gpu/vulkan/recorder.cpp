// gpu::Recorder with Vulkan: a command buffer of dispatches, with descriptor sets drawn from
// pools that live as long as the recording (reset after each submit).
#if K3_HAVE_VULKAN
#include <vector>

#include "core/error.h"
#include "gpu/vulkan/device_impl.h"

namespace k3::gpu {

using vulkan::check;
using vulkan::vk;

namespace {
// Sets per descriptor pool; a recording that needs more takes another pool.
constexpr uint32_t kSetsPerPool = 256;
constexpr uint32_t kBindingsPerSet = 8;
}  // namespace

struct Recorder::Impl {
  Device::Impl& dev;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  bool open = false;
  std::vector<VkDescriptorPool> pools;
  size_t pool_in_use = 0;     // index into pools
  uint32_t sets_in_pool = 0;  // sets taken from pools[pool_in_use]
  size_t dispatches = 0;

  explicit Impl(Device::Impl& d) : dev(d) {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = dev.command_pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    std::lock_guard lock(dev.mutex);
    check(vk().vkAllocateCommandBuffers(dev.device, &ai, &cb), "vkAllocateCommandBuffers");
  }
  ~Impl() {
    for (VkDescriptorPool p : pools) vk().vkDestroyDescriptorPool(dev.device, p, nullptr);
    std::lock_guard lock(dev.mutex);
    vk().vkFreeCommandBuffers(dev.device, dev.command_pool, 1, &cb);
  }

  void begin() {
    if (open) return;
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vk().vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
    open = true;
  }

  VkDescriptorSet new_set(VkDescriptorSetLayout layout) {
    if (pools.empty() || sets_in_pool == kSetsPerPool) {
      if (!pools.empty()) ++pool_in_use;
      if (pool_in_use == pools.size()) {
        VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kBindingsPerSet};
        VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        pi.maxSets = kSetsPerPool;
        pi.poolSizeCount = 1;
        pi.pPoolSizes = &size;
        VkDescriptorPool pool = VK_NULL_HANDLE;
        check(vk().vkCreateDescriptorPool(dev.device, &pi, nullptr, &pool), "vkCreateDescriptorPool");
        pools.push_back(pool);
      }
      sets_in_pool = 0;
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pools[pool_in_use];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    check(vk().vkAllocateDescriptorSets(dev.device, &ai, &set), "vkAllocateDescriptorSets");
    ++sets_in_pool;
    return set;
  }

  // Every dispatch sees the writes of the ones recorded before it.
  void barrier() {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT;
    vk().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                              &mb, 0, nullptr, 0, nullptr);
  }

  void reset() {
    for (VkDescriptorPool p : pools) vk().vkResetDescriptorPool(dev.device, p, 0);
    pool_in_use = 0;
    sets_in_pool = 0;
    vk().vkResetCommandBuffer(cb, 0);
    open = false;
    dispatches = 0;
  }
};

Recorder::Recorder(Device& dev) : impl_(std::make_unique<Impl>(dev.impl())) {}
Recorder::Recorder(Recorder&&) noexcept = default;
Recorder::~Recorder() = default;
size_t Recorder::dispatches() const { return impl_->dispatches; }

void Recorder::dispatch(std::string_view name, std::initializer_list<BufferRange> bindings, const void* push,
                        size_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  Impl& r = *impl_;
  if (bindings.size() > kBindingsPerSet)
    fail("GPU shader {}: {} bindings, at most {}", name, bindings.size(), kBindingsPerSet);
  if (push_bytes > kMaxPushBytes)
    fail("GPU shader {}: {} bytes of push constants, at most {}", name, push_bytes, kMaxPushBytes);
  const Pipeline& p = r.dev.pipeline(name, static_cast<uint32_t>(bindings.size()));
  r.begin();
  if (r.dispatches > 0) r.barrier();
  const VkDescriptorSet set = r.new_set(p.set_layout);
  VkDescriptorBufferInfo infos[kBindingsPerSet];
  VkWriteDescriptorSet writes[kBindingsPerSet];
  uint32_t i = 0;
  for (const BufferRange& b : bindings) {
    const size_t bytes = b.bytes ? b.bytes : b.buf->size() - b.offset;
    if (b.offset + bytes > b.buf->size() || bytes > r.dev.info.max_binding_bytes)
      fail("GPU shader {}: binding {} of {} bytes at {} (buffer {}, device binding limit {})", name, i, bytes,
           b.offset, b.buf->size(), r.dev.info.max_binding_bytes);
    infos[i] = {reinterpret_cast<VkBuffer>(b.buf->handle_), b.offset, bytes};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
    ++i;
  }
  vk().vkUpdateDescriptorSets(r.dev.device, i, writes, 0, nullptr);
  vk().vkCmdBindPipeline(r.cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vk().vkCmdBindDescriptorSets(r.cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  if (push_bytes)
    vk().vkCmdPushConstants(r.cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push_bytes),
                            push);
  vk().vkCmdDispatch(r.cb, gx, gy, gz);
  ++r.dispatches;
}

void Recorder::copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
                    size_t bytes) {
  Impl& r = *impl_;
  r.begin();
  if (r.dispatches > 0) r.barrier();
  VkBufferCopy c{src_offset, dst_offset, bytes};
  vk().vkCmdCopyBuffer(r.cb, reinterpret_cast<VkBuffer>(src.handle_), reinterpret_cast<VkBuffer>(dst.handle_),
                       1, &c);
  ++r.dispatches;
}

void Device::submit(Recorder& rec) {
  Recorder::Impl& r = *rec.impl_;
  if (!r.open) return;
  check(vk().vkEndCommandBuffer(r.cb), "vkEndCommandBuffer");
  impl_->submit_and_wait(r.cb);
  r.reset();
}

}  // namespace k3::gpu
#endif  // K3_HAVE_VULKAN
