// tools/convert/vision: `k3 convert --mmproj` — the Kimi-K3 vision tower (`vision_tower.*`) and
// projector (`mm_projector.*`) of a Hugging Face checkpoint to an mmproj GGUF
// (general.architecture "clip", clip.projector_type "kimik3"), as llama.cpp's reference
// converter writes it (KimiK3VisionModel, `convert_hf_to_gguf.py --mmproj`): the same keys in
// the same order and types, the same tensor names, order, shapes and dtypes, the same bytes.
// docs/convert.md ("The vision tower: mmproj") lists every key and tensor.
// Contract: the config, every vision tensor's presence, dtype and shape, and the output path are
// checked before the first byte is written; any problem throws k3::Error naming the key, tensor
// or file, and leaves no output file. A tensor under vision_tower./mm_projector. that the mapping
// does not know is an error; text-model tensors are ignored. Tensors are written in the
// checkpoint's order (files by name, tensors by name within a file), as the reference does.
#pragma once

#include <string>

#include "tools/convert/convert.h"

namespace k3::tools {

// opt.out_path: a file, a directory (the default name inside it) or empty (the default name
// inside hf_dir): "mmproj-<name>-<OUTTYPE>.gguf". opt.chat_template_file is not used.
ConvertResult convert_hf_mmproj(const ConvertOptions& opt);

}  // namespace k3::tools
