// grammar/gbnf: GBNF text → a compiled grammar over bytes and special tokens.
// Contract: parse_gbnf() accepts the dialect documented in docs/grammar.md (rules
// `name ::= expr`; literals, character classes, `.`, groups, alternatives, * + ? {m,n},
// `<|name|>` special tokens, # comments) and compiles it to flat alternatives of three kinds
// of terminal-or-reference symbols. Characters are Unicode code points; every class and
// literal is compiled to the UTF-8 byte sequences it matches, so the matcher works on bytes
// alone and a token that ends in the middle of a code point is judged exactly. Repetitions
// and groups become synthetic rules (right-recursive, so a long match never deepens the
// stack). The result is checked: every referenced rule is defined, no rule is left-recursive
// (which includes repeating an empty match), alternatives that can never finish are pruned,
// and the root can finish. Every problem is a k3::Error naming the rule and the byte offset.
// Bounded: a client writes the text, so every cost is capped before it is paid — text bytes,
// rule-name length, rules, symbols and the compiled grammar's bytes are counted as the parse
// proceeds (GbnfLimits), every pass after the parse is linear in the grammar's size, and the
// work ticks an optional WorkBudget (a deadline and a cancellation probe). Identical
// repetitions share their rules, so `[a-z]{0,1000}` written 990 times costs one chain.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace k3::grammar {

struct Sym {
  enum Kind : uint8_t { End, Bytes, Ref, Token };
  Kind kind = End;
  uint32_t arg = 0;  // Bytes: byte-set index; Ref: rule id; Token: token-name index
};

using ByteSet = std::array<uint64_t, 4>;
inline bool byte_in(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1; }

struct Grammar {
  // All alternatives of all rules, each ended by an End symbol.
  std::vector<Sym> syms;
  // rule id → start positions (indices into syms) of its alternatives.
  std::vector<std::vector<uint32_t>> rule_alts;
  // rule id → its name as written (with its source's prefix); "" for a synthetic rule (a
  // group, repetition or class), which is named by id only: describe() builds a readable name
  // for messages. (A synthetic rule named after its parent copied the parent's whole name.)
  std::vector<std::string> rule_names;
  std::vector<uint32_t> rule_owner;  // rule id → the written rule it was generated in
  std::vector<ByteSet> byte_sets;
  std::vector<std::string> token_names;  // Token arg → "<|open|>" (the token's text)
  uint32_t root = 0;

  // "name" for a written rule, "name/generated#id" for a synthetic one.
  std::string describe(uint32_t rule) const;
  // The compiled grammar's heap bytes (what a queued request holds).
  size_t bytes() const;
};

class WorkBudget;

// Each limit is checked while the grammar is built, so a refusal comes before the cost.
// Defaults: the largest grammar the JSON-schema compiler emits (1 MiB of text) fits with room;
// the compiled grammar a queued request may hold stays under max_bytes.
struct GbnfLimits {
  size_t max_text_bytes = 4u << 20;
  size_t max_name_bytes = 256;    // a rule name as written (prefix included)
  size_t max_rules = 256u << 10;  // written and synthetic together
  size_t max_symbols = 2u << 20;
  size_t max_bytes = 32u << 20;  // the compiled grammar's bytes (Grammar::bytes), as counted so far
  uint32_t max_repeat = 1000;    // the largest m or n in {m,n}
  WorkBudget* budget = nullptr;  // ticked as the parse and the checks work; null: no deadline
};

// A GBNF string literal matching exactly the UTF-8 text s (quotes included; `"`, `\` and
// control characters escaped).
std::string gbnf_quote(std::string_view s);

// Throws k3::Error ("grammar: <what> at offset N" / "grammar: rule 'x' ...").
Grammar parse_gbnf(std::string_view text, std::string_view root = "root", const GbnfLimits& lim = {});

// Several texts compiled into one grammar: every rule name written in a source (defined or
// referenced) gets that source's prefix, so sources cannot collide unless a name is written
// with the other's prefix on purpose (a composing grammar reaches a part's rules that way).
// `what` names the source in errors.
struct GbnfSource {
  std::string_view text;
  std::string prefix;
  std::string what;
};
Grammar parse_gbnf(const std::vector<GbnfSource>& sources, std::string_view root, const GbnfLimits& lim = {});

}  // namespace k3::grammar
