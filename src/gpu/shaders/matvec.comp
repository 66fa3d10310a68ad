#version 450
// y[t][y_row0 + r] = Σ_k W[w_row0 + r][k]·x[t][k] for rows of one binding of W (a matrix larger
// than the device's binding limit is split by rows: gpu/matrix.h). Eight threads per row stride
// over its blocks and reduce in shared memory. Each weight byte is read once per call.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Acts { float x[]; };
layout(std430, binding = 2) buffer Out { float y[]; };
layout(push_constant) uniform Push {
  uint rows;       // rows to compute
  uint cols;
  uint row_bytes;
  uint n_tok;
  uint x_stride;   // floats between token rows of x
  uint y_stride;   // floats between token rows of y
  uint w_row0;     // the first row to compute, within this binding
  uint y_row0;     // where its output goes in a token's row of y
} p;

#if defined(W_IQ2_XXS) || defined(W_IQ1_S) || defined(W_IQ1_M)
// The type's codebook (grids, sign masks), uploaded with the matrix.
layout(std430, binding = 3) readonly buffer Tables { uint tab[]; };
#endif
#include "bytes.glsl"
#include "weight_blocks.glsl"

shared float partial[64];

// A workgroup computes ROWS rows, LANES threads each striding over a row's blocks, for every
// token: a prefill of n tokens launches as many workgroups as a decode (launches dominate on
// lavapipe), and the row's bytes stay in cache across the tokens, TOK_TILE per pass.
#define ROWS 8u
#define LANES 8u
#define TOK_TILE 4u

void main() {
  const uint lid = gl_LocalInvocationID.x, lane = lid % LANES, sub = lid / LANES;
  const uint nb = p.cols / BLOCK_ELEMS;
  for (uint r0 = gl_WorkGroupID.x * ROWS; r0 < p.rows; r0 += gl_NumWorkGroups.x * ROWS) {
    const uint r = r0 + sub;
    const bool live = r < p.rows;
    const uint base = (p.w_row0 + r) * p.row_bytes;
    for (uint t0 = 0u; t0 < p.n_tok; t0 += TOK_TILE) {
      const uint nt = min(TOK_TILE, p.n_tok - t0);
      float acc[TOK_TILE];
      for (uint k = 0u; k < TOK_TILE; ++k) acc[k] = 0.0;
      if (live)
        for (uint b = lane; b < nb; b += LANES)
          for (uint k = 0u; k < nt; ++k)
            acc[k] += block_dot(base + b * BLOCK_BYTES, (t0 + k) * p.x_stride + b * BLOCK_ELEMS);
      for (uint k = 0u; k < nt; ++k) {
        partial[lid] = acc[k];
        barrier();
        for (uint s = LANES / 2u; s > 0u; s >>= 1) {
          if (lane < s) partial[lid] += partial[lid + s];
          barrier();
        }
        if (lane == 0u && live) y[(t0 + k) * p.y_stride + p.y_row0 + r] = partial[lid];
        barrier();
      }
    }
  }
}
