// kernels/x86/cpu_features: which of the wider x86 builds this CPU can run (vec_dot.cpp picks
// its table entries with these). Compiled with the baseline flags, unlike the AVX-512 and
// AVX-VNNI files whose kernels these calls guard: a check must not itself need the extension.
#include <cstdlib>
#include <string_view>

#include "kernels/vec_dot_impl.h"

namespace k3::kernels::impl {

bool cpu_has_avx512_iq() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
                          __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("bmi2") &&
                          __builtin_cpu_supports("gfni");
  return has;
}

IqLookup cpu_iq_lookup() {
  static const IqLookup lookup = [] {
    const char* force = std::getenv("K3_IQ_LOOKUP");
    const std::string_view f = force ? force : "";
    if (f == "gather") return IqLookup::gather;
    if (f == "loads") return IqLookup::loads;
    if (f == "codes") return IqLookup::codes;
    return __builtin_cpu_is("amd") != 0 ? IqLookup::codes : IqLookup::gather;
  }();
  return lookup;
}

bool cpu_has_avx_vnni() {
  static const bool has = __builtin_cpu_supports("avxvnni");
  return has;
}

}  // namespace k3::kernels::impl
