// model/identity: a 64-bit name for "these weights with these hyperparameters", stamped into
// saved sequence states (runtime/state_file.h) so a state is only ever restored into the
// model that computed it.
// Contract: model_identity(m) hashes the tensor table (name, type, shape of every tensor),
// the hyperparameters that shape a sequence state or a forward pass, and a sample of the
// weights' bytes (the first and last 64 bytes of every tensor that is not a routed expert's,
// so two files with the same shapes but other weights differ, without touching expert pages
// a streamed model keeps on disk). Offsets and the file's name do not count: a model split
// into shards or moved is the same model. Cheap (a few pages per tensor); call once.
#pragma once

#include <cstdint>

namespace k3::model {

class Model;

uint64_t model_identity(const Model& m);

}  // namespace k3::model
