// cli/grammar_flags: see grammar_flags.h.
#include "cli/grammar_flags.h"

#include <CLI/CLI.hpp>

#include <filesystem>

#include "core/error.h"
#include "core/read_file.h"

namespace k3::cli {

namespace {

// The file's text (at most 16 MiB) when `arg` names a file, else the argument itself.
bool file_or_text(const std::string& arg, std::string& out, std::string& err) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(arg, ec)) {
    out = arg;
    return true;
  }
  try {
    out = read_file(arg, 16u << 20);
  } catch (const k3::Error& e) {
    err = e.what();
    return false;
  }
  return true;
}

}  // namespace

void add_grammar_flags(CLI::App& app, GrammarFlags& f) {
  app.add_option("--grammar,--grammar-file", f.grammar,
                 "constrain the output to a GBNF grammar: a file, or the grammar text (docs/grammar.md)");
  app.add_option("-j,--json-schema,--json-schema-file,--jf", f.json_schema,
                 "constrain the output to JSON valid under a JSON schema: a file, or the schema text");
}

std::string load_grammar_flags(const GrammarFlags& f, text::Json& req) {
  if (!f.grammar.empty() && !f.json_schema.empty()) return "--grammar and --json-schema: give only one";
  std::string text, err;
  if (!f.grammar.empty()) {
    if (!file_or_text(f.grammar, text, err)) return "--grammar: " + err;
    if (text.find("::=") == std::string::npos)
      return fmt::format("--grammar: '{}' is neither a file nor a GBNF grammar (no 'name ::= …' rule)",
                         f.grammar);
    req["grammar"] = text;
  }
  if (!f.json_schema.empty()) {
    if (!file_or_text(f.json_schema, text, err)) return "--json-schema: " + err;
    try {
      req["json_schema"] = text::parse_json_exact(text, "--json-schema");
    } catch (const k3::Error& e) {
      return fmt::format("--json-schema: '{}' is neither a file nor JSON: {}", f.json_schema, e.what());
    }
  }
  return "";
}

}  // namespace k3::cli
