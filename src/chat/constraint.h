// chat/constraint: what a request asks the output to obey, as one grammar.
// Contract: the content constraint comes from exactly one of `response_format`
// (json_object: any object, or llama-server's `schema` inside it; json_schema: its schema,
// honoured strictly when `strict` is true), llama-server's `json_schema` (strict) or
// `grammar` (GBNF, docs/grammar.md). Chat requests add the tool calls: `strict: true` tools
// get their parameters schema; `tool_choice` required or a named function forces a call
// (to that function). The chat grammar covers the whole XTML turn with the reasoning left
// free (grammar/chat_grammar.h); a completion's grammar is the content constraint itself.
// Every schema or grammar we cannot honour is a 400 naming the field and the keyword; no
// constraint asked for gives null (the output is unconstrained, as before).
// The compile is bounded (ConstraintOptions): past its deadline it is a 400 that says so, a
// client that goes away stops it (grammar::Cancelled propagates, for the caller to drop the
// request), and with a ledger the compiled grammar counts against the server's cap (503).
// Before returning, the grammar's start state is built once, so a grammar too ambiguous to
// run is a 400 here, before the request takes a slot.
#pragma once

#include <memory>

#include "text/json_py.h"

namespace k3::grammar {
struct Grammar;
class WorkBudget;
}  // namespace k3::grammar
namespace k3::text {
class Tokenizer;
}

namespace k3::chat {

class GrammarLedger;

struct ConstraintOptions {
  grammar::WorkBudget* budget = nullptr;  // the compile's deadline and cancellation; null: none
  GrammarLedger* ledger = nullptr;        // where the compiled grammar is counted; null: nowhere
  size_t matcher_bytes = 0;               // the matcher's memory cap for the start check; 0: its default
};

std::shared_ptr<const grammar::Grammar> chat_constraint(const text::Json& req, bool thinking,
                                                        const text::Tokenizer& tok,
                                                        const ConstraintOptions& opt = {});
std::shared_ptr<const grammar::Grammar> completion_constraint(const text::Json& req,
                                                              const text::Tokenizer& tok,
                                                              const ConstraintOptions& opt = {});

}  // namespace k3::chat
