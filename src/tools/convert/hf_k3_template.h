// tools/hf_k3_template: Kimi-K3's chat template (Kimi-K3.jinja, 14,909 bytes, sha256
// 4578103bf225f58d5b7ceb613ccc2ac8fe82b6707b7289211b3d4825e87806b3), embedded so that
// `k3 convert` can write it into GGUFs of checkpoints that ship no template.
// Contract: the returned bytes are exactly that file (tests/data/text/Kimi-K3.jinja, an
// unchanged copy of the golden set); text::check_chat_template() classifies them K3Exact and
// text/chat_template.h's native renderer reproduces their output byte for byte.
#pragma once

#include <string_view>

namespace k3::tools {

std::string_view kimi_k3_chat_template();

}  // namespace k3::tools
