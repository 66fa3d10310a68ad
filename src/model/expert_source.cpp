// model/expert_source: the mapped (in-place) expert store.
#include "model/expert_source.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/schema.h"
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
    for (uint32_t il = hp.n_layer_dense_lead; il < hp.n_layer; ++il) {
      auto bind = [&](schema::Tensor kind) {
        const std::vector<int64_t> ne = schema::tensor_shape(kind, hp);  // [in, out, X]
        const int64_t in = ne[0], out = ne[1], X = ne[2];
        const std::string name = schema::tensor_name(kind, il);
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
      layers_[il].gate = bind(schema::Tensor::ExpGate);
      layers_[il].up = bind(schema::Tensor::ExpUp);
      layers_[il].down = bind(schema::Tensor::ExpDown);
    }
  }

  void will_need(uint32_t, std::span<const int32_t>) override {}

  ExpertWeights acquire(uint32_t layer, int32_t e) override {
    const LayerExperts& l = layers_[layer];
    auto at = [e](kernels::WeightView v) {
      const int64_t r0 = static_cast<int64_t>(e) * v.rows;
      v.data = v.row(r0);
      return v;
    };
    return {at(l.gate), at(l.up), at(l.down)};
  }

  void release(uint32_t, int32_t) override {}

 private:
  std::vector<LayerExperts> layers_;
};

}  // namespace

std::unique_ptr<ExpertSource> make_mapped_expert_source(const gguf::GgufFile& file, const HParams& hp) {
  return std::make_unique<MappedExpertSource>(file, hp);
}

}  // namespace k3::model
