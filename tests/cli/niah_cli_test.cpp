// tests/cli/niah_cli_test: `k3 niah` end to end on the golden small model (random weights, so
// the retrieval score is not asserted, the protocol is): prompt lengths as asked, a five-digit
// key per trial, the needle really in the prompt (the key is found back by the grid text), the
// JSON shape, reproducibility for a seed, and usage errors with exit 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace {

struct NiahRun {
  int rc = -1;
  std::string out, err;
};

NiahRun k3(const std::string& args) {
  // Per test: ctest runs the tests of this file in parallel processes.
  const std::string base =
      testing::TempDir() + "niah_" + testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string out = base + "_out.txt", err = base + "_err.txt";
  const std::string cmd = std::string("'") + K3_BINARY + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

const std::string kModel = std::string("niah -m '") + K3_TEST_DATA_DIR + "/golden/small-q8_0.gguf'";

TEST(Niah, JsonCellsFollowTheProtocol) {
  NiahRun r = k3(kModel + " --lengths 256,512 --depths 0,0.5,1 --trials 2 --json -t 2 --seed 7");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 12u);
  EXPECT_EQ(j["cells_total"], 6);
  for (const auto& c : j["results"]) {
    const int64_t len = c["length"].get<int64_t>(), got = c["prompt_tokens"].get<int64_t>();
    EXPECT_LE(got, len) << c.dump();
    EXPECT_GE(got, len * 8 / 10) << c.dump();  // filled up to within one sentence of the length
    const std::string key = c["key"];
    ASSERT_EQ(key.size(), 5u);
    EXPECT_GE(std::stoi(key), 10000);
    EXPECT_EQ(c["pass"].get<bool>(), c["answer"] == key);
  }
  EXPECT_NE(r.err.find("trial 1"), std::string::npos) << r.err;
  NiahRun again = k3(kModel + " --lengths 256,512 --depths 0,0.5,1 --trials 2 --json -t 2 --seed 7");
  auto j2 = nlohmann::json::parse(again.out);
  for (size_t i = 0; i < j["results"].size(); ++i) {
    EXPECT_EQ(j["results"][i]["key"], j2["results"][i]["key"]);
    EXPECT_EQ(j["results"][i]["answer"], j2["results"][i]["answer"]);
  }
}

TEST(Niah, GridAndScoreLine) {
  NiahRun r = k3(kModel + " --lengths 512 --depths 0.15,0.85 -t 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("0.15"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/2 cells exact"), std::string::npos) << r.out;
}

TEST(Niah, BadFlagsAreUsageErrors) {
  for (const char* bad : {"--lengths 0", "--lengths 12x", "--depths 1.5", "--depths ,", "--trials 0"}) {
    NiahRun r = k3(kModel + " " + bad);
    EXPECT_EQ(r.rc, 2) << bad << ": " << r.err;
    EXPECT_FALSE(r.err.empty()) << bad;
  }
  NiahRun r = k3(kModel + " --haystack /nonexistent/file");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/file"), std::string::npos) << r.err;
}

}  // namespace
