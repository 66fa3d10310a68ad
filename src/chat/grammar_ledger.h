// chat/grammar_ledger: the compiled grammars that requests hold, counted server-wide.
// Contract: a request's grammar is compiled on its HTTP thread and then held by its Job while
// it waits in the queue and while it runs. hold() takes a compiled grammar and returns the
// shared pointer the Job keeps; its bytes (Grammar::bytes) count against the ledger's cap
// until the last copy is dropped. A grammar that would take the total past the cap is a 503
// (the server is busy, not the client wrong: the same request succeeds once others finish).
// Each grammar is already bounded by GbnfLimits::max_bytes; the ledger bounds their sum, so
// 64 queued requests cannot hold 64 times that. Thread-safe; the ledger may be destroyed
// before the grammars it handed out.
#pragma once

#include <cstddef>
#include <memory>

namespace k3::grammar {
struct Grammar;
}

namespace k3::chat {

class GrammarLedger {
 public:
  explicit GrammarLedger(size_t max_bytes);
  ~GrammarLedger();

  std::shared_ptr<const grammar::Grammar> hold(grammar::Grammar&& g);
  size_t held_bytes() const;
  size_t max_bytes() const { return max_bytes_; }

 private:
  struct Count;
  size_t max_bytes_;
  std::shared_ptr<Count> count_;
};

}  // namespace k3::chat
