// grammar/chat_grammar: see chat_grammar.h.
#include "grammar/chat_grammar.h"

#include <fmt/format.h>

#include "grammar/gbnf.h"

namespace k3::grammar {

namespace {

// An attribute value as the format writes it: & and " escaped, nothing else.
std::string attr_escape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string chat_output_gbnf(const ChatConstraint& c) {
  std::string g;
  g += "root ::= ";
  if (c.thinking) g += "xtml-think ";
  g += "xtml-content <|close|> \"response\" <|sep|> ";
  if (c.calls == ChatConstraint::Calls::Optional) g += "xtml-tools? ";
  if (c.calls == ChatConstraint::Calls::Required) g += "xtml-tools ";
  g += "<|close|> \"message\" <|sep|>\n";
  if (c.thinking)
    g += "xtml-think ::= .* ( <|close|> \"think\" <|sep|> <|open|> \"response\" <|sep|> | "
         "<|open|> \"response\" <|sep|> )\n";
  if (c.content_root) {
    g += "xtml-content ::= " + *c.content_root + "\n";
  } else if (c.calls == ChatConstraint::Calls::Required) {
    g += "xtml-content ::= \"\"\n";  // a forced call comes at once, with no text before it
  } else {
    g += "xtml-content ::= .*\n";
  }
  if (c.calls != ChatConstraint::Calls::None && !c.tools.empty()) {
    g += "xtml-tools ::= <|open|> \"tools\" <|sep|> xtml-call+ <|close|> \"tools\" <|sep|>\n";
    g += "xtml-index ::= [1-9] [0-9]{0,2}\n";
    g += "xtml-call ::= ";
    for (size_t i = 0; i < c.tools.size(); ++i) g += fmt::format("{}xtml-call-{}", i ? " | " : "", i);
    g += "\n";
    for (size_t i = 0; i < c.tools.size(); ++i) {
      const auto& t = c.tools[i];
      g += fmt::format(
          "xtml-call-{} ::= <|open|> {} xtml-index \"\\\"\" <|sep|> <|open|> \"json type=\\\"object\\\"\" "
          "<|sep|> "
          "{} <|close|> \"json\" <|sep|> <|close|> \"call\" <|sep|>\n",
          i, gbnf_quote("call tool=\"" + attr_escape(t.name) + "\" index=\""), t.root);
    }
  }
  return g;
}

}  // namespace k3::grammar
