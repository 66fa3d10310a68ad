// grammar/matcher: a grammar advanced token by token, and the mask of tokens it allows next.
// Contract: the matcher's state is the set of parse stacks (a pushdown automaton run by
// sets, so ambiguity and nondeterminism are handled exactly). States are interned and their
// byte transitions cached, which turns the automaton into a lazily built DFA over bytes; the
// mask of a state is one pass over the vocabulary trie through that DFA, cached per state.
// allowed() contains exactly the tokens after which the grammar can still be completed
// (every compiled rule can finish, gbnf.h), plus the end-of-generation tokens when the input
// so far is a complete sentence. accept() refuses (k3::Error) a token the mask excludes.
// Memory is bounded: past the limits the caches are dropped and rebuilt; a grammar whose
// single state needs more than the limits (pathologically ambiguous) is a k3::Error.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/token_vocab.h"

namespace k3::grammar {

struct MatcherLimits {
  size_t max_stacks_per_state = 4096;
  size_t max_cache_bytes = 256u << 20;  // transition tables + cached masks
  // Parser steps one mask or one token may take (a bound on the time a hostile grammar can
  // hold the sampler: ~50M steps is about half a second).
  size_t max_work_per_token = 50'000'000;
};

class GrammarMatcher {
 public:
  // Throws k3::Error when the grammar names a special token the vocabulary lacks.
  GrammarMatcher(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> vocab,
                 MatcherLimits lim = {});
  ~GrammarMatcher();
  GrammarMatcher(const GrammarMatcher&) = delete;
  GrammarMatcher& operator=(const GrammarMatcher&) = delete;

  // Bit i set: token i may come next. Valid until the next accept().
  std::span<const uint64_t> allowed();
  bool allows(int32_t token);
  void accept(int32_t token);
  // The input so far is a complete sentence of the grammar.
  bool can_end() const;
  // Complete and nothing more can follow: only end-of-generation is allowed.
  bool must_end() const;

  struct Stats {
    size_t states = 0, mask_computes = 0, mask_hits = 0, flushes = 0, cache_bytes = 0;
  };
  Stats stats() const { return stats_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Stats stats_;
};

}  // namespace k3::grammar
