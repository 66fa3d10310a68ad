// store/engine_shape: see engine_shape.h.
#include "store/engine_shape.h"

#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/engine.h"

namespace k3::store {

EngineShape shape_of(const model::Model& m, const runtime::EngineOptions& eo) {
  EngineShape s;
  s.n_ctx = runtime::context_size(static_cast<int64_t>(m.hparams().n_ctx_train), eo.n_ctx);  // as the engine
  s.n_seq = eo.n_seq_max;
  s.n_ubatch = eo.n_ubatch;
  s.cache_f16 = eo.cache_type == model::CacheType::F16;
  s.n_threads = eo.n_threads > 0 ? eo.n_threads : ThreadPool::default_threads();  // as the engine
  return s;
}

}  // namespace k3::store
