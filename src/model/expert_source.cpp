// model/expert_source: the mapped (in-place) expert store.
#include "model/expert_source.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/progress.h"
#include "core/thread_pool.h"
#include "gguf/file.h"
#include "kernels/decode_layout.h"
#include "kernels/vec_dot.h"
#include "model/hparams.h"
#include "quant/types.h"

namespace k3::model {
namespace {

struct LayerExperts {
  kernels::WeightView gate, up, down;  // all experts: X·rows rows each
};

class MappedExpertSource final : public ExpertSource {
 public:
  MappedExpertSource(const gguf::GgufFile& f, const HParams& hp) {
    layers_.resize(hp.n_layer);
    n_expert_ = hp.n_expert;
    const int64_t L = hp.expert_in(), Fe = hp.n_ff_exp, X = hp.n_expert;
    for (uint32_t il = hp.n_layer_dense_lead; il < hp.n_layer; ++il) {
      auto bind = [&](const char* what, int64_t in, int64_t out) {
        const std::string name = fmt::format("blk.{}.{}", il, what);
        const gguf::TensorInfo* t = f.tensor(name);
        if (!t) fail("{}: missing tensor '{}' (expected shape [{}, {}, {}])", f.path(), name, in, out, X);
        if (t->dim(0) != in || t->dim(1) != out || t->dim(2) != X || t->dim(3) != 1)
          fail("{}: tensor '{}' has shape {}, expected [{}, {}, {}]", f.path(), name, t->shape_string(), in,
               out, X);
        const quant::TypeInfo* ti = quant::type_info(static_cast<uint32_t>(t->type));
        if (!ti || !ti->file_type || in % ti->block_elems != 0)
          fail("{}: tensor '{}' has an unusable type for rows of {}", f.path(), name, in);
        kernels::WeightView v;
        v.type = t->type;
        v.data = t->data;
        v.cols = in;
        v.rows = out;  // per expert; acquire() offsets by expert
        v.row_stride = quant::row_bytes(t->type, in);
        return v;
      };
      layers_[il].gate = bind("ffn_gate_exps.weight", L, Fe);
      layers_[il].up = bind("ffn_up_exps.weight", L, Fe);
      layers_[il].down = bind("ffn_down_exps.weight", Fe, L);
    }
  }

  void will_need(uint32_t, std::span<const int32_t>) override {}

  ExpertWeights acquire(uint32_t layer, int32_t e) override {
    const LayerExperts& l = layers_[layer];
    auto at = [e](kernels::WeightView v) {
      const int64_t r0 = static_cast<int64_t>(e) * v.rows;
      v.data = v.row(r0);
      if (v.decode) v.decode = v.decode_row(r0);
      return v;
    };
    return {at(l.gate), at(l.up), at(l.down)};
  }

  void release(uint32_t, int32_t) override {}

  DecodeCopy make_decode_copy(uint64_t max_bytes, int n_threads, bool progress_on) override;

 private:
  std::vector<LayerExperts> layers_;
  int64_t n_expert_ = 0;
  // The decode copy's memory (an anonymous mapping), unmapped with the store.
  struct Arena {
    void* p = nullptr;
    size_t n = 0;
    ~Arena() {
      if (p) ::munmap(p, n);
    }
  } decode_memory_;
};

// The matrices (all experts of a layer's gate, up or down) that get a decode copy.
struct Rewrite {
  kernels::WeightView* view;
  size_t at = 0;      // offset in the copy
  size_t stride = 0;  // bytes per row in the decode layout
};

ExpertSource::DecodeCopy MappedExpertSource::make_decode_copy(uint64_t max_bytes, int n_threads,
                                                              bool progress_on) {
  DecodeCopy r;
  if (decode_memory_.p) {
    r.skipped = "already made";
    return r;
  }
  std::vector<Rewrite> todo;
  uint64_t total = 0;
  for (LayerExperts& l : layers_)
    for (kernels::WeightView* v : {&l.gate, &l.up, &l.down}) {
      if (!v->data) continue;
      const kernels::DotKernel* k = kernels::dot_kernel(v->type);
      const size_t ds = kernels::decode_row_bytes(v->type, v->cols);
      if (!k || !k->dot_rows_decode || ds == 0) continue;
      const int64_t rows = v->rows * static_cast<int64_t>(n_expert_);
      todo.push_back({v, total, ds});
      total += (ds * static_cast<uint64_t>(rows) + 63) / 64 * 64;
      r.file_bytes += v->row_stride * static_cast<uint64_t>(rows);
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
    const int64_t rows = w.view->rows * static_cast<int64_t>(n_expert_);
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
          const kernels::WeightView& v = *p.w->view;
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
    w.view->decode = base + w.at;
    w.view->decode_stride = w.stride;
  }
  decode_memory_.p = raw;
  decode_memory_.n = total;
  r.bytes = total;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

std::unique_ptr<ExpertSource> make_mapped_expert_source(const gguf::GgufFile& file, const HParams& hp) {
  return std::make_unique<MappedExpertSource>(file, hp);
}

}  // namespace k3::model
