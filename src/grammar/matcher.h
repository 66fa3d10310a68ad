// grammar/matcher: a grammar advanced token by token, and the mask of tokens it allows next.
// Contract: the matcher's state is the set of parse stacks (a pushdown automaton run by
// sets, so ambiguity and nondeterminism are handled exactly). States are interned and their
// byte transitions cached, which turns the automaton into a lazily built DFA over bytes; the
// mask of a state is one pass over the vocabulary trie through that DFA, cached per state.
// allowed() contains exactly the tokens after which the grammar can still be completed
// (every compiled rule can finish, gbnf.h), plus the end-of-generation tokens when the input
// so far is a complete sentence. accept() refuses (k3::Error) a token the mask excludes.
// Every allowed() and accept() is bounded (MatcherLimits): in parser steps (stack
// expansion, node creation, interning and sorting all count), in CPU time of the calling
// thread, and by a cancellation probe; past a limit it throws grammar::BudgetExceeded, on
// cancellation grammar::Cancelled. Memory is bounded by max_bytes, which counts everything the
// matcher holds (stack nodes and their index, states and theirs, transition tables, masks,
// scratch) and is checked as the work proceeds: when it is reached the caches are dropped and
// the work redone from the current state; when a single token needs more than max_bytes from
// a fresh cache it is BudgetExceeded. More than max_stacks_per_state parses alive at once
// (pathological ambiguity) is a k3::Error. check_start() runs the start state alone, so a
// server can refuse such a grammar before it holds a slot.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/token_vocab.h"

namespace k3::grammar {

struct MatcherLimits {
  size_t max_stacks_per_state = 4096;
  size_t max_bytes = 64u << 20;  // all the matcher holds (caches, nodes, indexes, scratch)
  // Parser steps one mask or one token may take (~50M steps is about half a second).
  size_t max_work_per_token = 50'000'000;
  // CPU time of the calling thread one mask or one token may take.
  std::chrono::nanoseconds max_cpu_per_token = std::chrono::seconds(2);
  // Asked every few thousand steps; true stops the work with grammar::Cancelled.
  std::function<bool()> cancelled;
};

class GrammarMatcher {
 public:
  // Throws k3::Error when the grammar names a special token the vocabulary lacks.
  GrammarMatcher(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> vocab,
                 MatcherLimits lim = {});
  ~GrammarMatcher();
  // Builds the start state of `g` under `lim` and drops it: throws what the constructor would
  // for a grammar too ambiguous or too costly to start (needs no vocabulary).
  static void check_start(std::shared_ptr<const Grammar> g, const MatcherLimits& lim = {});
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
    size_t states = 0, mask_computes = 0, mask_hits = 0, flushes = 0;
    size_t bytes = 0;       // held now (what max_bytes bounds)
    size_t peak_bytes = 0;  // the most held at any check
  };
  Stats stats() const { return stats_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Stats stats_;
};

}  // namespace k3::grammar
