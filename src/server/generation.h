// server/generation: the per-slot state of one running request, between the engine's logits
// and the request's channel.
// Contract: the scheduler asks choose() for the next token (a reasoning-budget injection first,
// then the answer an AnswerSource gave (tests), else the sampler) and hands it to accept(), which turns it
// into channel events: chat output goes token by token through the XTML output parser (markers by id,
// docs/CHAT-FORMAT.md, "Output parser"), raw completions through UTF-8-safe detokenization (control
// tokens render as nothing). Stop strings are matched on the generated text before either. accept()
// returns true once the request is over; it has then pushed exactly one Done. Usage counts every
// token produced (sampled or injected), the end token included. With params.ignore_eos an
// end-of-generation token is generated like any control token (it renders as nothing) unless a
// grammar chose it. Without a vocabulary (tok null) a raw completion's events carry token ids.
// With a grammar (Job::grammar) every sampled token is drawn from the grammar's mask, every
// token (forced ones included) advances it, and once the grammar is complete with nothing
// more to follow the end token is chosen without sampling. The matcher runs on its own
// low-priority thread (server/mask_worker.h): when the mask a token needs is not computed yet,
// choose() keeps the logits and answers kWaiting, and resume() chooses from them once
// mask_ready(). A grammar past its limits ends the request as an ApiError 400; a request that
// went away while its mask was computed throws grammar::Cancelled.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "runtime/sampler.h"
#include "server/job.h"
#include "server/stop_matcher.h"
#include "chat/vocab_roles.h"
#include "text/output_parser.h"
#include "text/output_parser_utf8.h"
#include "text/reasoning_budget.h"
#include "text/tokenizer.h"

namespace k3::grammar {
struct MatcherLimits;
class TokenVocab;
}  // namespace k3::grammar

namespace k3::server {

class MaskWorker;

class Generation {
 public:
  static constexpr int32_t kWaiting = -1;

  // max_tokens: the request's limit after capping to the context (> 0).
  // gvocab: the vocabulary as the grammar matcher sees it (needed when job.grammar is set);
  // glim: the matcher's limits; on_mask_ready: called (on another thread) when a mask the
  // request waits for is done.
  // tok: null for a model without a vocabulary (raw completions of token ids only).
  Generation(Job& job, const text::Tokenizer* tok, const chat::VocabRoles& roles, int64_t max_tokens,
             std::shared_ptr<const grammar::TokenVocab> gvocab = nullptr,
             const grammar::MatcherLimits* glim = nullptr, std::function<void()> on_mask_ready = {},
             std::optional<std::vector<int32_t>> script = std::nullopt);
  ~Generation();

  // The next token, or kWaiting (the logits are kept for resume()).
  int32_t choose(std::span<const float> logits);
  // No mask is pending (always true without a grammar).
  bool mask_ready() const;
  // After kWaiting, once mask_ready(): the token for the kept logits.
  int32_t resume();
  // can_continue: the sequence has room to decode this token (else the context is full).
  bool accept(int32_t token, bool can_continue);
  // Ends the request now (pushes its Done), as if `why` had happened; no-op once it is over.
  void stop(text::StopReason why);
  // Called once when the prompt has been decoded (pushes Started).
  void prompt_done(double prompt_ms);
  int64_t n_generated() const { return n_generated_; }

 private:
  int32_t constrained(std::span<const float> logits);
  bool finish(text::StopReason why);
  void feed_text(std::string_view bytes);
  void push_delta(text::ParseDelta&& d);
  void push_raw(std::string text);  // a raw completion's text and the ids not yet sent

  Job& job_;
  const text::Tokenizer* tok_;
  const chat::VocabRoles& roles_;
  int64_t max_tokens_;
  runtime::Sampler sampler_;
  StopMatcher stop_;
  std::optional<text::OutputParser> parser_;     // chat
  std::optional<text::ReasoningBudget> budget_;  // chat with a budget
  text::Utf8Stream utf8_;                        // raw completions
  std::vector<int32_t> raw_ids_;                 // raw completions: ids not yet in an event
  std::unique_ptr<MaskWorker> matcher_;
  std::vector<float> held_logits_;  // the logits of a choose() that answered kWaiting
  std::deque<int32_t> forced_;
  std::optional<std::vector<int32_t>> script_;  // an AnswerSource's tokens, in place of sampling
  size_t script_pos_ = 0;
  int64_t n_generated_ = 0;
  Usage usage_;
  Clock::time_point t_first_{};
  bool done_ = false;
};

}  // namespace k3::server
