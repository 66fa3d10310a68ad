// model/model: a loaded Kimi-K3 model: the mapped GGUF, its hyperparameters, the bound
// weights and the expert source.
// Contract: Model::load() validates everything a forward pass will touch (keys, tensor
// names, shapes, types) or throws k3::Error; afterwards the model is immutable and may be
// shared by several engines. The expert source may be replaced before the first forward
// (e.g. by a streaming store).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/expert_source.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace k3::gguf {
class GgufFile;
}

namespace k3::model {

class GpuProducts;

class Model {
 public:
  static std::shared_ptr<Model> load(const std::string& path);
  // Binds a model over an already opened file (the file must outlive the model's use).
  explicit Model(std::shared_ptr<const gguf::GgufFile> file);
  ~Model();

  const HParams& hparams() const { return hp_; }
  const Weights& weights() const { return w_; }
  const gguf::GgufFile& gguf() const { return *file_; }
  std::shared_ptr<const gguf::GgufFile> gguf_shared() const { return file_; }
  ExpertSource& experts() const { return *experts_; }
  void set_expert_source(std::unique_ptr<ExpertSource> src) { experts_ = std::move(src); }
  // Before the first forward: points every streamed trunk matrix (for_each_streamed_matrix)
  // at where(old data), a copy with the same bytes that `memory` keeps alive as long as the
  // model (e.g. the trunk in huge pages, store/resident_trunk.h).
  void move_trunk(std::shared_ptr<const void> memory, const std::function<const void*(const void*)>& where);
  // Where the moved matrices used to be (their GGUF tensor data pointers, sorted); empty until
  // move_trunk. The store leaves these ranges of the mapping alone (store/trunk.h).
  const std::vector<const void*>& moved_trunk() const { return moved_; }
  // The layers placed on the GPU (model/gpu_placement.h); null: everything on the CPU. The
  // placed trunk matrices join moved_trunk(): the CPU no longer reads their pages.
  const GpuProducts* gpu() const { return gpu_.get(); }
  void set_gpu(std::shared_ptr<const GpuProducts> gpu, const std::vector<const void*>& placed_trunk);

 private:
  std::shared_ptr<const gguf::GgufFile> file_;
  HParams hp_;
  Weights w_;
  std::unique_ptr<ExpertSource> experts_;
  std::shared_ptr<const void> trunk_memory_;
  std::vector<const void*> moved_;
  std::shared_ptr<const GpuProducts> gpu_;
};

}  // namespace k3::model
