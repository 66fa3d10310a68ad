// kernels/x86/cpu_features: which of the wider x86 builds this CPU can run (vec_dot.cpp picks
// its table entries with these). Compiled with the baseline flags, unlike the AVX-512 and
// AVX-VNNI files whose kernels these calls guard: a check must not itself need the extension.
#include <cstdio>
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

namespace {

CpuPath best_path() {
  if (cpu_has_avx512_iq()) return CpuPath::avx512;
  return cpu_has_avx_vnni() ? CpuPath::avx_vnni : CpuPath::avx2;
}

// K3_CPU may ask for a narrower path than the CPU's best (to measure it on a wider host), never
// a wider one: an instruction the CPU lacks would kill the process, so that request is refused
// aloud and the best path kept.
CpuPath chosen_path() {
  const char* env = std::getenv("K3_CPU");
  const std::string_view want = env ? env : "";
  const CpuPath best = best_path();
  if (want.empty() || want == "native") return best;
  CpuPath asked;
  if (want == "avx2") asked = CpuPath::avx2;
  else if (want == "avx-vnni" || want == "avxvnni") asked = CpuPath::avx_vnni;
  else if (want == "avx512") asked = CpuPath::avx512;
  else {
    std::fprintf(stderr, "k3: K3_CPU=%s is not a kernel path (avx2, avx-vnni, avx512, native); using %s\n",
                 env, cpu_path_name(best));
    return best;
  }
  const bool can = asked == CpuPath::avx2 || (asked == CpuPath::avx_vnni && cpu_has_avx_vnni()) ||
                   (asked == CpuPath::avx512 && cpu_has_avx512_iq());
  if (!can) {
    std::fprintf(stderr, "k3: K3_CPU=%s: this CPU lacks it; using %s\n", env, cpu_path_name(best));
    return best;
  }
  return asked;
}

}  // namespace

CpuPath cpu_path() {
  static const CpuPath path = chosen_path();
  return path;
}

const char* cpu_path_name(CpuPath p) {
  switch (p) {
    case CpuPath::avx2: return "avx2";
    case CpuPath::avx_vnni: return "avx-vnni";
    case CpuPath::avx512: return "avx512";
  }
  return "?";
}

bool use_avx_vnni() { return cpu_path() != CpuPath::avx2 && cpu_has_avx_vnni(); }
bool use_avx512() { return cpu_path() == CpuPath::avx512; }

}  // namespace k3::kernels::impl
