// text/chat_template: native renderer of Kimi-K3's XTML chat template.
// Contract: render_chat_segments() produces, byte for byte, what Kimi-K3.jinja renders under Jinja2
// 3.1.2 in the Hugging Face environment (TemplateMode::Jinja), or what Moonshot's reference encoder
// renders where it deliberately differs (TemplateMode::Engine, the default: string tool-call
// arguments parsed, no assistant `name`, `developer` rendered as `system`, schema keys sorted by
// code point). Inputs the template rejects throw k3::Error with the template's own message.
// Segments mark the four XTML markers as special; every other byte is a text segment to be
// tokenized on its own with special tokens OFF, so user text spelling "<|open|>" can never become a
// control token (docs/CHAT-FORMAT.md, "Prompt rendering"). There is no general Jinja engine here:
// check_chat_template() tells whether a GGUF's tokenizer.chat_template is K3's so callers can
// refuse anything else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_py.h"

namespace k3::text {

enum class TemplateMode {
  Engine,  // the reference encoder's departures from the raw template (what the server uses)
  Jinja,   // faithful to the Jinja template as Python renders it
};

struct ChatSegment {
  std::string text;
  bool special = false;  // one of <|open|> <|close|> <|sep|> <|end_of_msg|>
  // An image content part: text is the placeholder <|kimi_image_placeholder|>, which a prompt
  // with images replaces by the image (chat/image_tokens.h) and a text-only one keeps as text.
  bool image = false;
  bool operator==(const ChatSegment&) const = default;
};

// The template's inputs. `vars` holds the template variables: add_generation_prompt,
// thinking, thinking_effort, tool_choice, response_format, response_schema. A key that is
// absent is "undefined" and takes the template default (thinking true, effort "max",
// add_generation_prompt false); a key present with null was passed as None.
struct ChatTemplateInput {
  Json messages = Json::array();
  Json tools;  // OpenAI tools array, or null
  Json vars = Json::object();
};

std::vector<ChatSegment> render_chat_segments(const ChatTemplateInput& in,
                                              TemplateMode mode = TemplateMode::Engine);
std::string render_chat(const ChatTemplateInput& in, TemplateMode mode = TemplateMode::Engine);
std::string join_segments(const std::vector<ChatSegment>& segs);

// OpenAI `reasoning_effort` -> template variables (docs/CHAT-FORMAT.md, "Prompt rendering"):
// low/minimal -> low, medium/high -> high, xhigh/max -> max, none -> thinking off. Throws on other
// values.
struct ThinkingSetting {
  bool thinking = true;
  std::string effort = "max";  // meaningful only when thinking
};
ThinkingSetting map_reasoning_effort(std::string_view reasoning_effort);

// Builds template inputs from an OpenAI /v1/chat/completions request object: messages,
// tools, tool_choice ("required"/"none" become notes, "auto" none), response_format,
// reasoning_effort, enable_thinking, and chat_template_kwargs (highest priority).
ChatTemplateInput chat_input_from_request(const Json& request, bool add_generation_prompt = true);

// Whether a model's tokenizer.chat_template is K3's.
enum class TemplateKind {
  K3Exact,     // the known Kimi-K3.jinja (after line-ending/trailing-space normalisation)
  K3Variant,   // XTML markers and K3 structure, but not the known text: render natively, warn
  Missing,     // no template in the model: the built-in K3 renderer applies
  Unsupported  // some other format: refuse
};
struct TemplateCheck {
  TemplateKind kind = TemplateKind::Missing;
  std::uint64_t fingerprint = 0;
  std::string message;  // human explanation for warnings/errors
};
TemplateCheck check_chat_template(std::optional<std::string_view> template_text);
// FNV-1a 64 of the normalised template text (CRLF -> LF, trailing whitespace dropped).
std::uint64_t chat_template_fingerprint(std::string_view template_text);
// Fingerprint of Kimi-K3.jinja sha256 4578103b…e87806b3 (tests/data/text, 14909 bytes).
inline constexpr std::uint64_t kK3TemplateFingerprint = 0x3bf6646373cdb7aeULL;

}  // namespace k3::text
