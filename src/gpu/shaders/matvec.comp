#version 450
// y[t][y_row0 + r] = Σ_k W[w_row0 + r][k]·x[t][k] for rows of one binding of W (a matrix larger
// than the device's binding limit is split by rows: gpu/matrix.h). One workgroup per (row, token):
// its threads stride over the row's blocks and reduce in shared memory. Decode reads each
// weight byte once; a batch of tokens re-reads the row per token (the tiled kernel is the
// prefill path).
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

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  const uint nb = p.cols / BLOCK_ELEMS;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    const uint base = (p.w_row0 + r) * p.row_bytes;
    float acc = 0.0;
    for (uint b = lid; b < nb; b += 64u) acc += block_dot(base + b * BLOCK_BYTES, t * p.x_stride + b * BLOCK_ELEMS);
    partial[lid] = acc;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
      if (lid < s) partial[lid] += partial[lid + s];
      barrier();
    }
    if (lid == 0u) y[t * p.y_stride + p.y_row0 + r] = partial[0];
    barrier();
  }
}
