#include "gpu/matrix.h"

#include <algorithm>

#include "core/error.h"
#include "quant/codebooks.h"

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
    case Type::Q4_0: return "matvec_q4_0";
    case Type::Q4_1: return "matvec_q4_1";
    case Type::Q5_0: return "matvec_q5_0";
    case Type::Q5_1: return "matvec_q5_1";
    case Type::Q2_K: return "matvec_q2_k";
    case Type::Q3_K: return "matvec_q3_k";
    case Type::Q4_K: return "matvec_q4_k";
    case Type::Q5_K: return "matvec_q5_k";
    case Type::Q6_K: return "matvec_q6_k";
    case Type::IQ4_NL: return "matvec_iq4_nl";
    case Type::IQ4_XS: return "matvec_iq4_xs";
    case Type::MXFP4: return "matvec_mxfp4";
    case Type::IQ2_XXS: return "matvec_iq2_xxs";
    case Type::IQ1_S: return "matvec_iq1_s";
    case Type::IQ1_M: return "matvec_iq1_m";
    default: return nullptr;
  }
}

struct MatvecPush {
  uint32_t rows, cols, row_bytes, n_tok, x_stride, y_stride, w_row0, y_row0;
};

// The most workgroups one dimension of a dispatch may have on every device; larger matrices
// loop over their rows inside the shader.
constexpr uint32_t kMaxGroups = 65535;
// Workgroups for `rows` rows: eight rows each (gpu/shaders/matvec.comp).
uint32_t groups(int64_t rows) { return static_cast<uint32_t>(std::min<int64_t>((rows + 7) / 8, kMaxGroups)); }

// The codebook a type's shader reads at binding 3 (gpu/shaders/weight_blocks.glsl), or empty.
std::vector<uint32_t> codebook(quant::Type type) {
  std::vector<uint32_t> words;
  auto put_grid = [&](const uint64_t* grid, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      words.push_back(static_cast<uint32_t>(grid[i]));
      words.push_back(static_cast<uint32_t>(grid[i] >> 32));
    }
  };
  if (type == quant::Type::IQ2_XXS) {
    put_grid(quant::kIq2xxsGrid, 256);
    for (size_t k = 0; k < 128; k += 4)
      words.push_back(quant::kKsignsIq2xs[k] | quant::kKsignsIq2xs[k + 1] << 8 |
                      quant::kKsignsIq2xs[k + 2] << 16 |
                      static_cast<uint32_t>(quant::kKsignsIq2xs[k + 3]) << 24);
  } else if (type == quant::Type::IQ1_S || type == quant::Type::IQ1_M) {
    put_grid(quant::kIq1sGrid, 2048);
  }
  return words;
}

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
  const std::vector<uint32_t> tables = codebook(type);
  if (!tables.empty()) {
    m.tables = dev.alloc(tables.size() * 4, "codebook");
    dev.upload(m.tables, 0, tables.data(), tables.size() * 4);
  }
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
                   const BufferRange& y, size_t y_stride, uint32_t n_tok, int64_t first_row, int64_t n_rows) {
  const char* shader = matvec_shader(w.type);
  const int64_t end = n_rows < 0 ? w.rows : first_row + n_rows;
  for (const Matrix::Part& part : w.parts) {
    const int64_t r0 = std::max(first_row, part.first_row), r1 = std::min(end, part.first_row + part.rows);
    if (r0 >= r1) continue;
    const MatvecPush push{static_cast<uint32_t>(r1 - r0),
                          static_cast<uint32_t>(w.cols),
                          static_cast<uint32_t>(w.row_bytes),
                          n_tok,
                          static_cast<uint32_t>(x_stride),
                          static_cast<uint32_t>(y_stride),
                          static_cast<uint32_t>(r0 - part.first_row),
                          static_cast<uint32_t>(r0 - first_row)};
    if (w.tables) rec.dispatch(shader, {{&part.buf, 0, 0}, x, y, {&w.tables, 0, 0}}, push, groups(r1 - r0));
    else rec.dispatch(shader, {{&part.buf, 0, 0}, x, y}, push, groups(r1 - r0));
  }
}

}  // namespace k3::gpu
