// tools/synth_blocks: random valid blocks per type (see synth_blocks.h). The block layouts
// (where each format keeps its scale) are those of ggml's ggml-common.h (docs/quant-formats.md).
#include "tools/synth/synth_blocks.h"

#include <algorithm>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.h"
#include "quant/blocks.h"
#include "quant/codec.h"

namespace k3::tools {

using quant::Type;

double SplitMix64::normal() {
  // Box–Muller with u1 in (0, 1] so log() is finite.
  double u1 = 1.0 - uniform();
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

uint64_t stable_hash(const char* data, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint8_t>(data[i]);
    h *= 0x100000001B3ull;
  }
  return h;
}

// Decoded RMS at scale 1 of a block with uniformly random payload, derived from each
// format's decode formula: E[(scale multiplier)²]·E[(code value)²] with uniform fields, and
// for the formats with a min (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) the min chosen to centre the
// values (see set_scales). Checked against the real decoders in tests/tools/synth.
double synth_unit_rms(Type t) {
  switch (t) {
    case Type::Q4_0: return 4.64;  // q-8, q in 0..15
    case Type::Q4_1: return 4.61;  // q-7.5
    case Type::Q5_0: return 9.25;  // q-16, q in 0..31
    case Type::Q5_1: return 9.23;
    case Type::Q8_0: return 73.9;    // int8
    case Type::Q2_K: return 13.9;    // sc·q − 1.5·mn
    case Type::Q3_K: return 43.3;    // s in −32..31, q in −4..3
    case Type::Q4_K: return 272.0;   // sc·q − 7.5·m
    case Type::Q5_K: return 530.0;   // sc·q − 15.5·m
    case Type::Q6_K: return 1366.0;  // int8 scale × (q−32)
    case Type::IQ2_XXS:
    case Type::IQ2_XS:
    case Type::IQ2_S: return 67.0;     // coords {8,25,43}, (2s+1)/8, s 0..15
    case Type::IQ3_XXS: return 172.0;  // coords 4..62, (0.5+s)/2
    case Type::IQ3_S: return 170.0;    // coords 1..15, 1+2s
    case Type::IQ1_S:
    case Type::IQ1_M: return 7.6;      // (±1|0)±1/8, 2s+1, s 0..7
    case Type::IQ4_NL: return 67.4;    // kvalues_iq4nl
    case Type::IQ4_XS: return 1246.0;  // kvalues_iq4nl × (ls−32)
    case Type::TQ1_0: return 0.82;     // trits
    case Type::TQ2_0: return 0.866;    // q−1 with q in {0,1,2} (see balance_2bit)
    case Type::MXFP4:
    case Type::NVFP4: return 5.85;  // kvalues_fp4 (the doubled E2M1 table), at half-scale 1
    case Type::Q1_0: return 1.0;
    case Type::Q2_0: return 0.866;
    default: return 1.0;
  }
}

namespace {

void put_f16(uint8_t* p, float v) {
  uint16_t h = quant::fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// The E8M0 byte e with 2^(e-128) closest to `half` (ggml decodes MXFP4 scales at half value).
uint8_t e8m0_for(double half) {
  double e = std::round(std::log2(std::max(half, 1e-30))) + 128.0;
  return static_cast<uint8_t>(std::clamp(e, 1.0, 254.0));
}

// The UE4M3 byte whose half value (as ggml decodes it) is closest to `half`.
uint8_t ue4m3_for(double half) {
  uint8_t best = 1;
  double best_err = 1e300;
  for (int code = 1; code < 0x7F; ++code) {
    int exp = (code >> 3) & 0xF, man = code & 7;
    double v = exp == 0 ? man * std::ldexp(1.0, -9) : (1.0 + man / 8.0) * std::ldexp(1.0, exp - 7);
    double err = std::fabs(std::log(v * 0.5) - std::log(std::max(half, 1e-30)));
    if (err < best_err) best_err = err, best = static_cast<uint8_t>(code);
  }
  return best;
}

// Overwrites the scale fields of one block so it decodes with scale `d`. Where each format
// keeps them is quant/blocks.h's layout (offsetof its fields).
void set_scales(Type t, uint8_t* b, float d, uint8_t e8m0, uint8_t ue4m3) {
  namespace blk = quant::blk;
  switch (t) {
    case Type::Q4_0:
    case Type::Q5_0:
    case Type::Q8_0:
    case Type::IQ4_NL:
    case Type::Q1_0:
    case Type::Q2_0:
    case Type::IQ2_XXS:
    case Type::IQ2_XS:
    case Type::IQ2_S:
    case Type::IQ3_XXS:
    case Type::IQ3_S:
    case Type::IQ4_XS:
    case Type::IQ1_S: put_f16(b, d); return;  // d is every one's first field
    case Type::Q4_1:
      put_f16(b + offsetof(blk::Q4_1, d), d);
      put_f16(b + offsetof(blk::Q4_1, m), -7.5f * d);
      return;
    case Type::Q5_1:
      put_f16(b + offsetof(blk::Q5_1, d), d);
      put_f16(b + offsetof(blk::Q5_1, m), -15.5f * d);
      return;
    case Type::Q2_K:
      put_f16(b + offsetof(blk::Q2_K, d), d);
      put_f16(b + offsetof(blk::Q2_K, dmin), 1.5f * d);
      return;
    case Type::Q3_K: put_f16(b + offsetof(blk::Q3_K, d), d); return;
    case Type::Q4_K:
      put_f16(b + offsetof(blk::Q4_K, d), d);
      put_f16(b + offsetof(blk::Q4_K, dmin), 7.5f * d);
      return;
    case Type::Q5_K:
      put_f16(b + offsetof(blk::Q5_K, d), d);
      put_f16(b + offsetof(blk::Q5_K, dmin), 15.5f * d);
      return;
    case Type::Q6_K: put_f16(b + offsetof(blk::Q6_K, d), d); return;
    case Type::TQ1_0: put_f16(b + offsetof(blk::TQ1_0, d), d); return;
    case Type::TQ2_0: put_f16(b + offsetof(blk::TQ2_0, d), d); return;
    case Type::IQ1_M: {
      // The f16 scale lives in the top nibble of each of the four u16 scale words.
      const uint16_t bits = quant::fp32_to_fp16(d);
      uint8_t* words = b + offsetof(blk::IQ1_M, scales);
      for (int i = 0; i < 4; ++i) {
        const uint16_t w = blk::load_u16(words + 2 * i);
        blk::store_u16(words + 2 * i,
                       static_cast<uint16_t>((w & 0x0FFF) | (((bits >> (4 * i)) & 0xF) << 12)));
      }
      return;
    }
    case Type::MXFP4: b[offsetof(blk::MXFP4, e)] = e8m0; return;
    case Type::NVFP4: std::memset(b + offsetof(blk::NVFP4, d), ue4m3, sizeof(blk::NVFP4::d)); return;
    default: return;
  }
}

void fill_bytes(SplitMix64& rng, uint8_t* p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t r = rng.next();
    std::memcpy(p + i, &r, 8);
  }
  if (i < n) {
    uint64_t r = rng.next();
    std::memcpy(p + i, &r, n - i);
  }
}

// TQ2_0 and Q2_0 decode 2-bit codes as q−1, so uniform codes would average +0.5·d; code 3
// is redrawn as 0 or 2, giving −1, 0, +1 with probabilities 3/8, 1/4, 3/8 (mean zero).
void balance_2bit(uint8_t* p, size_t n, SplitMix64& rng) {
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = rng.next();
    uint8_t b = p[i];
    for (int k = 0; k < 4; ++k)
      if (((b >> (2 * k)) & 3) == 3) b = static_cast<uint8_t>(b & ~(((r >> k) & 1 ? 1 : 3) << (2 * k)));
    p[i] = b;
  }
}

// One chunk's stream: independent of how chunks are spread over threads.
SplitMix64 chunk_rng(uint64_t seed, uint64_t chunk) {
  SplitMix64 mix(seed ^ (chunk * 0xD1B54A32D192ED03ull));
  return SplitMix64(mix.next());
}

void fill_float_chunk(Type t, uint8_t* dst, int64_t begin, int64_t end, double rms, SplitMix64& rng) {
  for (int64_t i = begin; i < end; ++i) {
    double v = rng.normal() * rms;
    switch (t) {
      case Type::F32: {
        float f = static_cast<float>(v);
        std::memcpy(dst + 4 * i, &f, 4);
        break;
      }
      case Type::F64: std::memcpy(dst + 8 * i, &v, 8); break;
      case Type::F16: put_f16(dst + 2 * i, static_cast<float>(v)); break;
      case Type::BF16: {
        uint16_t h = quant::fp32_to_bf16(static_cast<float>(v));
        std::memcpy(dst + 2 * i, &h, 2);
        break;
      }
      case Type::I8: {
        int8_t x = static_cast<int8_t>(rng.next() % 7) - 3;
        std::memcpy(dst + i, &x, 1);
        break;
      }
      case Type::I16: {
        int16_t x = static_cast<int16_t>(rng.next() % 7) - 3;
        std::memcpy(dst + 2 * i, &x, 2);
        break;
      }
      case Type::I32: {
        int32_t x = static_cast<int32_t>(rng.next() % 7) - 3;
        std::memcpy(dst + 4 * i, &x, 4);
        break;
      }
      case Type::I64: {
        int64_t x = static_cast<int64_t>(rng.next() % 7) - 3;
        std::memcpy(dst + 8 * i, &x, 8);
        break;
      }
      default: break;
    }
  }
}

template <typename Fn>
void run_chunks(int64_t n_chunks, uint64_t total_bytes, const Fn& fn) {
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  int64_t n_threads = total_bytes < (64u << 20) ? 1 : std::min<int64_t>({hw, 8, n_chunks});
  if (n_threads <= 1) {
    for (int64_t c = 0; c < n_chunks; ++c) fn(c);
    return;
  }
  std::vector<std::thread> ts;
  for (int64_t k = 0; k < n_threads; ++k)
    ts.emplace_back([&, k] {
      for (int64_t c = k; c < n_chunks; c += n_threads) fn(c);
    });
  for (auto& th : ts) th.join();
}

}  // namespace

