// Scalar twins of the SIMD dot products: the same integer block sums and the same scale
// products as the AVX2 kernels, written plainly from ggml's block layouts and the activation
// pairing of docs/quant-formats.md.
// They are the reference the SIMD kernels are tested against, so clarity beats speed here.
#include <cstdint>

#include "kernels/act_quant.h"
#include "kernels/vec_dot_impl.h"
#include "quant/codebooks.h"
#include "quant/codec.h"

namespace k3::kernels::impl {

namespace {

int8_t grid_byte(uint64_t g, int j) { return static_cast<int8_t>((g >> (8 * j)) & 0xFF); }

}  // namespace

float dot_f32_scalar(int64_t n, const void* w, const void* act) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(act);
  double s = 0.0;  // the twin is allowed to be more exact than the SIMD kernel
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * y[i];
  return static_cast<float>(s);
}

float dot_f16_scalar(int64_t n, const void* w, const void* act) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const float* y = static_cast<const float*>(act);
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(quant::fp16_to_fp32(x[i])) * y[i];
  return static_cast<float>(s);
}

float dot_bf16_scalar(int64_t n, const void* w, const void* act) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const float* y = static_cast<const float*>(act);
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    s += static_cast<double>(f) * y[i];
  }
  return static_cast<float>(s);
}

float dot_q8_0_scalar(int64_t n, const void* w, const void* act) {
  const blk::Q8_0* x = static_cast<const blk::Q8_0*>(w);
  const BlockQ8_0A* y = static_cast<const BlockQ8_0A*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += x[b].qs[j] * y[b].qs[j];
    s += static_cast<float>(isum) * (quant::fp16_to_fp32(x[b].d) * y[b].d);
  }
  return s;
}

float dot_mxfp4_scalar(int64_t n, const void* w, const void* act) {
  const blk::MXFP4* x = static_cast<const blk::MXFP4*>(w);
  const BlockQ8_0A* y = static_cast<const BlockQ8_0A*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      isum += quant::kValuesFp4[x[b].qs[j] & 0xF] * y[b].qs[j];
      isum += quant::kValuesFp4[x[b].qs[j] >> 4] * y[b].qs[j + 16];
    }
    s += static_cast<float>(isum) * (blk::e8m0_half(x[b].e) * y[b].d);
  }
  return s;
}

float dot_q2_k_scalar(int64_t n, const void* w, const void* act) {
  const blk::Q2_K* x = static_cast<const blk::Q2_K*>(w);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int isum = 0, msum = 0;
    for (int e = 0; e < 256; ++e) {
      const int q = (x[b].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      isum += (x[b].scales[e / 16] & 0xF) * q * y[b].qs[e];
    }
    for (int j = 0; j < 16; ++j) msum += (x[b].scales[j] >> 4) * y[b].bsums[j];
    s += quant::fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum) -
         quant::fp16_to_fp32(x[b].dmin) * y[b].d * static_cast<float>(msum);
  }
  return s;
}

float dot_q3_k_scalar(int64_t n, const void* w, const void* act) {
  const blk::Q3_K* x = static_cast<const blk::Q3_K*>(w);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int8_t sc[16];
    blk::q3k_scales(x[b].scales, sc);
    int isum = 0;
    for (int e = 0; e < 256; ++e) {
      const int low = (x[b].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      const int h = (x[b].hmask[e % 32] >> (e / 32)) & 1;
      isum += sc[e / 16] * (low - (h ? 0 : 4)) * y[b].qs[e];
    }
    s += quant::fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum);
  }
  return s;
}

float dot_q4_k_scalar(int64_t n, const void* w, const void* act) {
  const blk::Q4_K* x = static_cast<const blk::Q4_K*>(w);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      blk::q4k_scale_min(x[b].scales, j, sc, m);
      int sub = 0;
      for (int i = 0; i < 32; ++i) {
        const int e = 32 * j + i;
        const uint8_t byte = x[b].qs[32 * (e / 64) + e % 32];
        const int q = (e % 64 < 32) ? (byte & 0xF) : (byte >> 4);
        sub += q * y[b].qs[e];
      }
      isum += sc * sub;
      msum += m * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
    }
    s += quant::fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum) -
         quant::fp16_to_fp32(x[b].dmin) * y[b].d * static_cast<float>(msum);
  }
  return s;
}

float dot_q6_k_scalar(int64_t n, const void* w, const void* act) {
  const blk::Q6_K* x = static_cast<const blk::Q6_K*>(w);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int isum = 0;
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
      const uint8_t lb = x[b].ql[64 * h + l + 32 * (k & 1)];
      const int low = k < 2 ? (lb & 0xF) : (lb >> 4);
      const int high = (x[b].qh[32 * h + l] >> (2 * k)) & 3;
      isum += x[b].scales[e / 16] * ((low | high << 4) - 32) * y[b].qs[e];
    }
    s += quant::fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum);
  }
  return s;
}

