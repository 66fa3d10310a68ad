// kernels/blocks: in-memory views of the GGUF weight blocks the fast dot products read, plus the
// small scalar decoders both the SIMD kernels and their scalar twins share.
// Contract: layouts are byte-for-byte those of ggml's ggml-common.h (sizes asserted);
// helpers are pure functions of the block bytes.
#pragma once

#include <immintrin.h>

#include <bit>
#include <cstdint>
#include <cstring>

namespace k3::kernels::blk {

struct Q8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct MXFP4 {
  uint8_t e;
  uint8_t qs[16];
};
struct Q2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d, dmin;
};
struct Q3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
struct Q4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
struct Q6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
struct IQ2_XXS {
  uint16_t d;
  uint16_t qs[32];
};
struct IQ2_XS {
  uint16_t d;
  uint16_t qs[32];
  uint8_t scales[8];
};
struct IQ1_S {
  uint16_t d;
  uint8_t qs[32];
  uint16_t qh[8];
};
struct IQ1_M {
  uint8_t qs[32];
  uint8_t qh[16];
  uint8_t scales[8];
};

static_assert(sizeof(Q8_0) == 34 && sizeof(MXFP4) == 17 && sizeof(Q2_K) == 84);
static_assert(sizeof(Q3_K) == 110 && sizeof(Q4_K) == 144 && sizeof(Q6_K) == 210);
static_assert(sizeof(IQ2_XXS) == 66 && sizeof(IQ2_XS) == 74 && sizeof(IQ1_S) == 50);
static_assert(sizeof(IQ1_M) == 56);

inline float f16(uint16_t h) { return _cvtsh_ss(h); }

inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// E8M0 half scale 2^(e-128), built exactly (docs/quant-formats.md, scalar encodings).
constexpr float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

// Q4_K six-bit scale/min pair j (0..7) from the 12 packed bytes.
inline void q4k_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q3_K signed scales s_j ∈ [−32, 31], j = 0..15.
inline void q3k_scales(const uint8_t* s, int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low4 = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    const int high2 = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((low4 | high2 << 4) - 32);
  }
}

// IQ1_M super-block scale assembled from the top nibbles of the four u16 scale words.
inline float iq1m_d(const uint8_t* scales) {
  uint16_t sc[4];
  std::memcpy(sc, scales, 8);
  const uint16_t bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 12) << 4) | ((sc[2] >> 12) << 8) |
                                              ((sc[3] >> 12) << 12));
  return f16(bits);
}

}  // namespace k3::kernels::blk
