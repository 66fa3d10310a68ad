// `k3 serve --ram-budget` plans memory for every engine sequence the scheduler holds: with
// the prompt cache a slot has two (its sequence and its snapshot), so the planned state is
// twice that of --no-prompt-cache (a regression test: the plan once counted one per slot).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace {

double planned_mib(const std::string& row, const std::string& extra) {
  // Per test: ctest runs the tests of this file in parallel processes.
  const std::string log = testing::TempDir() + "serve_plan_" +
                          testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt";
  const std::string cmd = std::string("timeout -s INT 2 '") + K3_BINARY + "' serve -m '" + K3_TEST_DATA_DIR +
                          "/golden/small-q8_0.gguf' --port 0 --parallel 2 -c 2048 -t 1 --ram-budget 2G " +
                          extra + " 2>'" + log + "' >/dev/null";
  (void)std::system(cmd.c_str());
  std::ifstream f(log);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  const size_t at = text.find("  " + row + " ");
  if (at == std::string::npos) {
    ADD_FAILURE() << text;
    return 0;
  }
  return std::stod(text.substr(at + row.size() + 3));
}

double planned_state_mib(const std::string& extra) { return planned_mib("state", extra); }

TEST(ServePlan, PromptCacheSnapshotsAreCounted) {
  const double with = planned_state_mib(""), without = planned_state_mib("--no-prompt-cache");
  ASSERT_GT(without, 0);
  EXPECT_NEAR(with / without, 2.0, 0.02) << with << " MiB vs " << without << " MiB";
}

}  // namespace

// Constrained decoding's memory is planned: one grammar matcher per slot plus the
// server-wide cap on compiled grammars (docs/grammar.md, "Limits").
TEST(ServePlan, GrammarMemoryIsCounted) {
  EXPECT_NEAR(planned_mib("grammars", ""), 2 * 64 + 128, 0.1);
  EXPECT_NEAR(planned_mib("grammars", "--grammar-memory 16 --grammars-memory 32"), 2 * 16 + 32, 0.1);
}
