// kernels/decode_layout: IQ1_M's decode layout (see decode_layout.h).
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

// Byte h·8 + j of quarter p holds, in bit pair k, the code of weight 64p + 16k + 8h + j: of
// group g = 8p + 2k + h. Each quarter is thus two words, each the OR of four groups' code
// words shifted by 2k (codes are at most 2 bits, so the shift keeps them in their bytes).
void repack_iq1_m(const GridCodes& grid, const blk::IQ1_M& x, Iq1mDecodeBlock& out) {
  uint64_t delta_plus = 0;
  for (int p = 0; p < 4; ++p) {
    uint64_t half0 = 0, half1 = 0;  // bytes 0..7 and 8..15 of the quarter (h = 0, 1)
    for (int k = 0; k < 4; ++k) {
      const int g = 8 * p + 2 * k;  // groups g (h = 0) and g + 1 (h = 1): both in qh[g / 2]
      const int qh = x.qh[g / 2];
      half0 |= grid.v[static_cast<size_t>(x.qs[g] | (qh & 7) << 8)] << (2 * k);
      half1 |= grid.v[static_cast<size_t>(x.qs[g + 1] | (qh >> 4 & 7) << 8)] << (2 * k);
      // delta +1 where the sign bit (bit 3 of the group's nibble) is clear; no branch, as the
      // signs are as good as random
      const uint64_t plus = (~qh >> 3 & 1) | (~qh >> 7 & 1) << 2;
      delta_plus |= plus * 3 << (2 * g);
    }
    std::memcpy(out.codes + 16 * p, &half0, 8);
    std::memcpy(out.codes + 16 * p + 8, &half1, 8);
  }
  out.delta_plus = delta_plus;
  std::memcpy(out.scales, x.scales, sizeof out.scales);
}

int code_of(const Iq1mDecodeBlock& x, int w) {
  const int p = w / 64, k = (w % 64) / 16, j = w % 16;
  return (x.codes[16 * p + j] >> (2 * k)) & 3;
}

}  // namespace

size_t decode_row_bytes(quant::Type t, int64_t cols) {
  if (t == quant::Type::IQ1_M) return static_cast<size_t>(cols / 256) * sizeof(Iq1mDecodeBlock);
  return 0;
}

void repack_for_decode(quant::Type t, const void* src, void* dst, int64_t n_blocks) {
  if (t != quant::Type::IQ1_M) return;
  static const GridCodes grid;
  const auto* x = static_cast<const blk::IQ1_M*>(src);
  auto* y = static_cast<Iq1mDecodeBlock*>(dst);
  for (int64_t b = 0; b < n_blocks; ++b) repack_iq1_m(grid, x[b], y[b]);
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

}  // namespace k3::kernels
