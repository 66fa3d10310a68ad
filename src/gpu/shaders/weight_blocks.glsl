// One block of a weight row, dotted with the activations: block_dot(o, xo) returns
// Σ_e W[e]·x[xo + e] over the BLOCK_ELEMS elements of the block at byte offset o.
// The decoding is the CPU's (quant/dequant_*.cpp, docs/quant-formats.md); sums are float32.
// Expects bytes.glsl and `float x[]`.

#if defined(W_F32)
#define BLOCK_ELEMS 1u
#define BLOCK_BYTES 4u
float block_dot(uint o, uint xo) { return uintBitsToFloat(w[o >> 2]) * x[xo]; }

#elif defined(W_F16)
#define BLOCK_ELEMS 1u
#define BLOCK_BYTES 2u
float block_dot(uint o, uint xo) { return w_f16(o) * x[xo]; }

#elif defined(W_BF16)
#define BLOCK_ELEMS 1u
#define BLOCK_BYTES 2u
float block_dot(uint o, uint xo) { return uintBitsToFloat(w_u16(o) << 16) * x[xo]; }

#elif defined(W_Q8_0)
#define BLOCK_ELEMS 32u
#define BLOCK_BYTES 34u
float block_dot(uint o, uint xo) {
  float s = 0.0;
  for (uint j = 0u; j < 32u; j += 4u) {
    const uint q = w_u32(o + 2u + j);
    s += float(int(q << 24) >> 24) * x[xo + j] + float(int(q << 16) >> 24) * x[xo + j + 1u] +
         float(int(q << 8) >> 24) * x[xo + j + 2u] + float(int(q) >> 24) * x[xo + j + 3u];
  }
  return w_f16(o) * s;
}

#elif defined(W_IQ4_NL) || defined(W_MXFP4)
#define BLOCK_ELEMS 32u
#if defined(W_IQ4_NL)
#define BLOCK_BYTES 18u
#define QS_AT 2u
const float kLevels[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0,
                                    38.0, 53.0, 69.0, 89.0, 113.0);
float block_scale(uint o) { return w_f16(o); }
#else
#define BLOCK_BYTES 17u
#define QS_AT 1u
// The doubled E2M1 values, hence the half scale 2^(e-128) (quant/blocks.h, e8m0_half).
const float kLevels[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0,
                                    -8.0, -12.0);
float block_scale(uint o) {
  const uint e = w_u8(o);
  return uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23));
}
#endif
float block_dot(uint o, uint xo) {
  float s = 0.0;
  for (uint j = 0u; j < 16u; ++j) {
    const uint b = w_u8(o + QS_AT + j);
    s += kLevels[b & 15u] * x[xo + j] + kLevels[b >> 4] * x[xo + j + 16u];
  }
  return block_scale(o) * s;
}

#elif defined(W_Q4_K)
#define BLOCK_ELEMS 256u
#define BLOCK_BYTES 144u
// Six-bit scale and min of sub-block j from the 12 bytes at o + 4 (quant/blocks.h, q4k_scale_min).
void scale_min(uint o, uint j, out float sc, out float m) {
  const uint s = o + 4u;
  if (j < 4u) {
    sc = float(w_u8(s + j) & 63u);
    m = float(w_u8(s + j + 4u) & 63u);
  } else {
    sc = float((w_u8(s + j + 4u) & 15u) | ((w_u8(s + j - 4u) >> 6) << 4));
    m = float((w_u8(s + j + 4u) >> 4) | ((w_u8(s + j) >> 6) << 4));
  }
}
float block_dot(uint o, uint xo) {
  const float d = w_f16(o), dmin = w_f16(o + 2u);
  float total = 0.0;
  for (uint sb = 0u; sb < 8u; ++sb) {  // 32-element sub-blocks; chunk sb/2, nibble sb%2
    float sc, m;
    scale_min(o, sb, sc, m);
    const uint qs = o + 16u + 32u * (sb / 2u);
    const uint shift = 4u * (sb % 2u);
    float dot = 0.0, xs = 0.0;
    for (uint l = 0u; l < 32u; ++l) {
      const float xv = x[xo + 32u * sb + l];
      dot += float((w_u8(qs + l) >> shift) & 15u) * xv;
      xs += xv;
    }
    total += d * sc * dot - dmin * m * xs;
  }
  return total;
}

#elif defined(W_Q6_K)
#define BLOCK_ELEMS 256u
#define BLOCK_BYTES 210u
float block_dot(uint o, uint xo) {
  const float d = w_f16(o + 208u);
  float total = 0.0;
  for (uint g = 0u; g < 16u; ++g) {  // 16-element groups, one scale each
    float dot = 0.0;
    for (uint i = 0u; i < 16u; ++i) {
      const uint e = 16u * g + i;
      const uint h = e / 128u, r = e % 128u, k = r / 32u, l = r % 32u;
      const uint lowb = w_u8(o + 64u * h + l + 32u * (k & 1u));
      const uint low = k < 2u ? (lowb & 15u) : (lowb >> 4);
      const uint high = (w_u8(o + 128u + 32u * h + l) >> (2u * k)) & 3u;
      dot += float(int(low | (high << 4)) - 32) * x[xo + e];
    }
    total += d * float(w_i8(o + 192u + g)) * dot;
  }
  return total;
}

#else
#error "matvec.comp: define the weight type (W_F32, W_Q8_0, ...)"
#endif
