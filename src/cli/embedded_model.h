// cli/embedded_model: the tiny K3 model built into the k3 binary, for `k3 run` without -m.
// Contract: the bytes are the `tiny` synth preset with its fixed seed, generated at build time
// (cmake/embed_model.cpp), so every build embeds the same model. load_embedded_model() hands
// them to the normal GGUF loader through an anonymous in-memory file (no disk, nothing left
// behind) and returns the loaded model, or throws k3::Error.
#pragma once

#include <cstddef>
#include <memory>

namespace k3::model {
class Model;
}

extern "C" {
extern const unsigned char k3_embedded_model_data[];
extern const size_t k3_embedded_model_size;
}

namespace k3::cli {

std::shared_ptr<model::Model> load_embedded_model();

}  // namespace k3::cli
