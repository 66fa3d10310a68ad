// One block of a weight row, dotted with the activations: block_dot(o, xo) returns
// Σ_e W[e]·x[xo + e] over the BLOCK_ELEMS elements of the block at byte offset o.
// The decoding is the CPU's (quant/dequant_*.cpp, docs/quant-formats.md); sums are float32.
// Expects bytes.glsl and `float x[]`.

// Helpers shared by several types (each shader compiles one type).
#if defined(W_Q2_K) || defined(W_Q3_K)
// The 2-bit level of element e in the Q2_K/Q3_K layout (qs at byte q).
uint q2_level(uint q, uint e) { return (w_u8(q + 32u * (e / 128u) + (e % 32u)) >> (2u * ((e % 128u) / 32u))) & 3u; }
#endif
#if defined(W_Q4_K) || defined(W_Q5_K)
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
#endif
#if defined(W_IQ4_NL) || defined(W_IQ4_XS)
const float kLevels[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0,
                                    38.0, 53.0, 69.0, 89.0, 113.0);
#endif

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

#elif defined(W_Q4_K) || defined(W_Q5_K)
// Q4_K: d, dmin, 12 scale bytes, 128 nibble bytes. Q5_K adds the 32 bytes of fifth bits (qh)
// before the nibbles.
#define BLOCK_ELEMS 256u
#if defined(W_Q4_K)
#define BLOCK_BYTES 144u
#define QS_AT 16u
#else
#define BLOCK_BYTES 176u
#define QS_AT 48u
#endif
float block_dot(uint o, uint xo) {
  const float d = w_f16(o), dmin = w_f16(o + 2u);
  float total = 0.0;
  for (uint sb = 0u; sb < 8u; ++sb) {  // 32-element sub-blocks; chunk sb/2, nibble sb%2
    float sc, m;
    scale_min(o, sb, sc, m);
    const uint qs = o + QS_AT + 32u * (sb / 2u);
    const uint shift = 4u * (sb % 2u);
    float dot = 0.0, xs = 0.0;
    for (uint l = 0u; l < 32u; ++l) {
      const float xv = x[xo + 32u * sb + l];
      uint q = (w_u8(qs + l) >> shift) & 15u;
#if defined(W_Q5_K)
      q += 16u * ((w_u8(o + 16u + l) >> sb) & 1u);
#endif
      dot += float(q) * xv;
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

#elif defined(W_Q2_K)
#define BLOCK_ELEMS 256u
#define BLOCK_BYTES 84u
float block_dot(uint o, uint xo) {
  const float d = w_f16(o + 80u), dmin = w_f16(o + 82u);
  float total = 0.0;
  for (uint g = 0u; g < 16u; ++g) {
    const uint sc = w_u8(o + g);
    float dot = 0.0, xs = 0.0;
    for (uint i = 0u; i < 16u; ++i) {
      const uint e = 16u * g + i;
      const float xv = x[xo + e];
      dot += float(q2_level(o + 16u, e)) * xv;
      xs += xv;
    }
    total += d * float(sc & 15u) * dot - dmin * float(sc >> 4) * xs;
  }
  return total;
}

#elif defined(W_Q3_K)
#define BLOCK_ELEMS 256u
#define BLOCK_BYTES 110u
// Signed six-bit scale j of the 12 bytes at s (quant/blocks.h, q3k_scales).
int q3_scale(uint s, uint j) {
  const uint low4 = j < 8u ? (w_u8(s + j) & 15u) : (w_u8(s + j - 8u) >> 4);
  const uint high2 = (w_u8(s + 8u + j % 4u) >> (2u * (j / 4u))) & 3u;
  return int(low4 | (high2 << 4)) - 32;
}
float block_dot(uint o, uint xo) {
  const float d = w_f16(o + 108u);
  float total = 0.0;
  for (uint g = 0u; g < 16u; ++g) {
    float dot = 0.0;
    for (uint i = 0u; i < 16u; ++i) {
      const uint e = 16u * g + i;
      const uint h = (w_u8(o + e % 32u) >> (e / 32u)) & 1u;
      dot += float(int(q2_level(o + 32u, e)) - (h != 0u ? 0 : 4)) * x[xo + e];
    }
    total += d * float(q3_scale(o + 96u, g)) * dot;
  }
  return total;
}

#elif defined(W_IQ4_XS)
#define BLOCK_ELEMS 256u
#define BLOCK_BYTES 136u
float block_dot(uint o, uint xo) {
  const float d = w_f16(o);
  const uint sh = w_u16(o + 2u);
  float total = 0.0;
  for (uint sb = 0u; sb < 8u; ++sb) {
    const uint ls = ((w_u8(o + 4u + sb / 2u) >> (4u * (sb % 2u))) & 15u) | (((sh >> (2u * sb)) & 3u) << 4);
    float s = 0.0;
    for (uint j = 0u; j < 16u; ++j) {
      const uint b = w_u8(o + 8u + 16u * sb + j);
      s += kLevels[b & 15u] * x[xo + 32u * sb + j] + kLevels[b >> 4] * x[xo + 32u * sb + j + 16u];
    }
    total += d * float(int(ls) - 32) * s;
  }
  return total;
}

#elif defined(W_IQ2_XXS)
#define BLOCK_ELEMS 256u
#define BLOCK_BYTES 66u
// tab: the 256 grid entries as (low, high) words, then the 128 sign bytes (gpu/matrix.cpp).
uint grid_byte(uint idx, uint j) { return (tab[2u * idx + j / 4u] >> (8u * (j % 4u))) & 255u; }
uint sign_mask(uint k) { return (tab[512u + k / 4u] >> (8u * (k % 4u))) & 255u; }
float block_dot(uint o, uint xo) {
  const float d = w_f16(o);
  float total = 0.0;
  for (uint sb = 0u; sb < 8u; ++sb) {
    const uint aw = w_u32(o + 2u + 8u * sb), bw = w_u32(o + 6u + 8u * sb);
    const float db = d * (0.5 + float(bw >> 28)) * 0.25;
    float s = 0.0;
    for (uint l = 0u; l < 4u; ++l) {
      const uint idx = (aw >> (8u * l)) & 255u, mask = sign_mask((bw >> (7u * l)) & 127u);
      for (uint j = 0u; j < 8u; ++j) {
        const float v = float(grid_byte(idx, j));
        s += ((mask >> j) & 1u) != 0u ? -v * x[xo + 32u * sb + 8u * l + j] : v * x[xo + 32u * sb + 8u * l + j];
      }
    }
    total += db * s;
  }
  return total;
}

#elif defined(W_IQ1_S) || defined(W_IQ1_M)
#define BLOCK_ELEMS 256u
// tab: the 2048 IQ1 grid entries as (low, high) words of signed bytes in {-1, 0, 1}.
float grid_coord(uint idx, uint j) { return float(int(tab[2u * idx + j / 4u] << (24u - 8u * (j % 4u))) >> 24); }
// dl·Σ (coord + delta)·x over the eight elements of grid entry idx.
float group8(uint idx, float delta, uint xo) {
  float s = 0.0, xs = 0.0;
  for (uint j = 0u; j < 8u; ++j) {
    s += grid_coord(idx, j) * x[xo + j];
    xs += x[xo + j];
  }
  return s + delta * xs;
}
#if defined(W_IQ1_S)
#define BLOCK_BYTES 50u
float block_dot(uint o, uint xo) {
  const float d = w_f16(o);
  float total = 0.0;
  for (uint sb = 0u; sb < 8u; ++sb) {
    const uint h = w_u16(o + 34u + 2u * sb);
    const float dl = d * float(2u * ((h >> 12) & 7u) + 1u);
    const float delta = (h & 0x8000u) != 0u ? -0.125 : 0.125;
    float s = 0.0;
    for (uint l = 0u; l < 4u; ++l) {
      const uint idx = w_u8(o + 2u + 4u * sb + l) | (((h >> (3u * l)) & 7u) << 8);
      s += group8(idx, delta, xo + 32u * sb + 8u * l);
    }
    total += dl * s;
  }
  return total;
}
#else
#define BLOCK_BYTES 56u
float block_dot(uint o, uint xo) {
  uint sc[4];
  uint dbits = 0u;
  for (uint k = 0u; k < 4u; ++k) {
    sc[k] = w_u16(o + 48u + 2u * k);
    dbits |= (sc[k] >> 12) << (4u * k);
  }
  const float d = unpackHalf2x16(dbits).x;
  float total = 0.0;
  for (uint t = 0u; t < 16u; ++t) {
    const float dl = d * float(2u * ((sc[t / 4u] >> (3u * (t % 4u))) & 7u) + 1u);
    float s = 0.0;
    for (uint half_ = 0u; half_ < 2u; ++half_) {
      const uint bits = w_u8(o + 32u + t) >> (4u * half_);
      const float delta = (bits & 8u) != 0u ? -0.125 : 0.125;
      const uint idx = w_u8(o + 2u * t + half_) | ((bits & 7u) << 8);
      s += group8(idx, delta, xo + 16u * t + 8u * half_);
    }
    total += dl * s;
  }
  return total;
}
#endif

#elif defined(W_Q4_0) || defined(W_Q4_1) || defined(W_Q5_0) || defined(W_Q5_1)
// The legacy 32-element types: d (and m) in f16, the fifth bits in a u32, nibbles as IQ4_NL.
#define BLOCK_ELEMS 32u
#if defined(W_Q4_0)
#define BLOCK_BYTES 18u
#define QS_AT 2u
#elif defined(W_Q4_1)
#define BLOCK_BYTES 20u
#define QS_AT 4u
#elif defined(W_Q5_0)
#define BLOCK_BYTES 22u
#define QS_AT 6u
#define QH_AT 2u
#else
#define BLOCK_BYTES 24u
#define QS_AT 8u
#define QH_AT 4u
#endif
float block_dot(uint o, uint xo) {
#if defined(QH_AT)
  const uint qh = w_u32(o + QH_AT);
#endif
  float s = 0.0, xs = 0.0;
  for (uint j = 0u; j < 16u; ++j) {
    const uint b = w_u8(o + QS_AT + j);
    uint lo = b & 15u, hi = b >> 4;
#if defined(QH_AT)
    lo |= ((qh >> j) & 1u) << 4;
    hi |= ((qh >> (j + 16u)) & 1u) << 4;
#endif
    s += float(lo) * x[xo + j] + float(hi) * x[xo + j + 16u];
    xs += x[xo + j] + x[xo + j + 16u];
  }
  const float d = w_f16(o);
#if defined(W_Q4_0)
  return d * (s - 8.0 * xs);
#elif defined(W_Q5_0)
  return d * (s - 16.0 * xs);
#else
  return d * s + w_f16(o + 2u) * xs;
#endif
}

#else
#error "matvec.comp: define the weight type (W_F32, W_Q8_0, ...)"
#endif
