// gpu/shader_table: the SPIR-V of every shader, compiled from src/gpu/shaders/ by glslc at build
// time (cmake/gpu_shaders.cmake generates the table). Present only in a build with Vulkan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace k3::gpu {

struct ShaderBlob {
  const char* name;  // the entry's NAME in cmake/gpu_shaders.cmake
  const uint32_t* words;
  size_t bytes;
};

std::span<const ShaderBlob> shader_table();

}  // namespace k3::gpu
