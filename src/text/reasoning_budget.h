// text/reasoning_budget: caps the number of tokens K3 spends in its think channel.
// Contract (docs/CHAT-FORMAT.md, "Reasoning budget"): the engine reports every generated (or
// injected) token through observe() and asks take_injection() before sampling each next token.
// Counting starts when the think channel opens (the K3 generation prompt already opened it). Once
// `budget` think tokens have been generated, and the last token completed a UTF-8 character and no
// tag header is half-written, take_injection() returns, exactly once, the continuation the engine
// must append instead of sampling: the budget message, then <|close|>think<|sep|>, then
// <|open|>response<|sep|> — as segments, so the markers become control tokens and the rest ordinary
// text. The answer is therefore never cut off inside reasoning. Natural ends are C(think),
// T(response), T(tools), C(message) and end-of-generation; a later T(think) resumes counting
// against what is left of the budget.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template.h"
#include "text/output_parser.h"

namespace k3::text {

struct ReasoningBudgetOptions {
  int64_t budget = -1;        // think tokens allowed; < 0 unlimited, 0 closes the channel at once
  std::string message;        // reasoning_budget_message, written into reasoning before the close
  bool open_response = true;  // also open the response channel (grammatical, spares a token)
};

class ReasoningBudget {
 public:
  enum class State { Idle, Counting, Done, Forced };

  // prompt_opened_think: the generation prompt ended in <|open|>think<|sep|> (thinking on).
  explicit ReasoningBudget(ReasoningBudgetOptions opt, bool prompt_opened_think = true);

  void observe(TokenKind kind, std::string_view piece = {});
  // The forced continuation, when reasoning must end before the next sampled token.
  std::optional<std::vector<ChatSegment>> take_injection();

  State state() const { return state_; }
  int64_t used() const { return used_; }
  int64_t remaining() const;  // -1 when unlimited

 private:
  void on_tag(bool open, std::string_view name);

  ReasoningBudgetOptions opt_;
  State state_ = State::Idle;
  int64_t used_ = 0;
  bool in_header_ = false, header_open_ = false;
  std::string hbuf_;
  Utf8Stream utf8_;
};

// The think budget that still leaves `answer_reserve` tokens for the answer under max_tokens
// (either limit < 0 = none): min(budget, max_tokens - answer_reserve), at least 0.
int64_t effective_reasoning_budget(int64_t budget, int64_t max_tokens, int64_t answer_reserve);

}  // namespace k3::text
