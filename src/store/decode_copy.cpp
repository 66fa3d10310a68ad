// store/decode_copy: the decode-layout copy of the routed matrices (see decode_copy.h).
#include "store/decode_copy.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/progress.h"
#include "core/thread_pool.h"
#include "gguf/file.h"
#include "kernels/decode_layout.h"
#include "kernels/vec_dot.h"
#include "model/hparams.h"
#include "model/model.h"
#include "quant/types.h"

namespace k3::store {
namespace {

// One routed matrix of a layer, all experts: rows per expert, the file's rows and, once the
// copy is made, the same rows in the decode layout.
struct Matrix {
  kernels::WeightView all;
  int64_t n_expert = 0;
};

struct LayerMatrices {
  Matrix gate, up, down;
};

// The decode memory (an anonymous mapping), unmapped with the source that serves from it.
struct Arena {
  void* p = nullptr;
  size_t n = 0;
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() {
    if (p) ::munmap(p, n);
  }
};

class DecodeCopySource final : public model::ExpertSource {
 public:
  DecodeCopySource(std::unique_ptr<model::ExpertSource> inner, std::vector<LayerMatrices> layers,
                   std::unique_ptr<Arena> memory)
      : inner_(std::move(inner)), layers_(std::move(layers)), memory_(std::move(memory)) {}

  void will_need(uint32_t layer, std::span<const int32_t> experts) override {
    inner_->will_need(layer, experts);
  }

  model::ExpertWeights acquire(uint32_t layer, int32_t e) override {
    model::ExpertWeights w = inner_->acquire(layer, e);
    const LayerMatrices& l = layers_[layer];
    attach(w.gate, l.gate.all, e);
    attach(w.up, l.up.all, e);
    attach(w.down, l.down.all, e);
    return w;
  }

  void release(uint32_t layer, int32_t e) override { inner_->release(layer, e); }

  void router_input_hint(uint32_t layer, const float* xn, int64_t n_tok) override {
    inner_->router_input_hint(layer, xn, n_tok);
  }

 private:
  static void attach(kernels::WeightView& v, const kernels::WeightView& all, int32_t e) {
    if (!all.decode) return;
    v.decode = all.decode_row(static_cast<int64_t>(e) * all.rows);
    v.decode_stride = all.decode_stride;
  }

  std::unique_ptr<model::ExpertSource> inner_;
  std::vector<LayerMatrices> layers_;
  std::unique_ptr<Arena> memory_;
};

// The routed matrices as the file holds them, every MoE layer (Model::load checked their shapes).
std::vector<LayerMatrices> bind(const model::Model& m) {
  const model::HParams& hp = m.hparams();
  std::vector<LayerMatrices> layers(hp.n_layer);
  for (uint32_t il = hp.n_layer_dense_lead; il < hp.n_layer; ++il) {
    auto matrix = [&](const char* what) {
      Matrix x;
      const gguf::TensorInfo* t = m.gguf().tensor(fmt::format("blk.{}.{}", il, what));
      if (!t) return x;
      x.all.type = t->type;
      x.all.data = t->data;
      x.all.cols = t->dim(0);
      x.all.rows = t->dim(1);  // per expert
      x.all.row_stride = quant::row_bytes(t->type, t->dim(0));
      x.n_expert = t->dim(2);
      return x;
    };
    layers[il] = {matrix("ffn_gate_exps.weight"), matrix("ffn_up_exps.weight"),
                  matrix("ffn_down_exps.weight")};
  }
  return layers;
}

// A matrix that gets a decode copy.
struct Rewrite {
  Matrix* m;
  size_t at = 0;      // offset in the copy
  size_t stride = 0;  // bytes per row in the decode layout
};

}  // namespace

DecodeCopy make_decode_copy(const model::Model& m, std::unique_ptr<model::ExpertSource> inner,
                            uint64_t max_bytes, int n_threads, bool progress_on) {
  DecodeCopy r;
  r.source = std::move(inner);
  if (dynamic_cast<DecodeCopySource*>(r.source.get())) {
    r.skipped = "already made";
    return r;
  }
  std::vector<LayerMatrices> layers = bind(m);
  std::vector<Rewrite> todo;
  uint64_t total = 0;
  for (LayerMatrices& l : layers)
    for (Matrix* x : {&l.gate, &l.up, &l.down}) {
      const kernels::WeightView& v = x->all;
      if (!v.data) continue;
      const kernels::DotKernel* k = kernels::dot_kernel(v.type);
      const size_t ds = kernels::decode_row_bytes(v.type, v.cols);
      if (!k || !k->dot_rows_decode || ds == 0) continue;
      const int64_t rows = v.rows * x->n_expert;
      todo.push_back({x, total, ds});
      const std::string name = quant::type_name(v.type);
      if (r.types.find(name) == std::string::npos) r.types += (r.types.empty() ? "" : ", ") + name;
      total += (ds * static_cast<uint64_t>(rows) + 63) / 64 * 64;
      r.file_bytes += v.row_stride * static_cast<uint64_t>(rows);
    }
  if (todo.empty()) {
    r.skipped = "no routed matrix has a decode layout with a kernel for this CPU";
    r.inapplicable = true;
    return r;
  }
  if (total > max_bytes) {
    r.skipped = fmt::format("the copy ({:.2f} GiB) would not fit in {:.2f} GiB", total / 1073741824.0,
                            max_bytes / 1073741824.0);
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  void* raw = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    r.skipped = fmt::format("cannot allocate {:.2f} GiB: {}", total / 1073741824.0, std::strerror(errno));
    return r;
  }
  auto memory = std::make_unique<Arena>();
  memory->p = raw;
  memory->n = total;
  ::madvise(raw, total, MADV_HUGEPAGE);  // streamed once per token like the trunk: fewer TLB misses
  uint8_t* base = static_cast<uint8_t*>(raw);
  // Pieces of whole rows over the threads; the progress bar is the calling thread's.
  struct Piece {
    const Rewrite* w;
    int64_t row0, rows;
  };
  std::vector<Piece> pieces;
  constexpr int64_t kPieceRows = 4096;
  for (const Rewrite& w : todo) {
    const int64_t rows = w.m->all.rows * w.m->n_expert;
    for (int64_t r0 = 0; r0 < rows; r0 += kPieceRows)
      pieces.push_back({&w, r0, std::min(kPieceRows, rows - r0)});
  }
  std::atomic<uint64_t> done{0};
  Progress bar(r.file_bytes, "decode layout", progress_on && r.file_bytes >= (uint64_t{1} << 30));
  ThreadPool pool(std::max(1, n_threads));
  pool.parallel_for(
      static_cast<int64_t>(pieces.size()),
      [&](int64_t i0, int64_t i1, int thread) {
        for (int64_t i = i0; i < i1; ++i) {
          const Piece& p = pieces[static_cast<size_t>(i)];
          const kernels::WeightView& v = p.w->m->all;
          kernels::repack_for_decode(v.type, v.row(p.row0),
                                     base + p.w->at + static_cast<size_t>(p.row0) * p.w->stride,
                                     p.rows * (v.cols / quant::type_info(v.type).block_elems));
          done += static_cast<uint64_t>(p.rows) * v.row_stride;
          if (thread == 0) bar.set(done.load());
        }
      },
      1, 8);
  bar.finish();
  ::mprotect(raw, total, PROT_READ);
  for (const Rewrite& w : todo) {
    w.m->all.decode = base + w.at;
    w.m->all.decode_stride = w.stride;
  }
  r.bytes = total;
  r.source = std::make_unique<DecodeCopySource>(std::move(r.source), std::move(layers), std::move(memory));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace k3::store
