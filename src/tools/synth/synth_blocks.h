// tools/synth_blocks: random but valid tensor bytes for every GGUF file type, without
// quantizing anything.
// Contract: synth_fill_random() writes n_elements values of `type` into dst
// (row_bytes(type, n) bytes). Float types (F32/F16/BF16/F64) get N(0, rms²) values;
// block types get uniformly random payload bits (every index, sign and sub-scale field of
// every format is valid for any bit pattern) with the block's scale fields (f16 d/dmin, the
// IQ1_M scale nibbles, the MXFP4 E8M0 byte, the NVFP4 UE4M3 bytes) overwritten by a finite
// value chosen so the decoded RMS is about `rms` (within a factor of ~1.5) and the mean
// about zero. Integer types get random small integers. The bytes are a pure function of
// (type, n, rms, seed): independent of the thread count.
#pragma once

#include <cstdint>

#include "quant/types.h"

namespace k3::tools {

void synth_fill_random(quant::Type type, uint8_t* dst, int64_t n_elements, double rms, uint64_t seed);

// Decoded RMS of a random block of `type` when its scale is 1 (the calibration constant
// used above; exposed for tests).
double synth_unit_rms(quant::Type type);

// A small, fast, portable generator (SplitMix64): the same stream on every platform.
struct SplitMix64 {
  uint64_t s;
  explicit SplitMix64(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal();  // standard normal (Box–Muller)
};

// FNV-1a of a string: stable across platforms and runs (std::hash is not).
uint64_t stable_hash(const char* data, size_t n);

}  // namespace k3::tools
