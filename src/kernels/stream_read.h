// kernels/stream_read: a plain streaming read of a buffer, the probe `k3 bench` measures the
// memory roofline with (tools/bench/membw.cpp). It must read as fast as any decode kernel can:
// x86/stream_read_avx2.cpp keeps four 32-byte loads in flight and optionally prefetches into L2
// as far ahead as the decode kernels do on either vendor (vec_dot.h: decode_prefetch_bytes), so no kernel
// out-prefetches "100 %".
// Contract: returns the sum of the 64-bit words of [p, p + bytes) (wrapping), so the reads
// cannot be dropped; bytes is a multiple of 32 and p 32-byte aligned. prefetch_ahead is one of
// kStreamPrefetchChoices (0: none). stream_read_sum_scalar is the plain-C twin (same sum).
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::kernels {

inline constexpr int kStreamPrefetchChoices[] = {0, 3072, 6144};  // vec_dot.h: Intel's and AMD's

uint64_t stream_read_sum(const void* p, size_t bytes, int prefetch_ahead);
uint64_t stream_read_sum_scalar(const void* p, size_t bytes);

}  // namespace k3::kernels
