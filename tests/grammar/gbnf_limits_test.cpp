// The GBNF compiler under hostile input: every cost a client can ask for is refused or capped
// before it is paid, and no pass is worse than linear in the grammar.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/error.h"
#include "grammar/gbnf.h"
#include "grammar/grammar_test_util.h"
#include "grammar/work_budget.h"

namespace k3::grammar {
namespace {

using Clock = std::chrono::steady_clock;

std::string error_of(const std::string& gbnf, const GbnfLimits& lim = {}) {
  try {
    parse_gbnf(gbnf, "root", lim);
  } catch (const k3::Error& e) { return e.what(); }
  return "";
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The review's 624-byte request: a rule with a 262,144-byte name repeated with {0,1000}. Each
// generated rule used to copy its parent's name (1 GiB). A long name is now refused, and a
// name within the limit costs its bytes once, not once per generated rule.
TEST(GrammarLimits, LongRuleNamesAreRefusedAndNeverCopied) {
  const std::string huge(262144, 'A');
  std::string text =
      "root ::= " + huge + "\n" + huge + " ::= \"x\"{0,1000} \"x\"{0,1000} \"x\"{0,1000} \"x\"{0,1000}\n";
  const auto t0 = Clock::now();
  const std::string err = error_of(text);
  EXPECT_NE(err.find("rule name of 262144 bytes"), std::string::npos) << err;
  EXPECT_LT(seconds_since(t0), 1.0);

  const std::string name(256, 'B');
  Grammar g =
      parse_gbnf("root ::= " + name + "\n" + name + " ::= \"x\"{0,1000} \"y\"{0,1000} \"z\"{0,1000}\n");
  EXPECT_GT(g.rule_alts.size(), 3000u);
  // 3000 generated rules: with the name copied into each they held 3000 x 256 bytes of names.
  EXPECT_LT(g.bytes(), 512u << 10) << g.bytes();
  EXPECT_EQ(g.describe(g.root), "root");
  EXPECT_EQ(g.describe(g.rule_alts.size() - 1).rfind(name + "/generated#", 0), 0u);
}

// `[a-z]{0,1000} ` written 990 times in 14 KB compiled to 990,000 rules (+330 MiB). One item's
// repetitions now share one chain of optional rules.
TEST(GrammarLimits, RepetitionsOfOneItemShareTheirRules) {
  std::string text = "root ::= ";
  for (int i = 0; i < 990; ++i) text += "[a-z]{0,1000} ";
  const auto t0 = Clock::now();
  Grammar g = parse_gbnf(text);
  EXPECT_LT(g.rule_alts.size(), 1100u);
  EXPECT_LT(g.bytes(), 1u << 20) << g.bytes();
  EXPECT_LT(seconds_since(t0), 2.0);
  // The sharing keeps the language: three items of 0..2 letters.
  EXPECT_TRUE(test::matches("root ::= [a-z]{0,2} \"-\" [a-z]{0,2} \"-\" [a-z]{1,2}", "ab--c"));
  EXPECT_FALSE(test::matches("root ::= [a-z]{0,2} \"-\" [a-z]{0,2} \"-\" [a-z]{1,2}", "abc--c"));
  EXPECT_TRUE(test::matches("root ::= (\"ab\"){0,2} \"ab\"{1,3}", "ababab"));
  EXPECT_FALSE(test::matches("root ::= (\"ab\"){0,2} \"ab\"{1,3}", "abababababab"));
}

// Distinct groups cannot share: their rules are counted and the grammar is refused at the cap,
// before the memory is taken.
TEST(GrammarLimits, RulesSymbolsAndBytesAreCappedAsTheyGrow) {
  std::string text = "root ::= ";
  for (int i = 0; i < 300; ++i) text += "(\"a\" | \"b\"){0,1000} ";
  auto t0 = Clock::now();
  std::string err = error_of(text);  // 300,000 rules: the byte count refuses it first
  EXPECT_NE(err.find("(too large)"), std::string::npos) << err;
  EXPECT_LT(seconds_since(t0), 2.0);

  GbnfLimits small;
  small.max_bytes = 64 << 10;
  err = error_of("root ::= (\"a\" | \"b\"){0,1000}", small);
  EXPECT_NE(err.find("more than 64 KiB"), std::string::npos) << err;

  small = {};
  small.max_rules = 50;
  err = error_of("root ::= [a-z]{0,100}", small);
  EXPECT_NE(err.find("more than 50 rules"), std::string::npos) << err;
}

// A chain of rules written in the order that needed one fixpoint sweep per rule (quadratic:
// 40,000 rules took 5 s). The closures are now worklists.
TEST(GrammarLimits, LongRuleChainsCompileInLinearTime) {
  const int n = 80000;
  std::string text = "root ::= r1\n";
  for (int i = 1; i < n; ++i) text += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + "\n";
  text += "r" + std::to_string(n) + " ::= \"z\"\n";
  const auto t0 = Clock::now();
  Grammar g = parse_gbnf(text);
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(g.rule_alts.size(), static_cast<size_t>(n + 1));
  EXPECT_TRUE(test::matches("root ::= a\na ::= \"x\" b | \"y\"\nb ::= \"x\" c | \"y\"\nc ::= \"z\"", "xxz"));
}

TEST(GrammarLimits, CompileStopsAtItsDeadlineAndWhenCancelled) {
  std::string text = "root ::= r1\n";
  for (int i = 1; i < 20000; ++i)
    text += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + "\n";
  text += "r20000 ::= \"z\"\n";

  WorkBudget expired("compiling the grammar", std::chrono::nanoseconds(1));
  GbnfLimits lim;
  lim.budget = &expired;
  EXPECT_THROW(parse_gbnf(text, "root", lim), BudgetExceeded);

  int polls = 0;
  WorkBudget cancelled("compiling the grammar", std::chrono::seconds(60), [&] { return ++polls > 2; });
  lim.budget = &cancelled;
  EXPECT_THROW(parse_gbnf(text, "root", lim), Cancelled);

  WorkBudget ample("compiling the grammar", std::chrono::seconds(60), [] { return false; });
  lim.budget = &ample;
  EXPECT_NO_THROW(parse_gbnf(text, "root", lim));
  EXPECT_GT(ample.ticks(), 20000u);
}

}  // namespace
}  // namespace k3::grammar
