// text/chat_template_markers: the four control markers of K3's XTML chat format and the tag
// names that carry its structure. Contract: these strings are exactly the control-token names
// in the K3 vocabulary; tag names are ordinary text (they only mean something between an
// <|open|>/<|close|> marker and the following <|sep|>).
#pragma once

#include <string_view>

namespace k3::text::xtml {

inline constexpr std::string_view kOpen = "<|open|>";
inline constexpr std::string_view kClose = "<|close|>";
inline constexpr std::string_view kSep = "<|sep|>";
inline constexpr std::string_view kEndOfMsg = "<|end_of_msg|>";

// Control-token names that end generation besides <|end_of_msg|> (llama.cpp stops on them by
// name too; docs/MODEL.md).
inline constexpr std::string_view kEos = "[EOS]";
inline constexpr std::string_view kEot = "[EOT]";

inline constexpr std::string_view kThink = "think";
inline constexpr std::string_view kResponse = "response";
inline constexpr std::string_view kTools = "tools";
inline constexpr std::string_view kMessage = "message";

// Placeholder text the template writes for an image content part.
inline constexpr std::string_view kImagePlaceholder = "<|kimi_image_placeholder|>";

}  // namespace k3::text::xtml
