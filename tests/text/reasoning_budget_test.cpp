// Reasoning budget: forced close after N think tokens, natural ends, UTF-8 and header safety,
// and the forced text driving the output parser into the response channel.
#include <gtest/gtest.h>

#include "text/reasoning_budget.h"

using namespace k3::text;

namespace {
std::string text_of(const std::vector<ChatSegment>& s) { return join_segments(s); }
}  // namespace

TEST(ReasoningBudget, ForcesCloseAfterBudget) {
  ReasoningBudget b({3, "Time to answer.", true});
  EXPECT_EQ(b.state(), ReasoningBudget::State::Counting);
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(b.take_injection());
    b.observe(TokenKind::Text, "x");
  }
  EXPECT_FALSE(b.take_injection());
  b.observe(TokenKind::Text, "y");
  EXPECT_EQ(b.used(), 3);
  auto inj = b.take_injection();
  ASSERT_TRUE(inj);
  EXPECT_EQ(text_of(*inj), "Time to answer.<|close|>think<|sep|><|open|>response<|sep|>");
  EXPECT_FALSE((*inj)[0].special);
  EXPECT_TRUE((*inj)[1].special);
  EXPECT_FALSE((*inj)[2].special);   // tag names are text
  EXPECT_FALSE(b.take_injection());  // only once
  EXPECT_EQ(b.state(), ReasoningBudget::State::Forced);
}

TEST(ReasoningBudget, ZeroBudgetClosesImmediatelyAndUnlimitedNever) {
  ReasoningBudget z({0, "", false});
  auto inj = z.take_injection();
  ASSERT_TRUE(inj);
  EXPECT_EQ(text_of(*inj), "<|close|>think<|sep|>");
  ReasoningBudget u({-1, "", true});
  for (int i = 0; i < 1000; ++i) u.observe(TokenKind::Text, "x");
  EXPECT_FALSE(u.take_injection());
}

TEST(ReasoningBudget, NaturalEndsStopCounting) {
  // Each natural end of reasoning (K3's list, docs/CHAT-FORMAT.md) disarms the budget.
  const std::vector<std::pair<TokenKind, std::string>> ends[] = {
      {{TokenKind::Close, ""}, {TokenKind::Text, "think"}, {TokenKind::Sep, ""}},
      {{TokenKind::Open, ""}, {TokenKind::Text, "response"}, {TokenKind::Sep, ""}},
      {{TokenKind::Open, ""}, {TokenKind::Text, "tools"}, {TokenKind::Sep, ""}},
      {{TokenKind::Close, ""}, {TokenKind::Text, "mess"}, {TokenKind::Text, "age"}, {TokenKind::Sep, ""}},
      {{TokenKind::Close, ""}, {TokenKind::Text, "think"}, {TokenKind::Open, ""}},  // elided sep
      {{TokenKind::Eog, ""}},
  };
  for (const auto& seq : ends) {
    ReasoningBudget b({5, "", true});
    b.observe(TokenKind::Text, "r");
    for (const auto& [k, s] : seq) b.observe(k, s);
    for (int i = 0; i < 10; ++i) b.observe(TokenKind::Text, "answer");
    EXPECT_FALSE(b.take_injection());
    EXPECT_EQ(b.state(), ReasoningBudget::State::Done);
  }
  // A lone <|close|> or a literal non-ending tag does not end reasoning.
  ReasoningBudget b({3, "", true});
  b.observe(TokenKind::Close);
  b.observe(TokenKind::Text, "argument");
  b.observe(TokenKind::Sep);
  b.observe(TokenKind::Text, "more");
  EXPECT_TRUE(b.take_injection());
}

TEST(ReasoningBudget, WaitsForCompleteCharacterAndHeader) {
  ReasoningBudget b({2, "", true});
  b.observe(TokenKind::Text, "a");
  b.observe(TokenKind::Text, "\xE4\xB8");  // first two bytes of a CJK character
  EXPECT_FALSE(b.take_injection());
  b.observe(TokenKind::Text, "\xAD");
  EXPECT_TRUE(b.take_injection());

  ReasoningBudget h({1, "", true});
  h.observe(TokenKind::Close);  // the model is writing a tag: let it finish
  EXPECT_FALSE(h.take_injection());
  h.observe(TokenKind::Text, "think");
  h.observe(TokenKind::Sep);
  EXPECT_FALSE(h.take_injection());  // it was the natural close
  EXPECT_EQ(h.state(), ReasoningBudget::State::Done);
}

TEST(ReasoningBudget, SecondThinkBlockResumesRemainingBudget) {
  ReasoningBudget b({4, "", true});
  b.observe(TokenKind::Text, "a");
  b.observe(TokenKind::Close);
  b.observe(TokenKind::Text, "think");
  b.observe(TokenKind::Sep);  // 4 tokens used, but ended naturally
  EXPECT_EQ(b.state(), ReasoningBudget::State::Done);
  b.observe(TokenKind::Open);
  b.observe(TokenKind::Text, "think");
  b.observe(TokenKind::Sep);
  EXPECT_EQ(b.state(), ReasoningBudget::State::Counting);
  EXPECT_TRUE(b.take_injection());  // nothing left of the budget
}

TEST(ReasoningBudget, InjectionDrivesParserIntoResponse) {
  ReasoningBudget b({2, " Enough.", true});
  OutputParser p;
  auto gen = [&](TokenKind k, std::string_view s) {
    b.observe(k, s);
    p.feed_token(k, s);
  };
  gen(TokenKind::Text, "Let me");
  gen(TokenKind::Text, " think");
  auto inj = b.take_injection();
  ASSERT_TRUE(inj);
  for (const auto& seg : *inj) {
    TokenKind k = TokenKind::Text;
    if (seg.special)
      k = seg.text == "<|close|>"  ? TokenKind::Close
          : seg.text == "<|open|>" ? TokenKind::Open
                                   : TokenKind::Sep;
    gen(k, seg.text);
  }
  gen(TokenKind::Text, "42");
  gen(TokenKind::Eog, "");
  p.finish(StopReason::Eog);
  EXPECT_EQ(p.result().reasoning_content, "Let me think Enough.");
  EXPECT_EQ(p.result().content, "42");
  EXPECT_EQ(p.result().finish_reason, "stop");
}

TEST(ReasoningBudget, EffectiveBudgetLeavesRoomForTheAnswer) {
  EXPECT_EQ(effective_reasoning_budget(-1, -1, 100), -1);
  EXPECT_EQ(effective_reasoning_budget(-1, 1000, 100), 900);
  EXPECT_EQ(effective_reasoning_budget(500, 1000, 100), 500);
  EXPECT_EQ(effective_reasoning_budget(5000, 1000, 100), 900);
  EXPECT_EQ(effective_reasoning_budget(5000, 50, 100), 0);
}
