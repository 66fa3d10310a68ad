// quant/blocks: the GGUF weight blocks as structs, one per block type the codecs read or write,
// and the field decoders shared by the codecs (src/quant) and the dot-product kernels
// (src/kernels). The one description of every block layout in the repository.
// Contract: each struct is byte for byte the block of ggml's ggml-common.h
// (docs/quant-formats.md, "Block layouts"); its size is asserted against the type table
// (quant/types.h). f16 fields hold the raw binary16 bits (decode with fp16_to_fp32). Multi-byte
// fields are little-endian, so the structs describe the bytes only on a little-endian host
// (asserted), as ggml's do. alignof is 1 or 2: code that holds a byte pointer of unknown
// alignment copies a block with load_block/store_block instead of casting the pointer.
// The decoders are plain C++ (no intrinsics) and pure functions of the block bytes.
// Internal linkage for the functions (anonymous namespace): files under kernels/x86/ compiled
// with wider -m flags include this header, and an inline function with external linkage could
// be emitted there in the wider encoding and chosen by the linker for every caller.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/types.h"

namespace k3::quant::blk {

static_assert(std::endian::native == std::endian::little,
              "GGUF blocks are little-endian, so must the host be");

// ---------------------------------------------------------------- 32-element blocks
// Nibble packing: byte j of qs holds element j (low nibble) and element j+16 (high nibble).

struct Q4_0 {
  uint16_t d;  // f16
  uint8_t qs[16];
};
struct Q4_1 {
  uint16_t d, m;  // f16 scale and min
  uint8_t qs[16];
};
struct Q5_0 {
  uint16_t d;
  uint8_t qh[4];  // u32: fifth bit of element j at bit j
  uint8_t qs[16];
};
struct Q5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct Q8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct IQ4_NL {
  uint16_t d;
  uint8_t qs[16];  // indices into kValuesIq4nl
};
struct MXFP4 {
  uint8_t e;  // E8M0 exponent (e8m0_half)
  uint8_t qs[16];
};

// ---------------------------------------------------------------- FP4 and 1/2-bit blocks

struct NVFP4 {     // 64 elements, four sub-blocks of 16
  uint8_t d[4];    // UE4M3 scale per sub-block
  uint8_t qs[32];  // sub-block s: bytes 8s..8s+7, element j low nibble, j+8 high
};
struct Q1_0 {  // 128 elements
  uint16_t d;
  uint8_t qs[16];  // sign bit of element j at bit j%8 of byte j/8 (1: +d, 0: −d)
};
struct Q2_0 {  // 64 elements
  uint16_t d;
  uint8_t qs[16];  // element j at bits 2(j%4) of byte j/4, value level − 1
};

// ---------------------------------------------------------------- 256-element super-blocks

struct Q2_K {
  uint8_t scales[16];  // low nibble: scale, high nibble: min of each 16 elements
  uint8_t qs[64];      // byte l of half h: elements 128h+l+32k in bits 2k..2k+1
  uint16_t d, dmin;
};
struct Q3_K {
  uint8_t hmask[32];   // bit e/32 of byte e%32: the element's third bit
  uint8_t qs[64];      // low two bits, packed as Q2_K
  uint8_t scales[12];  // sixteen 6-bit signed scales (q3k_scales)
  uint16_t d;
};
struct Q4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // eight 6-bit scale/min pairs (q4k_scale_min)
  uint8_t qs[128];     // byte l of chunk c: element 64c+l (low nibble) and 64c+l+32 (high)
};
struct Q5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];  // bit e/32 of byte e%32: the element's fifth bit
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
  uint16_t qs[32];  // per 32 elements two u32: 4 grid bytes; 4 × 7-bit signs + 4-bit scale
};
struct IQ2_XS {
  uint16_t d;
  uint16_t qs[32];    // grid index (9 bits) | sign index << 9
  uint8_t scales[8];  // two 4-bit scales per 32 elements
};
struct IQ2_S {
  uint16_t d;
  uint8_t qs[64];  // 0..31: low index bytes, 32..63: sign bytes
  uint8_t qh[8];   // index bits 8..9, 2 bits per group of 8
  uint8_t scales[8];
};
struct IQ3_XXS {
  uint16_t d;
  uint8_t qs[96];  // 0..63: grid bytes; 64..95: 8 u32 (4 × 7-bit signs, scale << 28)
};
struct IQ3_S {
  uint16_t d;
  uint8_t qs[64];  // low index bytes
  uint8_t qh[8];   // index bit 8
  uint8_t signs[32];
  uint8_t scales[4];  // two 4-bit scales per byte
};
struct IQ1_S {
  uint16_t d;
  uint8_t qs[32];  // low index bytes
  uint16_t qh[8];  // 3 index bits per group, scale in 12..14, delta sign in 15
};
struct IQ1_M {
  uint8_t qs[32];     // low index bytes
  uint8_t qh[16];     // per byte two groups: 3 index bits + delta sign each
  uint8_t scales[8];  // 4 u16: 3-bit scales; the top nibbles form the f16 d (iq1m_scale_bits)
};
struct IQ4_XS {
  uint16_t d;
  uint16_t scales_h;    // bits 4..5 of scale j at 2j
  uint8_t scales_l[4];  // bits 0..3 of scale j at nibble j
  uint8_t qs[128];      // 16 bytes per 32 elements, packed as IQ4_NL
};
struct TQ1_0 {
  uint8_t qs[48];  // five base-3 trits per byte
  uint8_t qh[4];   // four trits per byte
  uint16_t d;
};
struct TQ2_0 {
  uint8_t qs[64];  // 2-bit levels, value level − 1
  uint16_t d;
};

