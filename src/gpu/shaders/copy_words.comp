#version 450
// dst[i] = src[i] for n words: the device's copy bandwidth, the roofline of k3 bench -ngl.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Push { uint n_vec4; } p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.n_vec4; i += gl_NumWorkGroups.x * 256u) dst[i] = src[i];
}
