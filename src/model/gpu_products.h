// model/gpu_products: the matrices of the layers placed on the GPU, and the products that run
// there (k3 -ngl, docs/gpu.md).
// Contract: add() uploads a bound matrix (a trunk matrix, or a stacked expert tensor); run()
// takes any product whose weight rows lie inside an uploaded matrix (the whole matrix, or a
// slice: one expert's rows, one rank's rows) and computes it on the device, float32 sums over
// float32 activations (gpu/matrix.h); it returns false for weights that are not there. Thread-
// safe: one round trip at a time per device.
// What this is not yet: the layer's element-wise work (norms, AttnRes, KDA, MLA attention, the
// router) stays on the CPU, so each product is one host round trip (docs/gpu.md says what
// that costs and what comes next).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/matrix.h"
#include "kernels/matmul.h"

namespace k3::model {

class GpuProducts {
 public:
  // The most one round trip's activations, or its results, take on the device: the VRAM plan
  // sets aside twice this (model/gpu_placement.h).
  static constexpr size_t kIoBytes = 64ull << 20;

  explicit GpuProducts(std::unique_ptr<gpu::Device> dev);
  ~GpuProducts();

  // `rows` may exceed w.rows: a stacked tensor of which w is the first slice.
  void add(const kernels::WeightView& w, int64_t rows, std::string_view what);
  bool holds(const kernels::WeightView& w) const { return find(w) != nullptr; }
  bool run(const kernels::WeightView& w, const float* x, int64_t n_tok, float* y, int64_t x_stride = -1,
           int64_t y_stride = -1) const;

  // Several products in one round trip (the projections of one input, say: KDA's q, k, v, gates):
  // each distinct input crosses once. Runs nothing and returns false unless every weight is here
  // and the group's inputs, and its results, each fit one round trip's buffers.
  struct Product {
    const kernels::WeightView* w = nullptr;
    const float* x = nullptr;
    int64_t n_tok = 0;
    float* y = nullptr;
    int64_t x_stride = -1, y_stride = -1;
  };
  bool run_group(std::span<const Product> group) const;

  gpu::Device& device() const { return *dev_; }
  uint64_t weight_bytes() const { return weight_bytes_; }
  // Of those, the trunk's (not routed experts): what the RAM plan no longer counts.
  uint64_t trunk_bytes() const { return trunk_bytes_; }
  void set_trunk_bytes(uint64_t b) { trunk_bytes_ = b; }
  size_t matrices() const { return entries_.size(); }
  // Products run, the host round trips they took, the weight bytes they read, and the wall time
  // spent in them (transfers, waits and the products themselves), so far (k3 bench -ngl).
  uint64_t products() const { return products_; }
  uint64_t round_trips() const { return round_trips_; }
  uint64_t bytes_read() const { return bytes_read_; }
  double seconds() const { return seconds_; }

 private:
  struct Entry {
    const uint8_t* begin = nullptr;
    const uint8_t* end = nullptr;
    size_t row_stride = 0;
    gpu::Matrix m;
  };
  const Entry* find(const kernels::WeightView& w) const;
  size_t io_limit() const;
  void grow_io(size_t in_bytes, size_t out_bytes) const;
  std::unique_ptr<gpu::Device> dev_;
  std::vector<Entry> entries_;  // sorted by begin
  uint64_t weight_bytes_ = 0, trunk_bytes_ = 0;
  mutable std::mutex mutex_;
  // Activations in and results out: host-visible, grown to the largest product.
  mutable gpu::Buffer io_in_, io_out_, dev_in_, dev_out_;
  mutable std::unique_ptr<gpu::Recorder> rec_;
  mutable uint64_t products_ = 0, round_trips_ = 0, bytes_read_ = 0;
  mutable double seconds_ = 0;
};

}  // namespace k3::model
