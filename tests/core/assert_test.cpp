// K3_ASSERT: a broken invariant stops the process with file:line and the condition, in every
// build; a kept one costs nothing visible.
#include "core/assert.h"

#include <gtest/gtest.h>

namespace {

int checked_half(int x) {
  K3_ASSERT(x % 2 == 0, "only even numbers");
  return x / 2;
}

TEST(AssertDeathTest, ABrokenInvariantAbortsNamingFileLineAndCondition) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EQ(checked_half(4), 2);
  EXPECT_DEATH(checked_half(3),
               "assert_test.cpp:[0-9]+: assertion failed: x % 2 == 0 \\(only even numbers\\)");
  EXPECT_DEATH(K3_ASSERT(1 + 1 == 3), "assertion failed: 1 \\+ 1 == 3\n");
}

TEST(AssertDeathTest, DebugAssertIsOnlyInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
#ifdef NDEBUG
  K3_DEBUG_ASSERT(false, "compiled out");  // must not abort
  SUCCEED();
#else
  EXPECT_DEATH(K3_DEBUG_ASSERT(false, "kept"), "assertion failed: false \\(kept\\)");
#endif
}

}  // namespace
