#include "model/gpu_products.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/assert.h"
#include "core/error.h"

namespace k3::model {

GpuProducts::GpuProducts(std::unique_ptr<gpu::Device> dev) : dev_(std::move(dev)) {
  rec_ = std::make_unique<gpu::Recorder>(*dev_);
}
GpuProducts::~GpuProducts() = default;

void GpuProducts::add(const kernels::WeightView& w, int64_t rows, std::string_view what) {
  if (!w.data) return;
  const auto* begin = static_cast<const uint8_t*>(w.data);
  Entry e;
  e.begin = begin;
  e.end = begin + static_cast<size_t>(rows) * w.row_stride;
  e.row_stride = w.row_stride;
  e.m = gpu::upload_matrix(*dev_, w.type, w.data, rows, w.cols, w.row_stride, what);
  weight_bytes_ += e.m.bytes();
  const auto at = std::upper_bound(entries_.begin(), entries_.end(), e.begin,
                                   [](const uint8_t* p, const Entry& x) { return p < x.begin; });
  entries_.insert(at, std::move(e));
}

const GpuProducts::Entry* GpuProducts::find(const kernels::WeightView& w) const {
  const auto* p = static_cast<const uint8_t*>(w.data);
  auto it = std::upper_bound(entries_.begin(), entries_.end(), p,
                             [](const uint8_t* q, const Entry& x) { return q < x.begin; });
  if (it == entries_.begin()) return nullptr;
  const Entry& e = *--it;
  if (p >= e.end || w.row_stride != e.row_stride || w.type != e.m.type || w.cols != e.m.cols) return nullptr;
  if ((p - e.begin) % static_cast<ptrdiff_t>(e.row_stride) != 0) return nullptr;
  if (p + static_cast<size_t>(w.rows) * w.row_stride > e.end) return nullptr;
  return &e;
}

// What one round trip's activations, and its results, may take: one binding, at most kIoBytes (what
// the VRAM plan set aside), on the 256-byte offsets run_group places them at.
size_t GpuProducts::io_limit() const {
  return std::min<size_t>(dev_->info().max_binding_bytes, kIoBytes) & ~size_t{255};
}

bool GpuProducts::run(const kernels::WeightView& w, const float* x, int64_t n_tok, float* y, int64_t x_stride,
                      int64_t y_stride) const {
  if (!find(w)) return false;
  if (x_stride < 0) x_stride = w.cols;
  if (y_stride < 0) y_stride = w.rows;
  // Tokens per round trip: as many as the buffers take.
  const size_t row_in = static_cast<size_t>(w.cols) * 4, row_out = static_cast<size_t>(w.rows) * 4;
  const int64_t per = static_cast<int64_t>(std::min(io_limit() / row_in, io_limit() / row_out));
  if (per < 1)
    fail("a product of {} x {} has rows too wide for the GPU's activation buffers", w.rows, w.cols);
  for (int64_t t0 = 0; t0 < n_tok; t0 += per) {
    const Product p{&w, x + t0 * x_stride, std::min(per, n_tok - t0), y + t0 * y_stride, x_stride, y_stride};
    const bool ran = run_group({&p, 1});
    K3_ASSERT(ran, "a round of `per` tokens fits the buffers by construction");
  }
  return true;
}

// Grown by doubling, never past kIoBytes (what the VRAM plan set aside; callers ask for no more).
void GpuProducts::grow_io(size_t in_bytes, size_t out_bytes) const {
  auto grow = [&](gpu::Buffer& host, gpu::Buffer& device, size_t bytes, const char* what) {
    if (host.size() >= bytes) return;
    const size_t cap = std::max(bytes, std::min(host.size() * 2, kIoBytes));
    host = dev_->alloc_mapped(cap, what);
    device = dev_->alloc(cap, what);
  };
  grow(io_in_, dev_in_, in_bytes, "activations in");
  grow(io_out_, dev_out_, out_bytes, "products out");
}

bool GpuProducts::run_group(std::span<const Product> group) const {
  // Offsets inside one binding start on 256 bytes, the largest minStorageBufferOffsetAlignment.
  constexpr size_t kAlign = 256;
  auto align = [](size_t b) { return (b + kAlign - 1) & ~(kAlign - 1); };
  struct Placed {
    const Entry* e;
    size_t in_at, out_at;
  };
  std::vector<Placed> placed;
  placed.reserve(group.size());
  size_t in_bytes = 0, out_bytes = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    const Product& p = group[i];
    const Entry* e = find(*p.w);
    if (!e) return false;
    size_t in_at = SIZE_MAX;  // the same input as an earlier product: read once
    for (size_t j = 0; j < i && in_at == SIZE_MAX; ++j)
      if (group[j].x == p.x && group[j].w->cols == p.w->cols && group[j].n_tok == p.n_tok &&
          group[j].x_stride == p.x_stride)
        in_at = placed[j].in_at;
    if (in_at == SIZE_MAX) {
      in_at = in_bytes;
      in_bytes += align(static_cast<size_t>(p.n_tok * p.w->cols) * 4);
    }
    placed.push_back({e, in_at, out_bytes});
    out_bytes += align(static_cast<size_t>(p.n_tok * p.w->rows) * 4);
  }
  if (in_bytes > io_limit() || out_bytes > io_limit()) return false;
  std::lock_guard lock(mutex_);
  const auto start = std::chrono::steady_clock::now();
  grow_io(in_bytes, out_bytes);
  auto* in = static_cast<uint8_t*>(io_in_.mapped());
  for (size_t i = 0; i < group.size(); ++i) {
    const Product& p = group[i];
    const int64_t xs = p.x_stride < 0 ? p.w->cols : p.x_stride;
    for (int64_t t = 0; t < p.n_tok; ++t)
      std::memcpy(in + placed[i].in_at + t * p.w->cols * 4, p.x + t * xs, static_cast<size_t>(p.w->cols) * 4);
  }
  rec_->copy(io_in_, 0, dev_in_, 0, in_bytes);
  for (size_t i = 0; i < group.size(); ++i) {
    const Product& p = group[i];
    const Entry& e = *placed[i].e;
    const int64_t first_row =
        (static_cast<const uint8_t*>(p.w->data) - e.begin) / static_cast<ptrdiff_t>(e.row_stride);
    gpu::record_matvec(*rec_, e.m, {&dev_in_, placed[i].in_at, static_cast<size_t>(p.n_tok * p.w->cols) * 4},
                       static_cast<size_t>(p.w->cols),
                       {&dev_out_, placed[i].out_at, static_cast<size_t>(p.n_tok * p.w->rows) * 4},
                       static_cast<size_t>(p.w->rows), static_cast<uint32_t>(p.n_tok), first_row, p.w->rows);
    bytes_read_ += static_cast<uint64_t>(p.w->rows) * e.m.row_bytes;
  }
  rec_->copy(dev_out_, 0, io_out_, 0, out_bytes);
  dev_->submit(*rec_);
  const auto* out = static_cast<const uint8_t*>(io_out_.mapped());
  for (size_t i = 0; i < group.size(); ++i) {
    const Product& p = group[i];
    const int64_t ys = p.y_stride < 0 ? p.w->rows : p.y_stride;
    for (int64_t t = 0; t < p.n_tok; ++t)
      std::memcpy(p.y + t * ys, out + placed[i].out_at + t * p.w->rows * 4,
                  static_cast<size_t>(p.w->rows) * 4);
  }
  products_ += group.size();
  ++round_trips_;
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

}  // namespace k3::model
