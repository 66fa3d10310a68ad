#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "gpu/device.h"
#include "gpu_fixture.h"

namespace k3::gpu {
namespace {

TEST(GpuDevice, ProbeNamesEveryDeviceOrSaysWhyNone) {
  const DeviceProbe p = probe_devices();
  if (p.devices.empty()) {
    EXPECT_FALSE(p.why_none.empty());
    if (test::gpu_required()) { FAIL() << p.why_none; }
    return;
  }
  for (const DeviceInfo& d : p.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.max_binding_bytes, 0u);
    EXPECT_GT(d.subgroup_size, 0u);
    EXPECT_NE(describe(d).find(d.name), std::string::npos);
  }
}

TEST(GpuDevice, UploadDownloadRoundTripsAcrossStagingChunks) {
  K3_NEED_GPU(dev);
  // Larger than the 64 MiB staging buffer, so the copy takes several chunks.
  std::vector<uint32_t> data((80u << 20) / 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint32_t>(i * 2654435761u);
  Buffer b = dev->alloc(data.size() * 4, "test buffer");
  EXPECT_GE(dev->allocated_bytes(), data.size() * 4);
  dev->upload(b, 0, data.data(), data.size() * 4);
  std::vector<uint32_t> back(data.size());
  dev->download(b, 0, back.data(), back.size() * 4);
  EXPECT_EQ(back, data);
}

TEST(GpuDevice, CopyShaderCopies) {
  K3_NEED_GPU(dev);
  std::vector<uint32_t> src(4096 * 4);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i ^ 0x5a5a5a5a);
  Buffer a = dev->alloc(src.size() * 4, "src"), b = dev->alloc(src.size() * 4, "dst");
  dev->upload(a, 0, src.data(), src.size() * 4);
  Recorder rec(*dev);
  const uint32_t n_vec4 = static_cast<uint32_t>(src.size() / 4);
  rec.dispatch("copy_words", {{&a}, {&b}}, n_vec4, 8);
  dev->submit(rec);
  std::vector<uint32_t> back(src.size());
  dev->download(b, 0, back.data(), back.size() * 4);
  EXPECT_EQ(back, src);
}

TEST(GpuDevice, ErrorsNameTheFault) {
  K3_NEED_GPU(dev);
  try {
    Device::open(1000);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--device 1000"), std::string::npos) << e.what();
  }
  try {
    (void)dev->alloc(size_t{1} << 50, "a huge tensor");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a huge tensor"), std::string::npos) << e.what();
  }
  Recorder rec(*dev);
  Buffer a = dev->alloc(64, "a");
  EXPECT_THROW(rec.dispatch("no_such_shader", {{&a}}, 0u, 1), Error);
  EXPECT_THROW(rec.dispatch("copy_words", {{&a, 32, 64}, {&a}}, 0u, 1), Error);  // range past the end
}

}  // namespace
}  // namespace k3::gpu