void synth_fill_random(Type type, uint8_t* dst, int64_t n, double rms, uint64_t seed) {
  const quant::TypeInfo& ti = quant::type_info(type);
  if (!ti.file_type) fail("synth: type {} cannot be stored in a GGUF file", ti.name);
  if (n % ti.block_elems != 0)
    fail("synth: {} elements is not a multiple of {}'s block of {}", n, ti.name, ti.block_elems);
  if (!ti.quantized) {
    constexpr int64_t kChunk = 1 << 18;
    int64_t n_chunks = (n + kChunk - 1) / kChunk;
    run_chunks(n_chunks, static_cast<uint64_t>(n) * ti.block_bytes, [&](int64_t c) {
      SplitMix64 rng = chunk_rng(seed, static_cast<uint64_t>(c));
      fill_float_chunk(type, dst, c * kChunk, std::min(n, (c + 1) * kChunk), rms, rng);
    });
    return;
  }
  const int64_t n_blocks = n / ti.block_elems;
  const size_t bb = ti.block_bytes;
  const double unit = synth_unit_rms(type);
  // Scale for the f16 fields; for MXFP4/NVFP4 the scale is a power-of-two or UE4M3 byte.
  const float d = static_cast<float>(rms / unit);
  const uint8_t e8 = e8m0_for(rms / unit);
  const uint8_t ue = ue4m3_for(rms / unit);
  constexpr int64_t kChunkBlocks = 1 << 14;
  int64_t n_chunks = (n_blocks + kChunkBlocks - 1) / kChunkBlocks;
  run_chunks(n_chunks, static_cast<uint64_t>(n_blocks) * bb, [&](int64_t c) {
    SplitMix64 rng = chunk_rng(seed, static_cast<uint64_t>(c));
    int64_t b0 = c * kChunkBlocks, b1 = std::min(n_blocks, b0 + kChunkBlocks);
    uint8_t* p = dst + b0 * bb;
    fill_bytes(rng, p, static_cast<size_t>(b1 - b0) * bb);
    for (int64_t b = b0; b < b1; ++b, p += bb) {
      if (type == Type::TQ2_0) balance_2bit(p, 64, rng);
      if (type == Type::Q2_0) balance_2bit(p + 2, 16, rng);
      set_scales(type, p, d, e8, ue);
    }
  });
}

}  // namespace k3::tools
