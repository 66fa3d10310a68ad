// gpu/device: one opened Vulkan device, its buffers, and the recording of compute work.
// Contract: Device::open throws k3::Error naming the device and the failing call; so do the
// allocations (with the bytes asked and what they were for). Work is recorded into a Recorder
// (dispatches of named shaders from gpu/shader_table.h over buffer ranges, with push constants)
// and runs on submit(), which waits: the host synchronises once per submission, not per op.
// Consecutive dispatches in one Recorder are ordered by a memory barrier (each sees the writes of
// the ones before). Buffers are device-local; upload/download go through a host-visible staging
// buffer. No Vulkan type appears here, so including this header costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>

#include "gpu/device_info.h"

namespace k3::gpu {

class Device;

// A device-local storage buffer. Move-only; freed with its Device still alive.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  size_t size() const { return size_; }
  explicit operator bool() const { return handle_ != 0; }
  // Host address of a buffer from Device::alloc_mapped (null for device-local buffers).
  void* mapped() const { return map_; }

 private:
  friend class Device;
  friend class Recorder;
  Device* dev_ = nullptr;
  uint64_t handle_ = 0;  // VkBuffer
  uint64_t memory_ = 0;  // VkDeviceMemory
  size_t size_ = 0;
  void* map_ = nullptr;
};

// bytes == 0: from offset to the end of the buffer.
struct BufferRange {
  const Buffer* buf = nullptr;
  size_t offset = 0;
  size_t bytes = 0;
};

class Recorder {
 public:
  explicit Recorder(Device& dev);
  Recorder(Recorder&&) noexcept;
  ~Recorder();

  // Runs shader `name` over gx·gy·gz workgroups with bindings 0.. = `bindings` and the push
  // constants `push` (at most 128 bytes, the minimum every device offers).
  void dispatch(std::string_view name, std::initializer_list<BufferRange> bindings, const void* push,
                size_t push_bytes, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1);
  template <class Push>
  void dispatch(std::string_view name, std::initializer_list<BufferRange> bindings, const Push& push,
                uint32_t gx, uint32_t gy = 1, uint32_t gz = 1) {
    dispatch(name, bindings, &push, sizeof(Push), gx, gy, gz);
  }
  void copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset, size_t bytes);
  size_t dispatches() const;

 private:
  friend class Device;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Device {
 public:
  // Opens device `index` of probe_devices(); throws k3::Error when there is none or it fails.
  static std::unique_ptr<Device> open(int index);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const;

  // what: named in the error when the device is out of memory.
  Buffer alloc(size_t bytes, std::string_view what);
  // A host-visible, coherent buffer, mapped for its lifetime: activations that cross between
  // the CPU and the device are written and read there, and copied on the device's side.
  Buffer alloc_mapped(size_t bytes, std::string_view what);
  void upload(const Buffer& dst, size_t offset, const void* src, size_t bytes);
  void download(const Buffer& src, size_t offset, void* dst, size_t bytes);

  // Runs the recorded work and waits for it; the recorder is then empty and can record again.
  void submit(Recorder& rec);

  uint64_t allocated_bytes() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  Device();
  Buffer make_buffer(size_t bytes, uint32_t props, std::string_view what);
  friend class Buffer;
  std::unique_ptr<Impl> impl_;
};

}  // namespace k3::gpu
