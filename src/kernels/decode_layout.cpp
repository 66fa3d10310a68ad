// kernels/decode_layout: the IQ1_M and IQ2_XXS decode layouts (see decode_layout.h).
#include "kernels/decode_layout.h"

#include <array>
#include <cstring>

#include "kernels/act_quant.h"
#include "kernels/vec_dot_impl.h"
#include "quant/blocks.h"
#include "quant/codebooks.h"
#include "quant/codec.h"

namespace k3::kernels {
namespace {

namespace blk = quant::blk;

// The 2048 grid entries as eight 2-bit codes (value + 1), code j in byte j: a group's codes
// are then eight consecutive bytes of the quarter, shifted into their lane's bit pair.
struct GridCodes {
  std::array<uint64_t, 2048> v{};
  GridCodes() {
    for (size_t i = 0; i < v.size(); ++i)
      for (int j = 0; j < 8; ++j) {
        const auto value = static_cast<int8_t>((quant::kIq1sGrid[i] >> (8 * j)) & 0xFF);  // −1, 0, 1
        v[i] |= static_cast<uint64_t>(value + 1) << (8 * j);
      }
  }
};

// An IQ1 super-block as both formats describe it: per group of 8 weights its grid index and
// whether its delta is −1/8; IQ1_M's scales field (16 3-bit sub-block scales, the f16 d in
// the top nibbles).
struct Iq1Groups {
  uint16_t idx[32];
  bool minus[32];
  uint8_t scales[8];
};

Iq1Groups groups_of(const blk::IQ1_M& x) {
  Iq1Groups q;
  for (int g = 0; g < 32; ++g) {
    const int bits = x.qh[g / 2] >> (4 * (g % 2));
    q.idx[g] = static_cast<uint16_t>(x.qs[g] | (bits & 7) << 8);
    q.minus[g] = (bits & 8) != 0;
  }
  std::memcpy(q.scales, x.scales, sizeof q.scales);
  return q;
}

// IQ1_S: the scale of each 32 weights serves both of its 16-weight sub-blocks, and its delta
// sign all four of its groups; d goes to the top nibbles. The integer sums per 16 weights then
// add up to IQ1_S's per 32, and the AVX2 and AVX-512 kernels' lanes hold the same sums as the
// IQ1_S file-layout kernels' (iq1s_unpack builds the same scale registers), so the products
// are IQ1_S's bit for bit.
Iq1Groups groups_of(const blk::IQ1_S& x) {
  Iq1Groups q;
  uint16_t words[4] = {};
  for (int g = 0; g < 32; ++g) {
    const int h = x.qh[g / 4];
    q.idx[g] = static_cast<uint16_t>(x.qs[g] | ((h >> (3 * (g % 4))) & 7) << 8);
    q.minus[g] = (h & 0x8000) != 0;
  }
  for (int j = 0; j < 16; ++j)
    words[j / 4] = static_cast<uint16_t>(words[j / 4] | ((x.qh[j / 2] >> 12) & 7) << (3 * (j % 4)));
  for (int k = 0; k < 4; ++k) words[k] = static_cast<uint16_t>(words[k] | ((x.d >> (4 * k)) & 0xF) << 12);
  std::memcpy(q.scales, words, sizeof q.scales);
  return q;
}

// Byte h·8 + j of quarter p holds, in bit pair k, the code of weight 64p + 16k + 8h + j: of
// group g = 8p + 2k + h. Each quarter is thus two words, each the OR of four groups' code
// words shifted by 2k (codes are at most 2 bits, so the shift keeps them in their bytes).
void repack_iq1(const GridCodes& grid, const Iq1Groups& q, Iq1mDecodeBlock& out) {
  uint64_t delta_plus = 0;
  for (int p = 0; p < 4; ++p) {
    uint64_t half0 = 0, half1 = 0;  // bytes 0..7 and 8..15 of the quarter (h = 0, 1)
    for (int k = 0; k < 4; ++k) {
      const int g = 8 * p + 2 * k;  // groups g (h = 0) and g + 1 (h = 1)
      half0 |= grid.v[q.idx[g]] << (2 * k);
      half1 |= grid.v[q.idx[g + 1]] << (2 * k);
    }
    std::memcpy(out.codes + 16 * p, &half0, 8);
    std::memcpy(out.codes + 16 * p + 8, &half1, 8);
  }
  for (int g = 0; g < 32; ++g)
    if (!q.minus[g]) delta_plus |= uint64_t{3} << (2 * g);  // two 4-weight runs per group
  out.delta_plus = delta_plus;
  std::memcpy(out.scales, q.scales, sizeof out.scales);
}

int code_of(const Iq1mDecodeBlock& x, int w) {
  const int p = w / 64, k = (w % 64) / 16, j = w % 16;
  return (x.codes[16 * p + j] >> (2 * k)) & 3;
}

// IQ2_XXS group g: the file's two words (4 grid indices; 4 × 7-bit sign indices and the 4-bit
// scale) become 16 bytes of 3-bit weights (code | sign << 2) and the scale 2s + 1.
void repack_iq2_xxs(const blk::IQ2_XXS& x, Iq2xxsDecodeBlock& out) {
  std::memset(&out, 0, sizeof out);
  for (int g = 0; g < 8; ++g) {
    const uint32_t idx = blk::load_u32(&x.qs[4 * g]);
    const uint32_t sw = blk::load_u32(&x.qs[4 * g + 2]);
    out.ls[g] = static_cast<uint8_t>(2 * (sw >> 28) + 1);
    for (int l = 0; l < 4; ++l) {
      const uint64_t entry = quant::kIq2xxsGrid[(idx >> (8 * l)) & 0xFF];
      const uint8_t signs = quant::kKsignsIq2xs[(sw >> (7 * l)) & 127];
      for (int j = 0; j < 8; ++j) {
        const int grid = static_cast<int>((entry >> (8 * j)) & 0xFF);
        const int code = grid == 8 ? 0 : grid == 25 ? 1 : 2;
        const int p = 8 * l + j;  // weight 32g + p
        const int v = code | ((signs >> j) & 1) << 2;
        out.w[16 * g + p % 16] = static_cast<uint8_t>(out.w[16 * g + p % 16] | v << (4 * (p / 16)));
      }
    }
  }
  out.d = quant::fp16_to_fp32(x.d);
}

constexpr int kIq2GridBytes[3] = {8, 25, 43};

}  // namespace

size_t decode_row_bytes(quant::Type t, int64_t cols) {
  if (t == quant::Type::IQ1_M || t == quant::Type::IQ1_S)
    return static_cast<size_t>(cols / 256) * sizeof(Iq1mDecodeBlock);
  if (t == quant::Type::IQ2_XXS) return static_cast<size_t>(cols / 256) * sizeof(Iq2xxsDecodeBlock);
  return 0;
}

void repack_for_decode(quant::Type t, const void* src, void* dst, int64_t n_blocks) {
  static const GridCodes grid;
  if (t == quant::Type::IQ1_M) {
    const auto* x = static_cast<const blk::IQ1_M*>(src);
    auto* y = static_cast<Iq1mDecodeBlock*>(dst);
    for (int64_t b = 0; b < n_blocks; ++b) repack_iq1(grid, groups_of(x[b]), y[b]);
  } else if (t == quant::Type::IQ1_S) {
    const auto* x = static_cast<const blk::IQ1_S*>(src);
    auto* y = static_cast<Iq1mDecodeBlock*>(dst);
    for (int64_t b = 0; b < n_blocks; ++b) repack_iq1(grid, groups_of(x[b]), y[b]);
  } else if (t == quant::Type::IQ2_XXS) {
    const auto* x = static_cast<const blk::IQ2_XXS*>(src);
    auto* y = static_cast<Iq2xxsDecodeBlock*>(dst);
    for (int64_t b = 0; b < n_blocks; ++b) repack_iq2_xxs(x[b], y[b]);
  }
}

// The weights back as 8·grid ± 1 (grid = code − 1; the delta +1 where delta_plus is set),
// then the file layout twin's integer sum and float step.
float dot_iq1_m_decode_scalar(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const Iq1mDecodeBlock*>(w);
  const auto* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int8_t values[256];
    for (int i = 0; i < 256; ++i) {
      const int delta = (x[b].delta_plus >> (i / 4)) & 1 ? 1 : -1;
      values[i] = static_cast<int8_t>(8 * (code_of(x[b], i) - 1) + delta);
    }
    const int isum = impl::iq1_m_isum_scalar(values, x[b].scales, y[b].qs);
    s += 0.125f * quant::fp16_to_fp32(blk::iq1m_scale_bits(x[b].scales)) * y[b].d * static_cast<float>(isum);
  }
  return s;
}

// The signed grid values back from the 3-bit weights, then dot_iq2_xxs_scalar's integer sum per
// group, scale and float step.
float dot_iq2_xxs_decode_scalar(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const Iq2xxsDecodeBlock*>(w);
  const auto* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int isum = 0;
    for (int g = 0; g < 8; ++g) {
      int sub = 0;
      for (int p = 0; p < 32; ++p) {
        const int v = (x[b].w[16 * g + p % 16] >> (4 * (p / 16))) & 7;
        const int value = kIq2GridBytes[v & 3] * (v & 4 ? -1 : 1);
        sub += value * y[b].qs[32 * g + p];
      }
      isum += x[b].ls[g] * sub;
    }
    s += 0.125f * x[b].d * y[b].d * static_cast<float>(isum);
  }
  return s;
}

}  // namespace k3::kernels
