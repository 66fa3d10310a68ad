// The mask worker: masks computed on its own thread, errors kept for the scheduler, and a
// request that goes away stops a costly mask at once.
#include "server/mask_worker.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "grammar/grammar_test_util.h"
#include "grammar/work_budget.h"

namespace k3::server {
namespace {

using Clock = std::chrono::steady_clock;
using grammar::test::bit;

struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  int wakes = 0;
  std::function<void()> hook() {
    return [this] {
      std::lock_guard<std::mutex> lk(mu);
      ++wakes;
      cv.notify_all();
    };
  }
  // Waits until `w` is ready (woken through the hook), at most 10 s.
  bool until_ready(const MaskWorker& w) {
    std::unique_lock<std::mutex> lk(mu);
    return cv.wait_for(lk, std::chrono::seconds(10), [&] { return w.ready(); });
  }
};

std::shared_ptr<const grammar::Grammar> compile(const std::string& text) {
  return std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(text));
}

TEST(MaskWorker, ComputesEachMaskAfterTheTokensFed) {
  Waiter w;
  MaskWorker mw(compile("root ::= \"ab\" [0-9]"), grammar::test::byte_vocab(), {}, w.hook());
  ASSERT_TRUE(w.until_ready(mw));
  mw.check();
  EXPECT_TRUE(bit(mw.mask(), 'a'));
  EXPECT_FALSE(bit(mw.mask(), 'b'));
  mw.feed('a');
  mw.feed('b');  // two tokens queued before the worker looks: one mask, after both
  ASSERT_TRUE(w.until_ready(mw));
  mw.check();
  EXPECT_TRUE(bit(mw.mask(), '7'));
  EXPECT_FALSE(bit(mw.mask(), 'a'));
  EXPECT_FALSE(mw.must_end());
  mw.feed('7');
  ASSERT_TRUE(w.until_ready(mw));
  EXPECT_TRUE(mw.must_end());
  EXPECT_GE(w.wakes, 3);
}

TEST(MaskWorker, ARefusedTokenIsKeptAsAnError) {
  Waiter w;
  MaskWorker mw(compile("root ::= \"a\""), grammar::test::byte_vocab(), {}, w.hook());
  mw.feed('z');
  ASSERT_TRUE(w.until_ready(mw));
  EXPECT_THROW(mw.check(), k3::Error);
  mw.feed('a');  // nothing more is computed after an error; it stays
  ASSERT_TRUE(w.until_ready(mw));
  EXPECT_THROW(mw.check(), k3::Error);
}

TEST(MaskWorker, TheRequestsCancellationStopsACostlyMask) {
  // Palindromes over the printable bytes with a vocabulary of two-byte pieces: a mask takes
  // tens of milliseconds and grows with each token.
  std::string alts;
  for (int c = 'a'; c <= 'z'; ++c) {
    const std::string l = std::string("\"") + static_cast<char>(c) + "\"";
    alts += (alts.empty() ? "" : " | ") + l + " r " + l + " | " + l;
  }
  std::vector<std::string> pieces;
  for (int a = 'a'; a <= 'z'; ++a)
    for (int b = 'a'; b <= 'z'; ++b)
      pieces.push_back(std::string{static_cast<char>(a), static_cast<char>(b)});
  std::atomic<bool> gone{false};
  grammar::MatcherLimits lim;
  lim.cancelled = [&] { return gone.load(); };
  lim.max_cpu_per_token = std::chrono::seconds(60);
  Waiter w;
  MaskWorker mw(compile("root ::= r\nr ::= ( " + alts + " )?\n"), grammar::test::byte_vocab(pieces), lim,
                w.hook());
  ASSERT_TRUE(w.until_ready(mw));
  for (int i = 0; i < 30; ++i) mw.feed(256 + (i * 37) % 676);  // queued; refused ones end it early
  gone = true;
  ASSERT_TRUE(w.until_ready(mw));
  try {
    mw.check();
  } catch (const grammar::Cancelled&) {
  } catch (const k3::Error&) {  // a refused token before the probe was read: also an end
  }
  // And the destructor of a busy worker returns at once.
  {
    Waiter w2;
    grammar::MatcherLimits l2;
    l2.max_cpu_per_token = std::chrono::seconds(60);
    auto busy = std::make_unique<MaskWorker>(compile("root ::= r\nr ::= ( " + alts + " )?\n"),
                                             grammar::test::byte_vocab(pieces), l2, w2.hook());
    for (int i = 0; i < 30; ++i) busy->feed(256 + (i % 26) * 27);  // "aa", "bb", …: palindromic pieces
    const auto t0 = Clock::now();
    busy.reset();
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
  }
}

}  // namespace
}  // namespace k3::server
