// store/engine_shape: the engine shape a memory plan is made for, read off the options the
// engine is built with — the one place that turns runtime::EngineOptions into an EngineShape,
// so that every command (run, chat, serve, niah, reap, bench) plans what its engine holds.
// Contract: shape_of(m, eo) has n_ctx = eo.n_ctx, or when that is 0 the model's training
// context (4096 for a file without one); n_seq = eo.n_seq_max (every sequence the engine may
// hold: k3 chat's and k3 serve's prompt-cache snapshots are sequences too); n_ubatch =
// eo.n_ubatch; cache_f16 when eo.cache_type is F16; n_threads = eo.n_threads, or the pool's
// default when that is 0.
#pragma once

#include "store/memory_plan.h"

namespace k3::runtime {
struct EngineOptions;
}

namespace k3::store {

EngineShape shape_of(const model::Model& m, const runtime::EngineOptions& eo);

}  // namespace k3::store