// Each struct is exactly its table entry's block, with no padding and at most 2-byte alignment.
template <class B>
constexpr bool kPlainBlock = std::conjunction_v<std::is_standard_layout<B>, std::is_trivially_copyable<B>> &&
                             alignof(B) <= 2;
#define K3_BLOCK_LAYOUT(B)                                                                   \
  static_assert(sizeof(B) == block_bytes(Type::B), #B ": size differs from the type table"); \
  static_assert(kPlainBlock<B>, #B ": not a plain 1- or 2-byte aligned block")
K3_BLOCK_LAYOUT(Q4_0);
K3_BLOCK_LAYOUT(Q4_1);
K3_BLOCK_LAYOUT(Q5_0);
K3_BLOCK_LAYOUT(Q5_1);
K3_BLOCK_LAYOUT(Q8_0);
K3_BLOCK_LAYOUT(IQ4_NL);
K3_BLOCK_LAYOUT(MXFP4);
K3_BLOCK_LAYOUT(NVFP4);
K3_BLOCK_LAYOUT(Q1_0);
K3_BLOCK_LAYOUT(Q2_0);
K3_BLOCK_LAYOUT(Q2_K);
K3_BLOCK_LAYOUT(Q3_K);
K3_BLOCK_LAYOUT(Q4_K);
K3_BLOCK_LAYOUT(Q5_K);
K3_BLOCK_LAYOUT(Q6_K);
K3_BLOCK_LAYOUT(IQ2_XXS);
K3_BLOCK_LAYOUT(IQ2_XS);
K3_BLOCK_LAYOUT(IQ2_S);
K3_BLOCK_LAYOUT(IQ3_XXS);
K3_BLOCK_LAYOUT(IQ3_S);
K3_BLOCK_LAYOUT(IQ1_S);
K3_BLOCK_LAYOUT(IQ1_M);
K3_BLOCK_LAYOUT(IQ4_XS);
K3_BLOCK_LAYOUT(TQ1_0);
K3_BLOCK_LAYOUT(TQ2_0);
#undef K3_BLOCK_LAYOUT

namespace {

// Unaligned little-endian loads and stores of block fields.
inline uint16_t load_u16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_u16(void* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }
inline void store_u32(void* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }

// Block i of a row that starts at `row` (any alignment), copied out or in.
template <class B>
inline B load_block(const void* row, int64_t i) {
  static_assert(kPlainBlock<B>);
  B b;
  std::memcpy(&b, static_cast<const unsigned char*>(row) + i * int64_t(sizeof(B)), sizeof(B));
  return b;
}
template <class B>
inline void store_block(void* row, int64_t i, const B& b) {
  static_assert(kPlainBlock<B>);
  std::memcpy(static_cast<unsigned char*>(row) + i * int64_t(sizeof(B)), &b, sizeof(B));
}

// E8M0 half scale 2^(e−128), built exactly as float bits (docs/quant-formats.md, scalar
// encodings): e < 2 gives the subnormals 2^−128 and 2^−127.
constexpr float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

// Q4_K/Q5_K: six-bit scale `sc` and min `m` of sub-block j (0..7) from the 12 packed bytes.
constexpr void q4k_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q3_K: the sixteen signed scales s_j ∈ [−32, 31] from the 12 packed bytes (low nibbles of bytes
// 0..7 for j < 8, their high nibbles for j ≥ 8; bits 4..5 from byte 8 + j%4 at 2·(j/4)).
constexpr void q3k_scales(const uint8_t* s, int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low4 = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    const int high2 = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((low4 | high2 << 4) - 32);
  }
}

// IQ1_M: the f16 bits of the super-block scale, assembled from the top nibbles of the four
// little-endian u16 scale words (word k supplies bits 4k..4k+3).
constexpr uint16_t iq1m_scale_bits(const uint8_t* scales) {
  uint16_t bits = 0;
  for (int k = 0; k < 4; ++k) {
    const int word = scales[2 * k] | scales[2 * k + 1] << 8;
    bits = static_cast<uint16_t>(bits | (word >> 12) << (4 * k));
  }
  return bits;
}

}  // namespace

}  // namespace k3::quant::blk
