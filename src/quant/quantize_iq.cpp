// Placeholder until the grid quantizers land.
#include "quant/quantize_iq.h"

#include "core/error.h"

namespace k3::quant {

bool is_grid_type(Type t) {
  switch (t) {
    case Type::IQ1_S: case Type::IQ1_M: case Type::IQ2_XXS: case Type::IQ2_XS:
    case Type::IQ2_S: case Type::IQ3_XXS: case Type::IQ3_S:
      return true;
    default:
      return false;
  }
}

size_t quantize_iq(Type t, const float*, void*, int64_t, int64_t, const float*) {
  fail("quantization to {} is not implemented yet", type_name(t));
}

}  // namespace k3::quant
