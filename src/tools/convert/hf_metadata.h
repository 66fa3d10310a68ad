// tools/convert/hf_metadata: the general.* authorship keys a Hugging Face checkpoint gets in
// its mmproj GGUF, derived as gguf-py's Metadata does it: sampling defaults from
// generation_config.json; name, organization, basename, finetune, version and size label from
// config.json's `_name_or_path` (when it is a model id, not a path) and then the directory name
// (`Kimi-K3-Instruct` → name "Kimi K3 Instruct", basename "Kimi-K3", finetune "Instruct");
// the parameter-count size label ("412K") when no name part gave one.
// Contract: deterministic, reads only those two files (a README.md model card is not read);
// `name_override` replaces general.name only. model_id_components() is the name heuristic on
// its own (exposed for tests); names are treated as ASCII.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"

namespace k3::tools {

struct ModelIdComponents {
  std::string full_name;  // the part after "org/"
  std::optional<std::string> org, basename, finetune, version, size_label;
};
ModelIdComponents model_id_components(const std::string& model_id, int64_t total_params);

// "meta-llama" → "Meta Llama": words of lower-case letters title-cased, versions kept.
std::string id_to_title(const std::string& s);

// The parameter-count label: 412345 → "412K", 1234567 → "1.2M".
std::string size_label_of(uint64_t n_params);

struct HfGeneralMetadata {
  std::string name;
  std::optional<std::string> organization, basename, finetune, version, size_label;
  std::vector<std::pair<std::string, gguf::Value>> sampling;  // general.sampling.*, in order

  // general.sampling.*, general.name, version, organization, finetune, basename, size_label.
  std::vector<std::pair<std::string, gguf::Value>> kvs() const;
  // The reference's default file name: "mmproj-" + (basename or name) + finetune + version +
  // "-" + OUTTYPE + ".gguf", spaces and slashes as '-'.
  std::string mmproj_file_name(const std::string& outtype_upper) const;
};

HfGeneralMetadata read_hf_general_metadata(const std::string& dir, const std::string& name_override,
                                           uint64_t total_params);

}  // namespace k3::tools
