// model/model: load = open GGUF, read hparams, bind weights, bind the mapped expert store.
#include "model/model.h"

#include <algorithm>

#include "gguf/file.h"

namespace k3::model {

std::shared_ptr<Model> Model::load(const std::string& path) {
  std::shared_ptr<const gguf::GgufFile> f = gguf::GgufFile::open(path);
  return std::make_shared<Model>(std::move(f));
}

Model::Model(std::shared_ptr<const gguf::GgufFile> file) : file_(std::move(file)) {
  hp_ = load_hparams(*file_);
  w_ = bind_weights(*file_, hp_);
  if (hp_.has_moe()) experts_ = make_mapped_expert_source(*file_, hp_);
}

Model::~Model() = default;

void Model::set_gpu(std::shared_ptr<const GpuProducts> gpu, const std::vector<const void*>& placed_trunk) {
  gpu_ = std::move(gpu);
  moved_.insert(moved_.end(), placed_trunk.begin(), placed_trunk.end());
  std::sort(moved_.begin(), moved_.end());
}

void Model::move_trunk(std::shared_ptr<const void> memory,
                       const std::function<const void*(const void*)>& where) {
  for_each_streamed_matrix(w_, [&](WeightView& v) {
    moved_.push_back(v.data);
    v.data = where(v.data);
  });
  std::sort(moved_.begin(), moved_.end());
  trunk_memory_ = std::move(memory);
}

}  // namespace k3::model
