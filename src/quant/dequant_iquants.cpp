// quant/dequant_iquants: decoders of the grid ("i-quant") types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS,
// IQ2_S, IQ3_XXS, IQ3_S, and of IQ4_XS (ggml's dequantize_row_iq*). Grid entries hold
// coordinate j in byte j.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include "quant/block_bits.h"
#include "quant/codebooks.h"
#include "quant/dequant_blocks.h"

namespace k3::quant::detail {

namespace {

inline int grid_byte(uint64_t entry, int j) { return int((entry >> (8 * j)) & 0xFF); }

// Eight elements db·coord_j·(±1), sign j from bit j of mask.
inline void emit8(float* y, float db, uint64_t entry, uint8_t mask) {
  for (int j = 0; j < 8; ++j) {
    y[j] = db * float(grid_byte(entry, j)) * ((mask & kKmaskIq2xs[j]) ? -1.f : 1.f);
  }
}

// Eight elements from two 4-coordinate IQ3 grid entries.
inline void emit8_iq3(float* y, float db, uint32_t g1, uint32_t g2, uint8_t mask) {
  const uint64_t entry = uint64_t(g1) | (uint64_t(g2) << 32);
  emit8(y, db, entry, mask);
}

// dl·(coord + delta) for eight signed iq1s coordinates.
inline void emit8_iq1(float* y, float dl, uint16_t idx, float delta) {
  const uint64_t entry = kIq1sGrid[idx];
  for (int j = 0; j < 8; ++j) y[j] = dl * (float(int8_t(grid_byte(entry, j))) + delta);
}

}  // namespace

void dequant_iq2_xxs(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::IQ2_XXS>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int sb = 0; sb < 8; ++sb, y += 32) {
      const uint32_t aw = load_u32(&b.qs[4 * sb]);      // four grid indices, one per byte
      const uint32_t bw = load_u32(&b.qs[4 * sb + 2]);  // four 7-bit sign indices, scale << 28
      const float db = d * (0.5f + float(bw >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        emit8(y + 8 * l, db, kIq2xxsGrid[(aw >> (8 * l)) & 0xFF], kKsignsIq2xs[(bw >> (7 * l)) & 127]);
      }
    }
  }
}

void dequant_iq2_xs(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::IQ2_XS>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int sb = 0; sb < 8; ++sb, y += 32) {
      for (int l = 0; l < 4; ++l) {
        const uint16_t v = b.qs[4 * sb + l];
        const int s = l < 2 ? (b.scales[sb] & 0xF) : (b.scales[sb] >> 4);
        const float db = d * (0.5f + float(s)) * 0.25f;
        emit8(y + 8 * l, db, kIq2xsGrid[v & 511], kKsignsIq2xs[v >> 9]);
      }
    }
  }
}

void dequant_iq2_s(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::IQ2_S>(src, i);
    const float d = fp16_to_fp32(b.d);
    const uint8_t* signs = b.qs + 32;
    for (int sb = 0; sb < 8; ++sb, y += 32) {
      for (int l = 0; l < 4; ++l) {
        const int idx = b.qs[4 * sb + l] | (((b.qh[sb] >> (2 * l)) & 3) << 8);
        const int s = l < 2 ? (b.scales[sb] & 0xF) : (b.scales[sb] >> 4);
        const float db = d * (0.5f + float(s)) * 0.25f;
        emit8(y + 8 * l, db, kIq2sGrid[idx], signs[4 * sb + l]);
      }
    }
  }
}

void dequant_iq3_xxs(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::IQ3_XXS>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int sb = 0; sb < 8; ++sb, y += 32) {
      const uint32_t w = load_u32(b.qs + 64 + 4 * sb);
      const float db = d * (0.5f + float(w >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l) {
        emit8_iq3(y + 8 * l, db, kIq3xxsGrid[b.qs[8 * sb + 2 * l]], kIq3xxsGrid[b.qs[8 * sb + 2 * l + 1]],
                  kKsignsIq2xs[(w >> (7 * l)) & 127]);
      }
    }
  }
}

void dequant_iq3_s(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::IQ3_S>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int sb = 0; sb < 8; ++sb, y += 32) {
      const int s = (sb % 2 == 0) ? (b.scales[sb / 2] & 0xF) : (b.scales[sb / 2] >> 4);
      const float db = d * float(1 + 2 * s);
      for (int l = 0; l < 4; ++l) {
        const int i1 = b.qs[8 * sb + 2 * l] | (((b.qh[sb] >> (2 * l)) & 1) << 8);
        const int i2 = b.qs[8 * sb + 2 * l + 1] | (((b.qh[sb] >> (2 * l + 1)) & 1) << 8);
        emit8_iq3(y + 8 * l, db, kIq3sGrid[i1], kIq3sGrid[i2], b.signs[4 * sb + l]);
      }
    }
  }
}

void dequant_iq1_s(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::IQ1_S>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int sb = 0; sb < 8; ++sb, y += 32) {
      const uint16_t h = b.qh[sb];
      const float dl = d * float(2 * ((h >> 12) & 7) + 1);
      const float delta = (h & 0x8000) ? -kIq1sDelta : kIq1sDelta;
      for (int l = 0; l < 4; ++l) {
        emit8_iq1(y + 8 * l, dl, uint16_t(b.qs[4 * sb + l] | (((h >> (3 * l)) & 7) << 8)), delta);
      }
    }
  }
}

void dequant_iq1_m(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::IQ1_M>(src, i);
    uint16_t sc[4];
    for (int k = 0; k < 4; ++k) sc[k] = load_u16(b.scales + 2 * k);
    const float d = fp16_to_fp32(blk::iq1m_scale_bits(b.scales));
    for (int t = 0; t < 16; ++t) {
      const float dl = d * float(2 * ((sc[t / 4] >> (3 * (t % 4))) & 7) + 1);
      for (int half = 0; half < 2; ++half, y += 8) {
        const int g = 2 * t + half;
        const int bits = b.qh[t] >> (4 * half);
        const float delta = (bits & 8) ? -kIq1mDelta : kIq1mDelta;
        emit8_iq1(y, dl, uint16_t(b.qs[g] | ((bits & 7) << 8)), delta);
      }
    }
  }
}

void dequant_iq4_xs(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::IQ4_XS>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int sb = 0; sb < 8; ++sb, y += 32) {
      const int ls = ((b.scales_l[sb / 2] >> (4 * (sb % 2))) & 0xF) | (((b.scales_h >> (2 * sb)) & 3) << 4);
      const float dl = d * float(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * float(kValuesIq4nl[b.qs[16 * sb + j] & 0xF]);
        y[j + 16] = dl * float(kValuesIq4nl[b.qs[16 * sb + j] >> 4]);
      }
    }
  }
}

}  // namespace k3::quant::detail
