// server/request_constraint: what a request asks the output to obey, as one grammar.
// Contract: the content constraint comes from exactly one of `response_format`
// (json_object: any object, or llama-server's `schema` inside it; json_schema: its schema,
// honoured strictly when `strict` is true), llama-server's `json_schema` (strict) or
// `grammar` (GBNF, docs/grammar.md). Chat requests add the tool calls: `strict: true` tools
// get their parameters schema; `tool_choice` required or a named function forces a call
// (to that function). The chat grammar covers the whole XTML turn with the reasoning left
// free (grammar/chat_grammar.h); a completion's grammar is the content constraint itself.
// Every schema or grammar we cannot honour is a 400 naming the field and the keyword; no
// constraint asked for gives null (the output is unconstrained, as before).
#pragma once

#include <memory>

#include "text/json_py.h"

namespace k3::grammar {
struct Grammar;
}
namespace k3::text {
class Tokenizer;
}

namespace k3::server {

std::shared_ptr<const grammar::Grammar> chat_constraint(const text::Json& req, bool thinking,
                                                        const text::Tokenizer& tok);
std::shared_ptr<const grammar::Grammar> completion_constraint(const text::Json& req,
                                                              const text::Tokenizer& tok);

}  // namespace k3::server
