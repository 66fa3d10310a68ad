// tests/cli/progress_cli_test: every long command reports progress on stderr (here not a
// terminal: plain lines with percent, rate and ETA, ending at 100 %), and --no-progress turns
// it off. The model is the golden small one; the work is kept to a second or so.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {

struct Run {
  int rc = -1;
  std::string err;
};

// Per test: ctest runs the tests of this file in parallel processes.
std::string tmp(const std::string& name) {
  return testing::TempDir() + "progress_cli_" +
         testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + name;
}

Run k3(const std::string& args) {
  const std::string err = tmp("err.txt");
  const std::string cmd = std::string("'") + K3_BINARY + "' " + args + " >/dev/null 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  std::ifstream f(err, std::ios::binary);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::string(std::istreambuf_iterator<char>(f), {})};
}

const std::string kModel = std::string("'") + K3_TEST_DATA_DIR + "/golden/small-q8_0.gguf'";

std::string text_file() {
  const std::string p = tmp("text.txt");
  std::ofstream f(p);
  for (int i = 0; i < 60; ++i) f << "The quick brown fox jumps over the lazy dog, sentence " << i << ". ";
  return p;
}

// Runs `args` twice, with and without --no-progress, and checks the label's lines.
void expect_progress(const std::string& label, const std::string& args) {
  SCOPED_TRACE(label);
  const Run with = k3(args);
  ASSERT_EQ(with.rc, 0) << with.err;
  const std::string head = label + ": [";
  EXPECT_NE(with.err.find(head), std::string::npos) << with.err;
  EXPECT_NE(with.err.find("100%"), std::string::npos) << with.err;
  EXPECT_NE(with.err.find(" ETA "), std::string::npos) << with.err;
  EXPECT_EQ(with.err.find('\r'), std::string::npos) << "no redraws when stderr is not a terminal";
  const Run without = k3(args + " --no-progress");
  ASSERT_EQ(without.rc, 0) << without.err;
  EXPECT_EQ(without.err.find(head), std::string::npos) << without.err;
}

TEST(ProgressCli, Imatrix) {
  expect_progress(
      "imatrix", "imatrix -m " + kModel + " -f '" + text_file() + "' -c 64 -t 2 -o '" + tmp("im.gguf") + "'");
}

TEST(ProgressCli, Perplexity) {
  expect_progress("perplexity", "perplexity -m " + kModel + " -f '" + text_file() + "' -c 64 -t 2");
}

TEST(ProgressCli, Niah) {
  expect_progress("niah", "niah -m " + kModel + " --lengths 256,512 --depths 0.5 -t 2");
}

TEST(ProgressCli, Synth) { expect_progress("synth", "synth --preset tiny -o '" + tmp("synth.gguf") + "'"); }

TEST(ProgressCli, QuantizeAndSplitMerge) {
  expect_progress("quantize",
                  "quantize " + kModel + " '" + tmp("q4.gguf") + "' Q4_K_M -t 2 --allow-requantize");
  const std::filesystem::path dir = tmp("shards");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  expect_progress("split", "split --split-max-tensors 40 " + kModel + " '" + (dir / "m").string() + "'");
  std::string first;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find("-00001-of-") != std::string::npos) first = e.path().string();
  ASSERT_FALSE(first.empty());
  expect_progress("merge", "merge '" + first + "' '" + tmp("merged.gguf") + "'");
}

}  // namespace
