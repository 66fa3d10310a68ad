// core/progress: the rendered bar for each unit, and the silence rules (nothing when
// disabled; nothing before 2 s on a terminal is not testable here, stderr is a pipe or file).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/progress.h"

using k3::Progress;
using k3::ProgressUnit;

TEST(Progress, RendersBytes) {
  EXPECT_EQ(Progress::render(50'000'000, 100'000'000, 5.0, 10),
            "[#####     ]  50% 50.0 MB/100.0 MB 10.0 MB/s ETA 0:05");
  EXPECT_EQ(Progress::render(100, 100, 1.0, 4), "[####] 100% 100 B/100 B 100 B/s ETA 0:00");
  EXPECT_EQ(Progress::format_duration(3725), "1:02:05");
  EXPECT_EQ(Progress::format_duration(-1), "?");
}

TEST(Progress, RendersTokensAndItems) {
  EXPECT_EQ(Progress::render(12'000, 48'000, 10.0, 4, ProgressUnit::tokens),
            "[#   ]  25% 12.0k/48.0k tok 1200.0 tok/s ETA 0:30");
  EXPECT_EQ(Progress::render(3, 15, 6.0, 5, ProgressUnit::items), "[#    ]  20% 3/15 2.0 s each ETA 0:24");
  EXPECT_EQ(Progress::render(0, 15, 0.0, 5, ProgressUnit::items), "[     ]   0% 0/15 0.0 s each ETA ?");
}

// Captures what a Progress prints on stderr (a file here, so the non-terminal rules apply).
static std::string run_on_stderr(bool enabled) {
  std::FILE* f = std::tmpfile();
  const int saved = dup(STDERR_FILENO);
  std::fflush(stderr);
  dup2(fileno(f), STDERR_FILENO);
  {
    Progress p(100, "work", enabled, ProgressUnit::items);
    for (int i = 0; i < 100; ++i) p.advance(1, "step");
    p.finish();
  }
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  std::rewind(f);
  for (int c; (c = std::fgetc(f)) != EOF;) out += static_cast<char>(c);
  std::fclose(f);
  return out;
}

TEST(Progress, LogGetsALinePerTenthAndNothingWhenDisabled) {
  const std::string log = run_on_stderr(true);
  size_t lines = 0;
  for (char c : log) lines += c == '\n';
  EXPECT_EQ(lines, 11u) << log;  // the first step, then 10 %, 20 %, … 100 %
  EXPECT_NE(log.find("work: [##############################] 100% 100/100"), std::string::npos) << log;
  EXPECT_EQ(log.find('\r'), std::string::npos) << "no carriage returns in a log";
  EXPECT_EQ(run_on_stderr(false), "");
}
