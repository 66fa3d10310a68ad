// cli/grammar_flags: --grammar / --json-schema for the commands that generate (k3 run, k3 chat).
// Contract: the flags take a file (llama-cli's --grammar-file / --json-schema-file spellings
// too) or, when no such file exists, the grammar or schema text itself; load() turns them
// into the request fields the server honours ({"grammar": …} or {"json_schema": …}), so the
// CLI and `k3 serve` constrain output through the same code (chat/constraint.h).
// Both flags at once, an unreadable file or a schema that is not JSON is a usage error.
#pragma once

#include <string>

#include "text/json_py.h"

namespace CLI {
class App;
}

namespace k3::cli {

struct GrammarFlags {
  std::string grammar, json_schema;
};

void add_grammar_flags(CLI::App& app, GrammarFlags& f);
// Adds the constraint fields to `req`; returns an error message ("" when fine).
std::string load_grammar_flags(const GrammarFlags& f, text::Json& req);

}  // namespace k3::cli
