// cli/embedded_model: the model built into the k3 binary, for `k3 run` / `k3 serve` without -m.
// Contract: the bytes are models/k3-tiny/k3-tiny-Q8_0.gguf (the trained k3-tiny, see
// models/k3-tiny/README.md), linked in by embedded/model_data.cpp (its own library: the glob of src/cli/*.cpp
// must not see it), so every build from the same tree embeds the same model. load_embedded_model() hands them
// to the normal GGUF loader through an anonymous in-memory file (no disk, nothing left behind) and returns
// the loaded model, or throws k3::Error.
#pragma once

#include <cstddef>
#include <memory>

namespace k3::model {
class Model;
}

extern "C" {
extern const unsigned char k3_embedded_model_data[];
extern const unsigned char k3_embedded_model_end[];
}

namespace k3::cli {

// The display name of the embedded model (its general.name).
inline constexpr const char* kEmbeddedModelName = "k3-tiny";

std::shared_ptr<model::Model> load_embedded_model();

}  // namespace k3::cli
