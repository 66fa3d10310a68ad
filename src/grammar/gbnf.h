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
  std::vector<std::string> rule_names;  // synthetic rules: "parent/kind#n"
  std::vector<ByteSet> byte_sets;
  std::vector<std::string> token_names;  // Token arg → "<|open|>" (the token's text)
  uint32_t root = 0;
};

struct GbnfLimits {
  size_t max_text_bytes = 4u << 20;
  size_t max_symbols = 4u << 20;
  uint32_t max_repeat = 1000;  // the largest m or n in {m,n}
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
