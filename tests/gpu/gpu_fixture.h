// The one GPU device the gpu tests share (opening a Vulkan device costs ~100 ms on lavapipe).
// In a build with Vulkan a missing device fails the tests (CI installs lavapipe, and a GPU test
// that silently skipped there would prove nothing); K3_ALLOW_NO_GPU=1 lets them skip instead.
// A build without Vulkan skips them.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "gpu/device.h"

namespace k3::gpu::test {

inline Device* shared_device() {
  static std::unique_ptr<Device> dev = [] {
    std::unique_ptr<Device> d;
    const DeviceProbe probe = probe_devices();
    if (!probe.devices.empty()) d = Device::open(0);
    return d;
  }();
  return dev.get();
}

inline bool gpu_required() {
  const char* v = std::getenv("K3_ALLOW_NO_GPU");
  return built_with_vulkan() && !(v && std::string(v) == "1");
}

#define K3_NEED_GPU(dev)                                                                                  \
  ::k3::gpu::Device* dev = ::k3::gpu::test::shared_device();                                              \
  if (!dev) {                                                                                             \
    if (::k3::gpu::test::gpu_required()) { FAIL() << "no GPU: " << ::k3::gpu::probe_devices().why_none; } \
    GTEST_SKIP() << "no GPU: " << ::k3::gpu::probe_devices().why_none;                                    \
  }

}  // namespace k3::gpu::test
