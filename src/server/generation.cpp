// server/generation: see generation.h.
#include "server/generation.h"

#include <chrono>

#include "core/error.h"
#include "grammar/matcher.h"
#include "grammar/work_budget.h"
#include "server/api_error.h"
#include "server/mask_worker.h"

namespace k3::server {

using text::StopReason;
using text::TokenKind;

Generation::Generation(Job& job, const text::Tokenizer* tok, const chat::VocabRoles& roles,
                       int64_t max_tokens, std::shared_ptr<const grammar::TokenVocab> gvocab,
                       const grammar::MatcherLimits* glim, std::function<void()> on_mask_ready,
                       std::optional<std::vector<int32_t>> script)
    : job_(job),
      tok_(tok),
      roles_(roles),
      max_tokens_(max_tokens),
      sampler_(job.params.sampler),
      stop_(job.params.stop),
      script_(std::move(script)) {
  if (job.grammar) {
    if (!gvocab) fail("generation: a grammar needs the matcher's vocabulary");
    grammar::MatcherLimits lim = glim ? *glim : grammar::MatcherLimits{};
    lim.cancelled = [&job] { return job.cancelled.load(); };
    matcher_ = std::make_unique<MaskWorker>(job.grammar, std::move(gvocab), std::move(lim),
                                            std::move(on_mask_ready));
  }
  // Prompt tokens enter the penalty window, as in llama.cpp.
  for (int32_t t : job.prompt) sampler_.accept(t);
  usage_.prompt_tokens = static_cast<int64_t>(job.prompt.size());
  usage_.cached_tokens = job.n_cached;
  if (job.kind == JobKind::Chat) {
    parser_.emplace(job.parser);
    if (job.params.reasoning_budget >= 0 && job.parser.thinking) {
      text::ReasoningBudgetOptions bo;
      bo.budget = job.params.reasoning_budget;
      bo.message = job.params.reasoning_budget_message;
      budget_.emplace(bo, true);
    }
  }
}

Generation::~Generation() = default;

void Generation::prompt_done(double prompt_ms) {
  usage_.prompt_ms = prompt_ms;
  t_first_ = Clock::now();
  Event e;
  e.kind = Event::Kind::Started;
  job_.channel.push(std::move(e));
}

int32_t Generation::choose(std::span<const float> logits) {
  if (forced_.empty() && budget_) {
    if (auto inj = budget_->take_injection()) {
      std::vector<int32_t> ids = chat::tokenize_segments(*tok_, *inj);
      forced_.insert(forced_.end(), ids.begin(), ids.end());
    }
  }
  if (!forced_.empty()) {
    int32_t t = forced_.front();
    forced_.pop_front();
    return t;
  }
  if (script_) {
    if (script_pos_ < script_->size()) return (*script_)[script_pos_++];
    return roles_.end_token(tok_);
  }
  if (matcher_) {
    if (!matcher_->ready()) {
      held_logits_.assign(logits.begin(), logits.end());
      return kWaiting;
    }
    return constrained(logits);
  }
  return sampler_.sample(logits);
}

bool Generation::mask_ready() const { return !matcher_ || matcher_->ready(); }

int32_t Generation::resume() {
  const int32_t t = constrained(held_logits_);
  std::vector<float>().swap(held_logits_);
  return t;
}

int32_t Generation::constrained(std::span<const float> logits) {
  try {
    matcher_->check();
  } catch (const grammar::Cancelled&) {
    throw;
  } catch (const std::exception& e) {  // the grammar's limits, or a token it refused
    throw ApiError(400, "invalid_request_error", e.what());
  }
  if (matcher_->must_end()) return roles_.end_token(tok_);
  return sampler_.sample(logits, matcher_->mask());
}

void Generation::push_delta(text::ParseDelta&& d) {
  if (d.empty()) return;
  Event e;
  e.kind = Event::Kind::Delta;
  e.delta = std::move(d);
  job_.channel.push(std::move(e));
}

void Generation::feed_text(std::string_view bytes) {
  if (parser_) {
    if (!bytes.empty()) push_delta(parser_->feed_token(TokenKind::Text, bytes));
    return;
  }
  std::string s = utf8_.push(bytes);
  // With a vocabulary an event carries text (ids ride along); without one, ids are all there is.
  if (!s.empty() || (!tok_ && !raw_ids_.empty())) push_raw(std::move(s));
}

void Generation::push_raw(std::string text) {
  Event e;
  e.kind = Event::Kind::Delta;
  e.text = std::move(text);
  e.tokens = std::move(raw_ids_);
  raw_ids_.clear();
  job_.channel.push(std::move(e));
}

bool Generation::accept(int32_t token, bool can_continue) {
  if (done_) return true;
  ++n_generated_;
  sampler_.accept(token);
  if (matcher_) matcher_->feed(token);  // a token it refuses is an error at the next mask
  TokenKind kind = roles_.kind(tok_, token);
  // A grammar's end is the end even so: it allows nothing after it.
  if (kind == TokenKind::Eog && job_.params.ignore_eos && !matcher_) kind = TokenKind::OtherControl;
  static const std::string kNoText;
  const std::string& piece = tok_ ? tok_->token_bytes(token) : kNoText;
  if (budget_) budget_->observe(kind, kind == TokenKind::Text ? std::string_view(piece) : std::string_view());

  if (kind == TokenKind::Eog) return finish(StopReason::Eog);
  if (!parser_) raw_ids_.push_back(token);  // the end token is not part of the answer
  if (kind == TokenKind::Text) {
    feed_text(stop_.push(piece));
    if (stop_.matched()) return finish(StopReason::StopString);
  } else if (parser_) {
    // No stop string spans a marker: release what was held, then the marker itself.
    feed_text(stop_.flush());
    stop_ = StopMatcher(job_.params.stop);
    push_delta(parser_->feed_token(kind));
    if (parser_->turn_ended() && !job_.params.ignore_eos) return finish(StopReason::Eog);
  } else if (job_.params.show_special) {
    feed_text(stop_.push(piece));
    if (stop_.matched()) return finish(StopReason::StopString);
  } else {
    feed_text({});  // a control token renders as nothing; its id still reaches the caller
  }
  if (max_tokens_ > 0 && n_generated_ >= max_tokens_) return finish(StopReason::Length);
  if (!can_continue) return finish(StopReason::Context);
  return false;
}

void Generation::stop(StopReason why) {
  if (!done_) finish(why);
}

bool Generation::finish(StopReason why) {
  done_ = true;
  feed_text(stop_.flush());
  Event e;
  e.kind = Event::Kind::Done;
  e.stop = why;
  if (parser_) {
    push_delta(parser_->finish(why));
    e.finish_reason = parser_->result().finish_reason;
  } else {
    std::string tail = utf8_.flush();
    if (!tail.empty() || !raw_ids_.empty()) push_raw(std::move(tail));
    e.finish_reason = text::is_cut(why) ? "length" : "stop";
  }
  usage_.completion_tokens = n_generated_;
  if (t_first_ != Clock::time_point{})
    usage_.predicted_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_first_).count();
  e.usage = usage_;
  job_.channel.push(std::move(e));
  return true;
}

}  // namespace k3::server
