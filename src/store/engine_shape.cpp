// store/engine_shape: see engine_shape.h.
#include "store/engine_shape.h"

#include "model/model.h"
#include "runtime/engine.h"

namespace k3::store {

EngineShape shape_of(const model::Model& m, const runtime::EngineOptions& eo) {
  EngineShape s;
  const int64_t n_ctx_train = m.hparams().n_ctx_train;
  s.n_ctx = eo.n_ctx > 0 ? eo.n_ctx : (n_ctx_train > 0 ? n_ctx_train : 4096);
  s.n_seq = eo.n_seq_max;
  s.n_ubatch = eo.n_ubatch;
  s.cache_f16 = eo.cache_type == model::CacheType::F16;
  return s;
}

}  // namespace k3::store
