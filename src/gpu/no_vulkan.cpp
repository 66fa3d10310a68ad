// The GPU module of a build without Vulkan (no glslc or no Vulkan headers at build time): no
// device, and the reason, so that -ngl can say why it runs on the CPU.
#if !K3_HAVE_VULKAN
#include "core/error.h"
#include "gpu/device.h"

namespace k3::gpu {

namespace {
constexpr const char* kWhy =
    "this k3 was built without Vulkan (glslc and libvulkan-dev were missing at build time)";
}

DeviceProbe probe_devices() { return {{}, kWhy}; }
bool built_with_vulkan() { return false; }

struct Device::Impl {};
struct Recorder::Impl {};

Buffer& Buffer::operator=(Buffer&&) noexcept { return *this; }
Buffer::~Buffer() = default;
Recorder::Recorder(Device&) {}
Recorder::Recorder(Recorder&&) noexcept = default;
Recorder::~Recorder() = default;
void Recorder::dispatch(std::string_view, std::initializer_list<BufferRange>, const void*, size_t, uint32_t,
                        uint32_t, uint32_t) {}
void Recorder::copy(const Buffer&, size_t, const Buffer&, size_t, size_t) {}
size_t Recorder::dispatches() const { return 0; }
Device::Device() = default;
Device::~Device() = default;
std::unique_ptr<Device> Device::open(int) { fail("no GPU: {}", kWhy); }
const DeviceInfo& Device::info() const {
  static const DeviceInfo none;
  return none;
}
Buffer Device::make_buffer(size_t, uint32_t, std::string_view) { fail("no GPU: {}", kWhy); }
Buffer Device::alloc(size_t, std::string_view) { fail("no GPU: {}", kWhy); }
Buffer Device::alloc_mapped(size_t, std::string_view) { fail("no GPU: {}", kWhy); }
void Device::upload(const Buffer&, size_t, const void*, size_t) {}
void Device::download(const Buffer&, size_t, void*, size_t) {}
void Device::submit(Recorder&) {}
uint64_t Device::allocated_bytes() const { return 0; }

}  // namespace k3::gpu
#endif  // !K3_HAVE_VULKAN
