// server/generation: the per-slot state of one running request, between the engine's logits
// and the request's channel.
// Contract: the scheduler asks choose() for the next token (a reasoning-budget injection first,
// then the test-only script, else the sampler) and hands it to accept(), which turns it into
// channel events: chat output goes token by token through the XTML output parser (markers by id,
// docs/CHAT-FORMAT.md, "Output parser"), raw completions through UTF-8-safe detokenization (control
// tokens render as nothing). Stop strings are matched on the generated text before either. accept()
// returns true once the request is over; it has then pushed exactly one Done. Usage counts every
// token produced (sampled or injected), the end token included.
// With a grammar (Job::grammar) every sampled token is drawn from the grammar's mask, every
// token (forced ones included) advances it, and once the grammar is complete with nothing
// more to follow the end token is chosen without sampling.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>

#include "runtime/sampler.h"
#include "server/job.h"
#include "server/stop_matcher.h"
#include "server/vocab_roles.h"
#include "text/output_parser.h"
#include "text/output_parser_utf8.h"
#include "text/reasoning_budget.h"
#include "text/tokenizer.h"

namespace k3::grammar {
class GrammarMatcher;
class TokenVocab;
}  // namespace k3::grammar

namespace k3::server {

class Generation {
 public:
  // max_tokens: the request's limit after capping to the context (> 0).
  // gvocab: the vocabulary as the grammar matcher sees it (needed when job.grammar is set).
  Generation(Job& job, const text::Tokenizer& tok, const VocabRoles& roles, int64_t max_tokens,
             std::shared_ptr<const grammar::TokenVocab> gvocab = nullptr);
  ~Generation();

  int32_t choose(std::span<const float> logits);
  // can_continue: the sequence has room to decode this token (else the context is full).
  bool accept(int32_t token, bool can_continue);
  // Called once when the prompt has been decoded (pushes Started).
  void prompt_done(double prompt_ms);
  int64_t n_generated() const { return n_generated_; }

 private:
  bool finish(text::StopReason why);
  void feed_text(std::string_view bytes);
  void push_delta(text::ParseDelta&& d);

  Job& job_;
  const text::Tokenizer& tok_;
  const VocabRoles& roles_;
  int64_t max_tokens_;
  runtime::Sampler sampler_;
  StopMatcher stop_;
  std::optional<text::OutputParser> parser_;     // chat
  std::optional<text::ReasoningBudget> budget_;  // chat with a budget
  text::Utf8Stream utf8_;                        // raw completions
  std::unique_ptr<grammar::GrammarMatcher> matcher_;
  std::deque<int32_t> forced_;
  size_t script_pos_ = 0;
  int64_t n_generated_ = 0;
  Usage usage_;
  Clock::time_point t_first_{};
  bool done_ = false;
};

}  // namespace k3::server
