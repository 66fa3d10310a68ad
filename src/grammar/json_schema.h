// grammar/json_schema: JSON Schema (a draft 2020-12 subset) → GBNF rules for constrained decoding.
// Contract: the rule prefix+"root" of json_schema_to_gbnf() matches only JSON texts valid
// under the schema — a subset of them, never more (the grammar may be narrower than the
// schema, as listed below, but every sentence validates). Every rule the call defines
// carries the prefix. A keyword the compiler cannot honour is an error in strict mode (the
// message names the keyword and its JSON pointer) and is ignored otherwise (then, and only
// then, the grammar may be wider than the schema). The output uses only the GBNF dialect of
// gbnf.h: no left recursion, repetition counts <= 1000.
//
// What the grammar generates (the narrowing, docs/grammar.md):
//   - no whitespace around the root value; between tokens inside arrays and objects at most
//     one space, or a newline and up to 20 spaces;
//   - integers -?(0|[1-9][0-9]{0,15}); numbers add .[0-9]{1,16} and e[+-]?[0-9]{1,2} (so every number is a
//   finite double);
//     integer bounds are exact (digit ranges), within 16 digits;
//   - object properties in declaration order, required ones always, optional ones when
//     chosen; extra properties (additionalProperties true or a schema) only after the declared
//     ones, with keys of [A-Za-z0-9_] that are never a declared key;
//   - strings escape only as JSON requires or allows, \u never a surrogate, so minLength and
//     maxLength count code points exactly; string formats date, time, date-time (with a
//     time zone), uuid, ipv4, email (a plain subset);
//   - any JSON value (`{}`, `true`, untyped values) nests at most 12 levels;
//   - oneOf is compiled as anyOf: exclusivity is not enforced.
//   - const and enum values are written in their compact JSON form (py_dumps), as a trie:
//     shared prefixes once, one alternative per distinct next character, so a 10,000-value
//     enum (or an anyOf of const branches, which is merged the same way) is one parse;
//   - identical alternatives (two spellings of one $ref, a repeated type) are written once.
// Cost (a hostile schema is refused before it costs much): every schema node is compiled at
// most once, memoised on the node itself (its address in `schema`), however many $ref
// spellings or paths reach it; the work grows with the schema's size and the grammar's
// (linearly, up to a log factor: never a product of two sizes), and every byte of grammar is
// counted as it is written, so the size limit refuses a schema before the work it names.
// opt.budget, when set, is ticked throughout: it stops the compile at its deadline or when it
// is cancelled (BudgetExceeded / Cancelled, both k3::Error).
// Errors: every problem a schema can cause is a k3::Error naming it and its place (a JSON
// pointer, cut to 200 bytes); no other exception escapes except std::bad_alloc.
// Limits: schema nesting <= 64, grammar text <= 1 MiB (const/enum texts included),
// minItems/minLength <= 1000 (more is an error); maxItems/maxLength above 1000 are lowered to
// 1000; an anyOf/oneOf has at most 1024 distinct alternatives (after merging its const and
// enum branches); a $ref cycle must pass through an object or an array (else it would be
// left recursion: an error).
#pragma once

#include <string>
#include <string_view>

#include "grammar/work_budget.h"
#include "text/json_py.h"  // k3::text::Json = nlohmann::ordered_json

namespace k3::grammar {

struct SchemaOptions {
  bool strict = true;  // true: a keyword we cannot honour is an error; false: it is ignored
  std::string prefix;  // prepended to every rule name this call defines
  // Ticked throughout the compile (not owned; null: no deadline, no cancellation).
  WorkBudget* budget = nullptr;
};

// Throws k3::Error, e.g. "json_schema: unsupported keyword 'patternProperties' at /properties/tags"
// (the root schema is written "(root)").
std::string json_schema_to_gbnf(const text::Json& schema, const SchemaOptions& opt = {});

// Rules for any JSON value (prefix+"root" = any object when object_only, else any value).
std::string json_any_gbnf(bool object_only, std::string_view prefix = "");

}  // namespace k3::grammar