float dot_iq2_xxs_scalar(int64_t n, const void* w, const void* act) {
  const blk::IQ2_XXS* x = static_cast<const blk::IQ2_XXS*>(w);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int isum = 0;
    for (int sb = 0; sb < 8; ++sb) {
      const uint32_t a = blk::load_u32(&x[b].qs[4 * sb]);
      const uint32_t bb = blk::load_u32(&x[b].qs[4 * sb + 2]);
      const int ls = 2 * static_cast<int>(bb >> 28) + 1;
      int sub = 0;
      for (int l = 0; l < 4; ++l) {
        const uint64_t g = quant::kIq2xxsGrid[(a >> (8 * l)) & 0xFF];
        const uint8_t signs = quant::kKsignsIq2xs[(bb >> (7 * l)) & 127];
        for (int j = 0; j < 8; ++j) {
          const int v = grid_byte(g, j) * ((signs >> j) & 1 ? -1 : 1);
          sub += v * y[b].qs[32 * sb + 8 * l + j];
        }
      }
      isum += ls * sub;
    }
    s += 0.125f * quant::fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum);
  }
  return s;
}

float dot_iq2_xs_scalar(int64_t n, const void* w, const void* act) {
  const blk::IQ2_XS* x = static_cast<const blk::IQ2_XS*>(w);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int isum = 0;
    for (int sb = 0; sb < 8; ++sb) {
      for (int l = 0; l < 4; ++l) {
        const uint16_t v = x[b].qs[4 * sb + l];
        const int nib = l < 2 ? x[b].scales[sb] & 0xF : x[b].scales[sb] >> 4;
        const uint64_t g = quant::kIq2xsGrid[v & 511];
        const uint8_t signs = quant::kKsignsIq2xs[v >> 9];
        int sub = 0;
        for (int j = 0; j < 8; ++j) {
          const int q = grid_byte(g, j) * ((signs >> j) & 1 ? -1 : 1);
          sub += q * y[b].qs[32 * sb + 8 * l + j];
        }
        isum += (2 * nib + 1) * sub;
      }
    }
    s += 0.125f * quant::fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum);
  }
  return s;
}

// IQ1 values are (grid + δ) with δ = ±1/8, i.e. (8·grid ± 1)/8: an exact integer times 1/8.
float dot_iq1_s_scalar(int64_t n, const void* w, const void* act) {
  const blk::IQ1_S* x = static_cast<const blk::IQ1_S*>(w);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int isum = 0;
    for (int sb = 0; sb < 8; ++sb) {
      const uint16_t h = x[b].qh[sb];
      const int ls = 2 * ((h >> 12) & 7) + 1;
      const int delta = (h & 0x8000) ? -1 : 1;
      int sub = 0;
      for (int l = 0; l < 4; ++l) {
        const int idx = x[b].qs[4 * sb + l] | (((h >> (3 * l)) & 7) << 8);
        const uint64_t g = quant::kIq1sGrid[idx];
        for (int j = 0; j < 8; ++j) sub += (8 * grid_byte(g, j) + delta) * y[b].qs[32 * sb + 8 * l + j];
      }
      isum += ls * sub;
    }
    s += 0.125f * quant::fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum);
  }
  return s;
}

int iq1_m_isum_scalar(const int8_t* values, const uint8_t* scales, const int8_t* qs) {
  uint16_t sc[4];
  std::memcpy(sc, scales, 8);
  int isum = 0;
  for (int t = 0; t < 16; ++t) {
    const int ls = 2 * ((sc[t / 4] >> (3 * (t % 4))) & 7) + 1;
    int sub = 0;
    for (int i = 16 * t; i < 16 * t + 16; ++i) sub += values[i] * qs[i];
    isum += ls * sub;
  }
  return isum;
}

float dot_iq1_m_scalar(int64_t n, const void* w, const void* act) {
  const blk::IQ1_M* x = static_cast<const blk::IQ1_M*>(w);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  float s = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    int8_t values[256];  // 8·grid ± 1
    for (int g = 0; g < 32; ++g) {
      const int bits = x[b].qh[g / 2] >> (4 * (g % 2));
      const uint64_t grid = quant::kIq1sGrid[x[b].qs[g] | ((bits & 7) << 8)];
      const int delta = (bits & 8) ? -1 : 1;
      for (int j = 0; j < 8; ++j) values[8 * g + j] = static_cast<int8_t>(8 * grid_byte(grid, j) + delta);
    }
    const int isum = iq1_m_isum_scalar(values, x[b].scales, y[b].qs);
    s += 0.125f * quant::fp16_to_fp32(blk::iq1m_scale_bits(x[b].scales)) * y[b].d * static_cast<float>(isum);
  }
  return s;
}

}  // namespace k3::kernels::impl
