// cli/embedded_model: the model built into the k3 binary, for `k3 run` / `k3 serve` without -m.
// Contract: the bytes are models/k3-tiny/k3-tiny-Q8_0.gguf (the trained k3-tiny, see
// models/k3-tiny/README.md), linked in by embedded/model_data.cpp (its own library: the glob of src/cli/*.cpp
// must not see it), so every build from the same tree embeds the same model. load_embedded_model() hands them
// to the normal GGUF loader through an anonymous in-memory file (no disk, nothing left behind) and returns
// the loaded model, or throws k3::Error. The tower beside it (embedded/mmproj_data.cpp) loads the same way.
#pragma once

#include <cstddef>
#include <memory>

namespace k3::model {
class Model;
}
namespace k3::vision {
class Tower;
}

extern "C" {
extern const unsigned char k3_embedded_model_data[];
extern const unsigned char k3_embedded_model_end[];
// The embedded model's vision tower (models/k3-tiny/mmproj-k3-tiny-F16.gguf), empty when the
// tree had none at configure time.
extern const unsigned char k3_embedded_mmproj_data[];
extern const unsigned char k3_embedded_mmproj_end[];
}

namespace k3::cli {

// The display name of the embedded model (its general.name).
inline constexpr const char* kEmbeddedModelName = "k3-tiny";

std::shared_ptr<model::Model> load_embedded_model();

// The embedded model's tower: what run, chat and serve use without -m and without --mmproj, so
// the default model sees images (null when the binary carries none).
bool has_embedded_tower();
std::shared_ptr<const vision::Tower> load_embedded_tower();

}  // namespace k3::cli
