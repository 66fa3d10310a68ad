// Test helper: random weight rows in any fast-path encoding, with every scale field set to a
// finite, moderate value so dot products are well conditioned (other bytes fully random).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quant/codec.h"
#include "quant/types.h"

namespace k3::test {

inline void put_f16(uint8_t* p, float v) {
  const uint16_t h = quant::fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

inline std::vector<uint8_t> random_row(quant::Type t, int64_t n, std::mt19937& rng) {
  using quant::Type;
  const auto& info = quant::type_info(t);
  std::vector<uint8_t> row(quant::row_bytes(t, n));
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  if (!info.quantized) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      if (t == Type::F32) std::memcpy(row.data() + 4 * i, &v, 4);
      else {
        const uint16_t h = t == Type::F16 ? quant::fp32_to_fp16(v) : quant::fp32_to_bf16(v);
        std::memcpy(row.data() + 2 * i, &h, 2);
      }
    }
    return row;
  }
  for (auto& b : row) b = static_cast<uint8_t>(byte(rng));
  const size_t bb = info.block_bytes;
  for (size_t off = 0; off < row.size(); off += bb) {
    uint8_t* p = row.data() + off;
    switch (t) {
      case Type::MXFP4: p[0] = static_cast<uint8_t>(120 + byte(rng) % 12); break;
      case Type::Q2_K:
        put_f16(p + 80, scale(rng));
        put_f16(p + 82, scale(rng));
        break;
      case Type::Q3_K: put_f16(p + 108, scale(rng)); break;
      case Type::Q4_K:
      case Type::Q5_K:
        put_f16(p, scale(rng));
        put_f16(p + 2, scale(rng));
        break;
      case Type::Q6_K: put_f16(p + 208, scale(rng)); break;
      case Type::IQ1_M: {
        const uint16_t h = quant::fp32_to_fp16(scale(rng));
        for (int k = 0; k < 4; ++k) {
          uint16_t sc;
          std::memcpy(&sc, p + 48 + 2 * k, 2);
          sc = static_cast<uint16_t>((sc & 0x0FFF) | (((h >> (4 * k)) & 0xF) << 12));
          std::memcpy(p + 48 + 2 * k, &sc, 2);
        }
        break;
      }
      default: put_f16(p, scale(rng)); break;  // d first: Q8_0, Q4_0, IQ*, ...
    }
  }
  return row;
}

inline std::vector<float> random_acts(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = normal(rng);
  return x;
}

}  // namespace k3::test
