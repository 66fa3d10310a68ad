#include "gpu/matrix.h"

#include <algorithm>

#include "core/error.h"

namespace k3::gpu {

namespace {

// The shader of each type (cmake/gpu_shaders.cmake), or null.
const char* matvec_shader(quant::Type type) {
  using quant::Type;
  switch (type) {
    case Type::F32: return "matvec_f32";
    case Type::F16: return "matvec_f16";
    case Type::BF16: return "matvec_bf16";
    case Type::Q8_0: return "matvec_q8_0";
    case Type::Q4_K: return "matvec_q4_k";
    case Type::Q6_K: return "matvec_q6_k";
    case Type::IQ4_NL: return "matvec_iq4_nl";
    case Type::MXFP4: return "matvec_mxfp4";
    default: return nullptr;
  }
}

struct MatvecPush {
  uint32_t rows, cols, row_bytes, n_tok, x_stride, y_stride, y_offset;
};

// The most workgroups one dimension of a dispatch may have on every device; larger matrices
// loop over their rows inside the shader.
constexpr uint32_t kMaxGroups = 65535;

}  // namespace

bool gpu_supports(quant::Type type) { return matvec_shader(type) != nullptr; }

Matrix upload_matrix(Device& dev, quant::Type type, const void* data, int64_t rows, int64_t cols,
                     size_t row_stride, std::string_view what, size_t max_part_bytes) {
  if (!gpu_supports(type)) fail("{}: the GPU has no kernel for {} weights", what, quant::type_name(type));
  Matrix m;
  m.type = type;
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = quant::row_bytes(type, cols);
  const size_t limit = max_part_bytes ? max_part_bytes : dev.info().max_binding_bytes;
  // The shaders read whole 32-bit words (gpu/shaders/bytes.glsl): each part ends with padding, so
  // that the last block's last bytes, and the word after them, lie inside the binding.
  constexpr size_t kPad = 8;
  const int64_t rows_per_part = limit > kPad ? static_cast<int64_t>((limit - kPad) / m.row_bytes) : 0;
  if (rows_per_part < 1)
    fail("{}: one row of {} bytes exceeds the GPU's binding limit of {}", what, m.row_bytes, limit);
  // The shader addresses bytes with 32-bit offsets; a part stays below 4 GiB whatever the limit.
  const int64_t cap = static_cast<int64_t>((size_t{1} << 32) / m.row_bytes) - 1;
  const int64_t per = std::min(rows_per_part, cap);
  const auto* src = static_cast<const uint8_t*>(data);
  std::vector<uint8_t> packed;
  for (int64_t r0 = 0; r0 < rows; r0 += per) {
    const int64_t n = std::min(per, rows - r0);
    Matrix::Part part;
    part.first_row = r0;
    part.rows = n;
    part.buf = dev.alloc((m.row_bytes * static_cast<size_t>(n) + kPad) & ~size_t{3}, what);
    if (row_stride == m.row_bytes) {
      dev.upload(part.buf, 0, src + r0 * row_stride, m.row_bytes * static_cast<size_t>(n));
    } else {
      packed.resize(m.row_bytes * static_cast<size_t>(n));
      for (int64_t r = 0; r < n; ++r)
        std::copy_n(src + (r0 + r) * row_stride, m.row_bytes, packed.data() + r * m.row_bytes);
      dev.upload(part.buf, 0, packed.data(), packed.size());
    }
    m.parts.push_back(std::move(part));
  }
  return m;
}

void record_matvec(Recorder& rec, const Matrix& w, const BufferRange& x, size_t x_stride,
                   const BufferRange& y, size_t y_stride, uint32_t n_tok) {
  const char* shader = matvec_shader(w.type);
  for (const Matrix::Part& part : w.parts) {
    const MatvecPush push{static_cast<uint32_t>(part.rows),     static_cast<uint32_t>(w.cols),
                          static_cast<uint32_t>(w.row_bytes),   n_tok,
                          static_cast<uint32_t>(x_stride),      static_cast<uint32_t>(y_stride),
                          static_cast<uint32_t>(part.first_row)};
    rec.dispatch(shader, {{&part.buf, 0, 0}, x, y}, push,
                 static_cast<uint32_t>(std::min<int64_t>(part.rows, kMaxGroups)), n_tok);
  }
}

}  // namespace k3::gpu
