#version 450
// y[t] = x[t] / sqrt(mean(x[t]²) + eps) · g for n rows of width E (model/ops.h rmsnorm_rows):
// one workgroup per row; the sum of squares in float32, reduced in shared memory.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer Gain { float g[]; };
layout(std430, binding = 2) buffer Out { float y[]; };
layout(push_constant) uniform Push {
  uint width;
  uint x_stride;
  uint y_stride;
  float eps;
} p;

shared float partial[64];

void main() {
  const uint lid = gl_LocalInvocationID.x, t = gl_WorkGroupID.x;
  float ss = 0.0;
  for (uint i = lid; i < p.width; i += 64u) {
    const float v = x[t * p.x_stride + i];
    ss += v * v;
  }
  partial[lid] = ss;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (lid < s) partial[lid] += partial[lid + s];
    barrier();
  }
  const float scale = 1.0 / sqrt(partial[0] / float(p.width) + p.eps);
  for (uint i = lid; i < p.width; i += 64u) y[t * p.y_stride + i] = x[t * p.x_stride + i] * scale * g[i];
}
