// The matcher's bounds: memory counted inside a mask (and checked against the heap itself),
// CPU time per token, cancellation, the start-state check, and refusal after an error.
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "grammar/matcher.h"
#include "grammar/work_budget.h"
#include "grammar_test_util.h"

namespace k3::grammar {
namespace {

using Clock = std::chrono::steady_clock;

// Palindromes over the printable bytes: every position may be the middle, so the parses
// alive grow with the output and each mask walks the vocabulary through all of them.
std::string palindrome_gbnf() {
  std::string alts;
  for (int c = 0x20; c < 0x7f; ++c) {
    if (c == '"' || c == '\\') continue;
    const std::string l = std::string("\"") + static_cast<char>(c) + "\"";
    alts += (alts.empty() ? "" : " | ") + l + " r " + l + " | " + l;
  }
  return "root ::= r\nr ::= ( " + alts + " )?\n";
}

// A vocabulary shaped like a real one: every byte, then many multi-byte pieces.
std::shared_ptr<const TokenVocab> wide_vocab() {
  std::vector<std::string> extra;
  for (int a = 0x21; a < 0x7f; ++a)
    for (int b = 0x21; b < 0x7f; b += 6)
      extra.push_back(std::string{static_cast<char>(a), static_cast<char>(b)});
  return test::byte_vocab(extra);
}

size_t heap_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

int32_t first_allowed(std::span<const uint64_t> mask) {
  for (size_t w = 0; w < mask.size(); ++w)
    if (mask[w]) return static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(mask[w])));
  return -1;
}

TEST(MatcherBudget, MemoryStaysUnderTheCapInsideMasks) {
  // b3e1fee checked its cap only between tokens and left the node index, the state index
  // and the scratch uncounted: this grammar took 520 MiB in 60 tokens against a 256 MiB cap.
  auto g = std::make_shared<const Grammar>(parse_gbnf(palindrome_gbnf()));
  auto v = wide_vocab();
  MatcherLimits lim;
  lim.max_bytes = 32u << 20;
  lim.max_cpu_per_token = std::chrono::seconds(30);  // this test is about memory
  const size_t before = heap_in_use();
  size_t peak_heap = 0;
  GrammarMatcher m(g, v, lim);
  int tokens = 0;
  try {
    for (; tokens < 20; ++tokens) {
      auto mask = m.allowed();
      peak_heap = std::max(peak_heap, heap_in_use() - before);
      // Two-byte pieces that are not palindromic keep the parse ambiguous.
      int32_t t = 256 + (tokens * 7) % 1000;
      if (!test::bit(mask, t)) t = first_allowed(mask);
      ASSERT_GE(t, 0);
      m.accept(t);
      peak_heap = std::max(peak_heap, heap_in_use() - before);
    }
  } catch (const BudgetExceeded& e) {
    // Allowed: a single token needing more than the cap is refused, not served.
    EXPECT_NE(std::string(e.what()).find("MiB of parser memory"), std::string::npos) << e.what();
  }
  EXPECT_GT(tokens, 3);
  EXPECT_GT(m.stats().flushes, 0u);  // the cap was reached inside a mask and the work redone
  EXPECT_LE(m.stats().peak_bytes, lim.max_bytes + (lim.max_bytes >> 6));  // + scratch between checks
  RecordProperty("tokens", tokens);
  RecordProperty("flushes", static_cast<int>(m.stats().flushes));
  RecordProperty("peak_heap_mib", static_cast<int>(peak_heap >> 20));
  // The heap agrees with the matcher's own count (the vocabulary and grammar are outside it).
  EXPECT_LE(peak_heap, lim.max_bytes + (1u << 20)) << "heap grew " << (peak_heap >> 20) << " MiB";
}

TEST(MatcherBudget, OneTokenCannotHoldACorePastItsCpuLimit) {
  // b3e1fee let one token of a costly grammar take seconds (4.18 s with 4000 two-byte
  // palindrome pieces) with no error. Here each mask costs ~80 ms of CPU; the limit is 10 ms.
  auto g = std::make_shared<const Grammar>(parse_gbnf(palindrome_gbnf()));
  MatcherLimits lim;
  lim.max_cpu_per_token = std::chrono::milliseconds(10);
  lim.max_work_per_token = size_t(1) << 40;  // the clock, not the step count, must stop it
  auto v = wide_vocab();
  std::string err;
  double worst_ms = 0;
  try {
    GrammarMatcher m(g, v, lim);
    for (int i = 0; i < 40; ++i) {
      const auto t0 = Clock::now();
      auto mask = m.allowed();
      worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      const int32_t t = first_allowed(mask);
      ASSERT_GE(t, 0);
      m.accept(t);
    }
  } catch (const BudgetExceeded& e) { err = e.what(); }
  EXPECT_NE(err.find("of CPU time"), std::string::npos) << err;
  EXPECT_LT(worst_ms, 500.0);  // stopped near its limit (the clock is read every few thousand steps)
}

TEST(MatcherBudget, CancellationStopsAMask) {
  auto g = std::make_shared<const Grammar>(parse_gbnf(palindrome_gbnf()));
  std::atomic<bool> gone{false};
  MatcherLimits lim;
  lim.cancelled = [&] { return gone.load(); };
  GrammarMatcher m(g, wide_vocab(), lim);
  m.allowed();
  m.accept('a');
  gone = true;
  m.accept('b');  // cached transitions cost nothing: may finish before the probe is read
  auto run = [&] {
    for (int i = 0; i < 50; ++i) m.accept(first_allowed(m.allowed()));
  };
  EXPECT_THROW(run(), Cancelled);
  // A matcher stopped half way refuses further use with an error, not a crash.
  EXPECT_THROW(m.allowed(), k3::Error);
  EXPECT_TRUE(m.must_end());
}

TEST(MatcherBudget, CheckStartRefusesWhatCannotStart) {
  std::string text = "root ::= ";
  for (int i = 0; i < 14; ++i) text += "\"a\"* ";
  MatcherLimits lim;
  lim.max_stacks_per_state = 8;
  auto ambiguous = std::make_shared<const Grammar>(parse_gbnf(text));
  EXPECT_THROW(GrammarMatcher::check_start(ambiguous, lim), k3::Error);
  EXPECT_NO_THROW(
      GrammarMatcher::check_start(std::make_shared<const Grammar>(parse_gbnf("root ::= \"a\"*")), lim));
  // A start state larger than the memory cap is refused by the memory limit.
  MatcherLimits tiny;
  tiny.max_bytes = 4096;
  std::string wide = "root ::= ";
  for (int i = 0; i < 2000; ++i) wide += (i ? " | \"" : "\"") + std::to_string(i) + "\"";
  EXPECT_THROW(GrammarMatcher::check_start(std::make_shared<const Grammar>(parse_gbnf(wide)), tiny),
               BudgetExceeded);
}

TEST(MatcherBudget, WorkBudgetCanMeasureThreadCpu) {
  // A thread that sleeps spends no CPU: a CPU-time budget does not expire while it waits.
  WorkBudget b("sleeping", std::chrono::milliseconds(20), {}, WorkBudget::Measure::ThreadCpu);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_NO_THROW(b.poll());
  WorkBudget w("sleeping", std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_THROW(w.poll(), BudgetExceeded);
}

}  // namespace
}  // namespace k3::grammar
