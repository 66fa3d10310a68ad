// text/reasoning_budget: see reasoning_budget.h. Tags are recognised the way the output
// parser's lexer does it (marker tokens plus the header text up to <|sep|>, or up to the next
// marker when the sep is elided), so the budget never mistakes a lone <|close|> for the end.
#include "text/reasoning_budget.h"

#include <algorithm>

#include "text/chat_template_markers.h"

namespace k3::text {

ReasoningBudget::ReasoningBudget(ReasoningBudgetOptions opt, bool prompt_opened_think)
    : opt_(std::move(opt)) {
  if (prompt_opened_think && opt_.budget >= 0) state_ = State::Counting;
}

int64_t ReasoningBudget::remaining() const {
  if (opt_.budget < 0) return -1;
  return std::max<int64_t>(0, opt_.budget - used_);
}

void ReasoningBudget::on_tag(bool open, std::string_view header) {
  std::string_view name = header.substr(0, header.find(' '));
  bool natural_end = (!open && name == xtml::kThink) || (open && name == xtml::kResponse) ||
                     (open && name == xtml::kTools) || (!open && name == xtml::kMessage);
  if (state_ == State::Counting && natural_end) state_ = State::Done;
  else if (open && name == xtml::kThink && opt_.budget >= 0 &&
           (state_ == State::Done || state_ == State::Idle || state_ == State::Forced))
    state_ = State::Counting;  // another think block: resume against what is left
}

void ReasoningBudget::observe(TokenKind kind, std::string_view piece) {
  if (state_ == State::Counting) ++used_;
  switch (kind) {
    case TokenKind::Open:
    case TokenKind::Close:
      if (in_header_) on_tag(header_open_, hbuf_);
      in_header_ = true;
      header_open_ = kind == TokenKind::Open;
      hbuf_.clear();
      return;
    case TokenKind::Sep:
      if (in_header_) on_tag(header_open_, hbuf_);
      in_header_ = false;
      return;
    case TokenKind::Eog:
      if (in_header_) on_tag(header_open_, hbuf_);
      in_header_ = false;
      if (state_ == State::Counting) state_ = State::Done;
      return;
    case TokenKind::OtherControl: return;
    case TokenKind::Text:
      if (in_header_) {
        hbuf_.append(piece);
        if (hbuf_.size() > OutputParser::kHeaderLimit) {  // not a tag (parser rule R4)
          in_header_ = false;
          hbuf_.clear();
        }
      } else {
        utf8_.push(piece);
      }
      return;
  }
}

std::optional<std::vector<ChatSegment>> ReasoningBudget::take_injection() {
  if (state_ != State::Counting || used_ < opt_.budget) return std::nullopt;
  // Never split a character or a tag the model is in the middle of writing.
  if (in_header_ || utf8_.has_partial()) return std::nullopt;
  state_ = State::Forced;
  std::vector<ChatSegment> segs;
  if (!opt_.message.empty()) segs.push_back({opt_.message, false});
  segs.push_back({std::string(xtml::kClose), true});
  segs.push_back({std::string(xtml::kThink), false});
  segs.push_back({std::string(xtml::kSep), true});
  if (opt_.open_response) {
    segs.push_back({std::string(xtml::kOpen), true});
    segs.push_back({std::string(xtml::kResponse), false});
    segs.push_back({std::string(xtml::kSep), true});
  }
  return segs;
}

int64_t effective_reasoning_budget(int64_t budget, int64_t max_tokens, int64_t answer_reserve) {
  if (max_tokens < 0) return budget;
  int64_t cap = std::max<int64_t>(0, max_tokens - std::max<int64_t>(0, answer_reserve));
  return budget < 0 ? cap : std::min(budget, cap);
}

}  // namespace k3::text
