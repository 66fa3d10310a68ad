// grammar/chat_grammar: the grammar of a whole K3 assistant turn when its answer or its tool
// calls are constrained.
// Contract: chat_output_gbnf() writes GBNF for the XTML turn the output parser expects
// (docs/CHAT-FORMAT.md): an unconstrained think channel when the prompt opened one (ended by
// C(think) T(response), or T(response) alone), the response channel whose content is the
// content rules, else empty when a call is required, else free text, then the tools channel (absent, optional
// or required) whose calls name declared tools and carry their arguments as a JSON block
// (`<|open|>json type="object"<|sep|>{…}<|close|>json<|sep|>`), constrained by the tool's
// rules, then C(message). Markers are special tokens (`<|open|>`…), so the text between them
// can never forge one. Tag names and attribute values are escaped as the format says.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace k3::grammar {

struct ChatConstraint {
  bool thinking = true;  // the generation prompt opened <|open|>think<|sep|>
  // The rule that matches the response content (defined in another source, see
  // parse_gbnf's sources); none: free text.
  std::optional<std::string> content_root;
  struct Tool {
    std::string name;
    std::string root;  // the rule that matches its arguments object
  };
  std::vector<Tool> tools;
  enum class Calls { None, Optional, Required };
  Calls calls = Calls::None;
};

// The composing rules (start rule `root`). Requires tools when calls are Required.
std::string chat_output_gbnf(const ChatConstraint& c);

}  // namespace k3::grammar
