// gpu/bandwidth: the device's memory roofline, measured as k3 bench -ngl reports it: a copy kernel
// (gpu/shaders/copy_words.comp) over two buffers, each read and written byte counted.
#pragma once

#include "gpu/device.h"

namespace k3::gpu {

// Bytes/s (read + written) of the best of a few copies of up to 256 MiB (less where the binding
// limit is smaller). Throws k3::Error where the buffers cannot be allocated.
double measure_copy_bandwidth(Device& dev);

}  // namespace k3::gpu
